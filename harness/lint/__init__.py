"""``harness lint``: what a spawn or forkserver worker start would refuse, found in the source
before anything runs.

Static only: it imports and runs no user code and never imports torch. The flow is one file per
job:

* :mod:`~harness.lint.sources`: the files under the paths given, ``.py`` and notebooks (a
  notebook's code cells as one module, lines mapped back to cells);
* :mod:`~harness.lint.analyze`: the :mod:`ast` analysis of one module, :class:`~harness.lint.analyze.Hit` s;
* :mod:`~harness.lint.rules`: the stable rule codes (``HL101`` ...);
* :mod:`~harness.lint.engine`: every file analysed, each hit matched to its catalogue case
  (``CASE['matches']['static']``) and the committed matrix, suppressions applied;
* :mod:`~harness.lint.output`: ``text``, ``json``, ``github`` and ``sarif``;
* :mod:`~harness.lint.command`: the ``harness lint`` command.
"""

from harness.lint.engine import Finding, LintResult, lint_paths

__all__ = ["Finding", "LintResult", "lint_paths"]
