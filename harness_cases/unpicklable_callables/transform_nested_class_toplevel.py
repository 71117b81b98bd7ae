"""Good: a callable transform class nested inside a module-level class."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-nested-class-toplevel",
    "family": "unpicklable-callables",
    "title": "Nested callable class inside a top-level class (fix)",
    "why": "The class's qualified name is 'Pipeline.Shift'; pickle resolves dotted qualified names "
    "(protocol 4 and later), so a nested class at module level pickles by reference.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled"],
}


class Pipeline:
    class Shift:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x + self.k


def run(cell):
    loader = DataLoader(Squares(16, transform=Pipeline.Shift(2)), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 2)
