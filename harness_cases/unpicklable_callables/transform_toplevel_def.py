"""Good: the transform is a function defined at module top level."""

from torch.utils.data import DataLoader

from harness.case import Squares, add_one, squares

CASE = {
    "id": "transform-toplevel-def",
    "family": "unpicklable-callables",
    "title": "Transform is a top-level function (fix)",
    "why": "A module-level def pickles by reference (module + name), and every worker imports it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors"],
}


def run(cell):
    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
