"""A callable transform class nested inside a class that is itself local to a function."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-nested-class-local",
    "family": "unpicklable-callables",
    "title": "Nested callable class inside a local class as transform",
    "why": "Instances pickle by class reference; the class's qualified name is "
    "'run.<locals>.Pipeline.Shift', which no worker can import, so spawn and forkserver fail while "
    "pickling. Nesting is not the problem (see the fix): the enclosing function scope is.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-nested-class-toplevel",
    "matches": {
        "static": [{"rule": "HL103", "name": "*.<locals>.[A-Z]*.*"}],
        "objects": [{"is": "local-class", "name": "*.<locals>.[A-Z]*.*"}],
        "errors": [
            {
                "kind": "pickle",
                "text": [
                    r"local object '[^']*<locals>\.[A-Z]\w*\.[A-Z]\w*'",
                    r"local object <class '[^']*<locals>\.[A-Z]\w*\.[A-Z]\w*'>",
                ],
            }
        ],
    },
    "sources": [
        "https://github.com/xingyizhou/CenterNet/issues/649",
        "https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled",
    ],
}


def run(cell):
    class Pipeline:
        class Shift:
            def __init__(self, k):
                self.k = k

            def __call__(self, x):
                return x + self.k

    loader = DataLoader(Squares(16, transform=Pipeline.Shift(2)), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 2)
