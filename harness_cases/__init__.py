"""The case catalogue: good and bad ``DataLoader`` patterns, one module per case.

Each case module assigns a literal ``CASE = {...}`` (read by the harness without importing
the module) and either defines ``run(cell)`` or, for a script case, is run as ``__main__``.
Shared datasets and the batch checker come from the case API, :mod:`harness.case`.

Nothing here is imported by the harness process itself; cells import cases in isolation.
"""
