"""A DataLoader with workers, iterated inside a ``multiprocessing.Pool`` worker."""

import multiprocessing

import torch
from torch.utils.data import DataLoader

from harness.case import Cell, Squares, Wrong, squares

CASE = {
    "id": "loader-in-daemonic-pool",
    "family": "context-mixups",
    "title": "DataLoader workers started inside a Pool worker (daemonic)",
    "why": "Pool workers are daemonic processes, and multiprocessing refuses to let a daemonic "
    "process start children (\"daemonic processes are not allowed to have children\"), so the "
    "loader fails inside the pool under every start method. With num_workers=0 it works.",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "daemonic", "spawn": "daemonic", "forkserver": "daemonic"},
    "fix": "loader-in-child-process",
    "matches": {"errors": [{"kind": "daemonic"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/15950",
        "https://docs.python.org/3/library/multiprocessing.html#multiprocessing.Process.daemon",
    ],
}


def evaluate(num_workers):
    """Runs in the pool worker: iterate a loader; return every item and the first batch's delay (s)."""
    loader = DataLoader(Squares(16), batch_size=4, num_workers=num_workers)
    timer = Cell("pool", num_workers)
    return torch.cat(timer.iterate(loader)), timer.first_batch_s


def run(cell):
    with multiprocessing.Pool(1) as pool:
        got, cell.first_batch_s = pool.apply(evaluate, (cell.num_workers,))
    cell.batches += len(got) // 4
    if not torch.equal(got, squares(16)):
        raise Wrong(f"the pool returned {got.tolist()}")
