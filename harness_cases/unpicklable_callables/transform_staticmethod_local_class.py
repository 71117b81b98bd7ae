"""A staticmethod of a class defined inside the training function, used as transform."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-staticmethod-local-class",
    "family": "unpicklable-callables",
    "title": "staticmethod of a local class as transform",
    "why": "Accessed through its class, a staticmethod is a plain function whose qualified name is "
    "'run.<locals>.Augment.shift'; pickle cannot look that up, so spawn and forkserver fail while "
    "pickling the dataset. Fork never pickles.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-staticmethod-toplevel-class",
    "matches": {
        "static": [{"rule": "HL102", "name": "*.<locals>.[A-Z]*.*"}],
        "objects": [{"is": "local-function", "name": "*.<locals>.[A-Z]*.*"}],
        "errors": [
            {
                "kind": "pickle",
                "text": [
                    r"local object '[^']*<locals>\.[A-Z]\w*\.[a-z_]\w*'",
                    r"local object <function [^ ]*<locals>\.[A-Z]\w*\.[a-z_]\w* at ",
                ],
            }
        ],
    },
    "sources": [
        "https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors",
        "https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled",
    ],
}


def run(cell):
    class Augment:
        @staticmethod
        def shift(x):
            return x + 1

    loader = DataLoader(Squares(16, transform=Augment.shift), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
