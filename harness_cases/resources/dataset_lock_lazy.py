"""Good: the lock is left out of the pickled state and created again in each process."""

import threading

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-lock-lazy",
    "family": "resources",
    "title": "Lock dropped by __getstate__ and recreated per process (fix)",
    "why": "__getstate__ leaves the lock out and __setstate__ makes a new one, so the dataset "
    "pickles under spawn and forkserver and each worker has its own lock.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/51836",
        "https://docs.python.org/3/library/pickle.html#handling-stateful-objects",
    ],
}


class LockedSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.lock = threading.Lock()
        self.cache = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.lock:
            value = self.cache.setdefault(i, i * i)
        return torch.tensor([i, value])


def run(cell):
    cell.check(DataLoader(LockedSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
