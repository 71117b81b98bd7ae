"""Checks a loader over an empty dataset: no batch arrives, so it is not a pass."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "hostile-empty-loader",
    "family": "hostile",
    "title": "checks an empty loader",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    cell.check(DataLoader(Squares(0), batch_size=2, num_workers=cell.num_workers), squares(0))
