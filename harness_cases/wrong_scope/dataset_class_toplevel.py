"""Good: the Dataset class lives at module top level; the factory only instantiates it."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "dataset-class-toplevel",
    "family": "wrong-scope",
    "title": "Dataset class at module top level (fix)",
    "why": "A top-level class is importable by every worker, so its instances pickle by reference.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors"],
}


def make_loader(n, num_workers):
    return DataLoader(Squares(n), batch_size=4, num_workers=num_workers)


def run(cell):
    cell.check(make_loader(16, cell.num_workers), squares(16))
