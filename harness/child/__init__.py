"""Code that runs in another process than the harness: the cell, the warm template, the start-up
hook in every cell interpreter, and the containment watchdog.

The rule of this package: a module here imports nothing of ``harness`` outside
:mod:`harness.child`, except the public case API :mod:`harness.case` (which cases import
themselves). These processes must start fast, must not drag the harness's dependencies into
a case's interpreter, and must keep working while the harness is being killed.
``tests/unit/test_child_imports.py`` enforces the rule.

* :mod:`~harness.child.cell`: ``python -m harness.child.cell REQUEST RESULT``: one case under one
  start method; writes what happened as JSON.
* :mod:`~harness.child.request`: :class:`~harness.child.request.CellRequest`, what the harness
  asks of a cell, and its JSON form.
* :mod:`~harness.child.status`: the statuses a cell reports and their policy, shared with the
  classifier (imports nothing).
* :mod:`~harness.child.warm_server`: the warm template: imports torch once, forks cells.
* :mod:`~harness.child.warm_protocol`: the template's messages, one frozen class each.
* :mod:`~harness.child.jsonfields`: reading the fields of those JSON messages, with one-line errors.
* ``cellsite/``: the start-up hook (``sitecustomize``) every interpreter of a cell imports,
  and the peak reporter it installs.
* :mod:`~harness.child.watchdog`: kills what a killed harness left behind.
* :mod:`~harness.child.fileio`: an atomic file replace that works on Windows too.
"""
