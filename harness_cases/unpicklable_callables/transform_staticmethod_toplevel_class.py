"""Good: a staticmethod of a module-level class, used as transform."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-staticmethod-toplevel-class",
    "family": "unpicklable-callables",
    "title": "staticmethod of a top-level class (fix)",
    "why": "The function's qualified name is 'Augment.shift'; pickle (protocol 4 and later) looks "
    "dotted qualified names up attribute by attribute, so every worker finds it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled"],
}


class Augment:
    @staticmethod
    def shift(x):
        return x + 1


def run(cell):
    loader = DataLoader(Squares(16, transform=Augment.shift), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
