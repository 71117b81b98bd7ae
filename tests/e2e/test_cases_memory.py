"""The memory cases make the cost of each start method visible in the recorded fields.

A million small ``str`` objects (``memory-object-list``) against the same names in one uint8
tensor (``memory-tensor-storage``), each walked in full by every worker:

* fork: reading a Python object writes its reference count, so each worker copies the pages
  it walks and its private memory (USS) grows by about the objects' size (a million 68-byte
  ``str`` objects take about 76 MiB of heap, plus 8 MiB of list); the tensor's pages stay
  shared.
* spawn: the list is pickled into every worker, which holds a private copy; the tensor's
  storage goes to shared memory once and every worker maps it.

The bound (40 MiB) is about half the objects' size, well above the few MiB of noise seen
between runs of the same cell.
"""

from __future__ import annotations

import sys

import pytest

from harness.catalogue.discover import discover, select
from harness.run.plan import plan
from harness.run.records import run_one

pytestmark = [
    pytest.mark.catalogue,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="USS is measured through /proc here"),
]

MARGIN = 40 * 2**20


@pytest.fixture(scope="module")
def records() -> dict[tuple[str, str], dict]:
    specs = plan(select(discover().cases, ["memory-object-list", "memory-tensor-storage"]), ["fork", "spawn"], 60)
    return {spec.key: run_one(spec, "pytest") for spec in specs}


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_object_list_costs_each_worker_its_own_copy(records, method):
    objects, tensor = records[("memory-object-list", method)], records[("memory-tensor-storage", method)]
    for rec in (objects, tensor):
        assert rec["outcome"] == "pass", rec
        assert rec["worker_peak_uss_bytes"] and rec["worker_peak_rss_bytes"], rec
    assert objects["worker_peak_uss_bytes"] - tensor["worker_peak_uss_bytes"] >= MARGIN, (
        f"{method}: worker USS {objects['worker_peak_uss_bytes'] / 2**20:.0f} MiB (objects) vs "
        f"{tensor['worker_peak_uss_bytes'] / 2**20:.0f} MiB (tensor)")
