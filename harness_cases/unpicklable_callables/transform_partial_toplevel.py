"""Good: ``functools.partial`` of a module-level function."""

import functools

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-partial-toplevel",
    "family": "unpicklable-callables",
    "title": "functools.partial of a top-level function (fix)",
    "why": "The partial pickles its function by reference (module + name) and its arguments by "
    "value, so every worker can rebuild it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled"],
}


def scale(x, k):
    return x * k


def run(cell):
    loader = DataLoader(Squares(16, transform=functools.partial(scale, k=3)), batch_size=4,
                        num_workers=cell.num_workers)
    cell.check(loader, squares(16) * 3)
