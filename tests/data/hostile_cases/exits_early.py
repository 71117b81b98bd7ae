"""Calls sys.exit(0) before checking anything: must not count as a pass."""

import sys

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "hostile-exits-early",
    "family": "hostile",
    "title": "sys.exit(0) before cell.check",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    sys.exit(0)
    cell.check(DataLoader(Squares(4), batch_size=2, num_workers=cell.num_workers), squares(4))
