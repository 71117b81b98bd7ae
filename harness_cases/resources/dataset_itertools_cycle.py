"""A dataset that rotates through its augmentations with ``itertools.cycle``."""

import itertools

from torch.utils.data import DataLoader, Dataset

from harness.case import squares


def identity(x):
    return x


class RotatingAugment(Dataset):
    def __init__(self, n, augmentations):
        self.n = n
        self.augmentations = itertools.cycle(augmentations)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return next(self.augmentations)(squares(self.n)[i])


CASE = {
    "id": "dataset-itertools-cycle",
    "family": "resources",
    "title": "Dataset holds an itertools iterator (itertools.cycle)",
    "why": "itertools objects pickled through __reduce__ up to Python 3.13; 3.12 deprecated it "
    "(a DeprecationWarning at every pickling) and 3.14 removed it, so the same dataset that "
    "spawn and forkserver workers received on 3.13 now fails to pickle in the parent "
    "(\"cannot pickle 'itertools.cycle' object\"). Fork copies the iterator and never pickles "
    "it. Keep a list and index it instead.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "expect_when": [
        {"python": ">=3.14", "expect": {"spawn": "error", "forkserver": "error"},
         "expect_kind": {"spawn": "pickle", "forkserver": "pickle"}},
    ],
    "fix": "dataset-augment-list",
    "matches": {
        "static": [{"rule": "HL202"}],
        "objects": [{"type": "itertools.*"}],
        "errors": [{"kind": "pickle", "text": r"cannot pickle 'itertools\.\w+' object"}],
    },
    "sources": [
        "https://docs.python.org/3.14/whatsnew/3.14.html#itertools",
        "https://github.com/python/cpython/issues/101588",
    ],
}


def run(cell):
    ds = RotatingAugment(16, [identity])
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
