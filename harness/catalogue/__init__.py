"""Discovery: finding the case modules and reading their ``CASE`` declarations.

* :mod:`~harness.catalogue.discover`: walk a catalogue directory (the built-in ``harness_cases/``, or a
  project's own), import each case module, validate its ``CASE`` dict against
  ``harness/schemas/case.schema.json``, and select cases by id, glob or family.
* :mod:`~harness.catalogue.config`: a project's ``[tool.harness]`` table in ``pyproject.toml``
  (which catalogue directories it declares).

Flow of the whole harness: discover (here) -> run (:mod:`harness.run`) -> shard
(:mod:`harness.shard`) -> merge and render (:mod:`harness.report`).
"""
