"""Inspection: the tools that look at one case or at a user's own loader, script or traceback.

* ``harness diagnose`` (:mod:`.diagnose`, the command in :mod:`.diagnose_command`): which
  objects in a user's ``DataLoader`` a ``spawn`` or ``forkserver`` worker start cannot send,
  load or send back; the target is loaded by :mod:`.target`, what a worker start pickles is
  modelled by :mod:`.worker_start`, the objects are walked by :mod:`.walker` (the pickle-path
  walker) and placed in the source by :mod:`.sites`; :mod:`.output` writes the text and the
  GitHub workflow commands;
* ``harness reproduce`` and ``harness classify`` (:mod:`.reproduce`): a user's script run as
  ``__main__`` under a forced start method, or a pasted traceback, classified as the matrix
  classifies a cell;
* ``harness explain`` (:mod:`.explain`) and ``harness list`` (:mod:`.listing`): one case of the
  catalogue, or all of them;
* :mod:`.hints`: what each catalogue case stands for (its ``CASE['matches']``), read from the
  catalogue and served to ``diagnose``, ``reproduce`` and the pytest plugin, so that no module
  of the harness names a case.

The group is internal; its public faces are the ``harness`` commands and
``harness.assert_spawn_safe``.
"""
