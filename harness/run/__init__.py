"""Running: every cell of the catalogue in its own isolated process, and its verdict.

* :mod:`~harness.run.pipeline`: ``harness run`` as named steps: select -> plan -> order ->
  start the template -> run -> save -> summarise.
* :mod:`~harness.run.plan`: the cells (:class:`~harness.run.plan.CellSpec`, case x start method)
  and each cell process's environment.
* :mod:`~harness.run.launch`: starting and watching one cell process, fresh or warm, and
  cleaning up after it.
* :mod:`~harness.run.records`: a cell's verdict matched against its expectation, as a record.
* :mod:`~harness.run.pool`: ``--jobs`` cells at a time.
* :mod:`~harness.run.schedule`: the order that keeps every core busy (longest first).
* :mod:`~harness.run.warm`: the harness's handle on the warm template that forks cells.
* :mod:`~harness.run.sampler`: each cell's process tree: workers seen, memory peaks, killing.
* :mod:`~harness.run.containment`: nothing a cell starts outlives the harness.
* :mod:`~harness.run.inputs`: the content hash of a cell's inputs (``harness run --changed``).

The code that runs *inside* the cell processes lives in :mod:`harness.child`; classifying
what a cell did lives in :mod:`harness.classify`; writing shards in :mod:`harness.shard`.
"""
