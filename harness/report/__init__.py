"""The report side: from shards to the files a reader opens.

::

    shards (*.json, one per runner)
      -> merge.py       read and validate each shard, drop bad ones, combine the rest
      -> platforms.py   per platform, what its default start method gives: each cell
                        observed, emulated or predicted (the ``compatibility`` view)
      =  the matrix     (``matrix.json``, ``harness/schemas/matrix.schema.json``)
      -> views.py       view models shared by the renderers: rows, cells, footnotes, costs
      -> markdown.py    ``COMPATIBILITY.md``
         page.py        ``matrix.html`` (from the template in ``html/``)
         summary.py     the compact table for a CI job summary (``$GITHUB_STEP_SUMMARY``)
         junit.py       ``junit.xml``
         heatmap.py     ``matrix.png`` (needs matplotlib, the ``plot`` extra)

``pipeline.py`` is the ``harness report`` command: the steps above in order, with the exit code.
"""

from typing import Any

#: A JSON object of a shard or of the matrix: the matrix itself, a runner, a result record, a
#: cell of a view. ``harness/schemas/`` says which keys each one has.
JSONObject = dict[str, Any]
