"""A lambda stored on the dataset in ``__init__``."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-lambda-attribute",
    "family": "unpicklable-callables",
    "title": "Dataset stores a lambda in __init__",
    "why": "The dataset's __dict__ holds a lambda, so pickling the dataset for spawn and forkserver "
    "workers fails.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-toplevel-def",
    "matches": {
        "static": [{"rule": "HL101", "scope": "init"}],
        "objects": [{"is": "lambda", "name": "*.__init__.<locals>.*"}],
        "errors": [{"kind": "pickle", "text": r"\.__init__\.<locals>\.<lambda>"}],
    },
    "sources": ["https://github.com/HazyResearch/cartridges/issues/20", "https://github.com/openai/CLIP/issues/151"],
}


class LambdaSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.make = lambda i: torch.tensor([i, i * i]) + 1

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.make(i)


def run(cell):
    loader = DataLoader(LambdaSquares(16), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
