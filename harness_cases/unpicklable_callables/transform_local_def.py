"""A transform defined as a local ``def`` inside the training function."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-local-def",
    "family": "unpicklable-callables",
    "title": "Transform defined with def inside the training function",
    "why": "Pickle stores functions by qualified name; 'run.<locals>.add_one' cannot be looked up, "
    "so spawn and forkserver fail while pickling the dataset. Fork copies memory and never pickles.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-toplevel-def",
    "matches": {
        "static": [{"rule": "HL102", "is": "local-function"}],
        "objects": [{"is": "local-function"}],
        "errors": [
            {
                "kind": "pickle",
                "text": [
                    r"local object '[^']*\.[a-z_]\w*'",
                    r"local object <function [^ ]*\.[a-z_]\w* at ",
                ],
            }
        ],
    },
    "sources": [
        "https://github.com/pytorch/pytorch/issues/167429",
        "https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors",
    ],
}


def run(cell):
    def add_one(x):
        return x + 1

    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
