"""A good, quick case (concurrent-run tests)."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "hostile-quick-a",
    "family": "hostile",
    "title": "good and quick",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    cell.check(DataLoader(Squares(4), batch_size=2, num_workers=cell.num_workers), squares(4))
