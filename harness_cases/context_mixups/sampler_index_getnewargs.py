"""Good: the index type tells pickle how to rebuild it (``__getnewargs__``)."""

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from harness.case import squares

CASE = {
    "id": "sampler-index-getnewargs",
    "family": "context-mixups",
    "title": "Index tuple subclass with __getnewargs__ (fix)",
    "why": "__getnewargs__ returns (start, stop), the arguments __new__ expects, so the index "
    "unpickles in every worker.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.python.org/3/library/pickle.html#object.__getnewargs__",
        "https://github.com/torchgeo/torchgeo/issues/89",
    ],
}


class Window(tuple):
    """An index window ``(start, stop)`` that pickles with its constructor arguments."""

    def __new__(cls, start, stop):
        return super().__new__(cls, (start, stop))

    def __getnewargs__(self):
        return (self[0], self[1])


class WindowSampler(Sampler):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        return (Window(i, i + 1) for i in range(self.n))


class WindowSquares(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, window):
        start, _ = window
        return torch.tensor([start, start * start])


def run(cell):
    loader = DataLoader(WindowSquares(), sampler=WindowSampler(16), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16))
