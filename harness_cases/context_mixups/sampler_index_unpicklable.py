"""A sampler whose index objects pickle but cannot be unpickled."""

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from harness.case import squares

CASE = {
    "id": "sampler-index-unpicklable",
    "family": "context-mixups",
    "title": "Sampler yields a tuple subclass that does not unpickle",
    "why": "Indices always cross a queue to the workers, pickled, whatever the start method. The "
    "index type is a tuple subclass whose __new__ takes two arguments; pickle rebuilds tuple "
    "subclasses with cls.__new__(cls, tuple(self)), so unpickling raises \"Window.__new__() "
    "missing 1 required positional argument\" in the worker, which dies; the main process sees "
    "'DataLoader worker ... exited unexpectedly'. It fails under fork too.",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "worker-died", "spawn": "worker-died", "forkserver": "worker-died"},
    "fix": "sampler-index-getnewargs",
    "matches": {"objects": [{"path": "indices*"}]},
    "sources": [
        "https://github.com/torchgeo/torchgeo/issues/89",
        "https://docs.python.org/3/library/pickle.html#object.__getnewargs__",
    ],
}


class Window(tuple):
    """An index window ``(start, stop)``."""

    def __new__(cls, start, stop):
        return super().__new__(cls, (start, stop))


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
