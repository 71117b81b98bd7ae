"""A Dataset class defined inside the function that builds the loader."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-class-in-function",
    "family": "wrong-scope",
    "title": "Dataset class defined inside a factory function",
    "why": "Instances pickle by class reference; 'make_loader.<locals>.Local' cannot be imported by "
    "a worker, so spawn and forkserver fail while pickling.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-class-toplevel",
    "matches": {
        "static": [{"rule": "HL103", "reaches": "dataset"}],
        "objects": [{"is": "local-class"}],
        "errors": [
            {
                "kind": "pickle",
                "text": [
                    r"local object '[^']*\.[A-Z]\w*'",
                    r"local object <class '[^']*\.[A-Z]\w*'>",
                ],
            }
        ],
    },
    "sources": ["https://github.com/xingyizhou/CenterNet/issues/649"],
}


def make_loader(n, num_workers):
    class Local(Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return torch.tensor([i, i * i])

    return DataLoader(Local(), batch_size=4, num_workers=num_workers)


def run(cell):
    cell.check(make_loader(16, cell.num_workers), squares(16))
