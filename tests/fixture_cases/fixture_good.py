"""A good case: top-level dataset, passes everywhere."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "fixture-good",
    "family": "fixture",
    "title": "plain squares",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    cell.check(DataLoader(Squares(8), batch_size=2, num_workers=cell.num_workers), squares(8))
