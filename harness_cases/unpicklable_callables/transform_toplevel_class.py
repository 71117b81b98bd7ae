"""Good: the transform is an instance of a top-level callable class carrying its parameters."""

from torch.utils.data import DataLoader

from harness.case import AddOne, Squares, squares

CASE = {
    "id": "transform-toplevel-class",
    "family": "unpicklable-callables",
    "title": "Transform is a top-level callable class (fix)",
    "why": "The instance pickles as its importable class plus its __dict__, so parameters that a "
    "closure would capture travel to every worker.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3/library/pickle.html#pickling-class-instances"],
}


def run(cell):
    loader = DataLoader(Squares(16, transform=AddOne(1)), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
