"""A dataset that keeps a ``threading.Lock`` created in ``__init__``."""

import threading

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-lock",
    "family": "resources",
    "title": "Dataset holds a threading.Lock",
    "why": "Thread locks cannot be pickled (\"cannot pickle '_thread.lock' object\"), so spawn and "
    "forkserver fail while pickling the dataset. Fork copies the lock, unlocked here, and passes.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-lock-lazy",
    "matches": {
        "static": [{"rule": "HL201", "call": "threading.*"}],
        "objects": [{"type": ["_thread.lock", "_thread.RLock"]}],
        "errors": [
            {
                "kind": "pickle",
                "text": ["cannot pickle '_thread.lock' object", "cannot pickle '_thread.RLock' object"],
            }
        ],
    },
    "sources": ["https://github.com/pytorch/pytorch/issues/51836"],
}


class LockedSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.lock = threading.Lock()
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.lock:
            value = self.cache.setdefault(i, i * i)
        return torch.tensor([i, value])


def run(cell):
    cell.check(DataLoader(LockedSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
