"""Classification: the vocabulary of outcomes and kinds, and the rules that turn what a cell
process did (exit status, result file, stderr) into a verdict.

* :mod:`~harness.classify.outcomes`: outcomes (``pass``, ``error``, ``hang``, ``crash``,
  ``wrong``, ...), kinds (``pickle``, ``main-attr``, ...), start methods, and how an outcome
  with its kind is written.
* :mod:`~harness.classify.classifier`: observation -> verdict, with the root cause line.
"""
