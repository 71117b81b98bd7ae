"""A dataset that dereferences NULL: the worker (or the in-process cell itself) dies by SIGSEGV."""

import ctypes

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "fixture-segfault",
    "family": "fixture",
    "title": "getitem segfaults",
    "why": "test fixture",
    "expect": {"in-process": "crash", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "worker-died", "spawn": "worker-died", "forkserver": "worker-died"},
    "sources": ["tests"],
}


class Segfaulter(Squares):
    def __getitem__(self, i):
        ctypes.string_at(0)


def run(cell):
    cell.check(DataLoader(Segfaulter(4), batch_size=2, num_workers=cell.num_workers), squares(4))
