"""Builds a loader and never checks it: must not count as a pass."""

from torch.utils.data import DataLoader

from harness.case import Squares

CASE = {
    "id": "hostile-unchecked",
    "family": "hostile",
    "title": "never calls cell.check",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    DataLoader(Squares(4), batch_size=2, num_workers=cell.num_workers)
