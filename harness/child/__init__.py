"""Code that runs in another process than the harness: the cell, the warm template, the start-up
hook in every cell interpreter, and the containment watchdog.

The rule of this package: a module here imports nothing of ``harness`` outside
:mod:`harness.child`, except the public case API :mod:`harness.case` (which cases import
themselves). These processes must start fast, must not drag the harness's dependencies into
a case's interpreter, and must keep working while the harness is being killed.
``tests/test_child_imports.py`` enforces the rule.

* :mod:`~harness.child.cell`: ``python -m harness.child.cell SPEC RESULT``: one case under one
  start method; writes what happened as JSON.
* :mod:`~harness.child.warm_server`: the warm template: imports torch once, forks cells.
* ``cellsite/``: the start-up hook (``sitecustomize``) every interpreter of a cell imports,
  and the peak reporter it installs.
* :mod:`~harness.child.watchdog`: kills what a killed harness left behind.
* :mod:`~harness.child.fileio`: an atomic file replace that works on Windows too.
"""
