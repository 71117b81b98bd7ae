"""Time-series windows sampled as a tuple subclass, the shape of a geospatial sampler's index.

Problem (by hand): ``indices[0]``, the first ``Window`` the batch sampler hands a worker.
``Window(start, stop)`` pickles, but pickle rebuilds a tuple subclass as
``cls.__new__(cls, tuple(self))`` (CPython ``copyreg.__reduce_ex__``/``__newobj__``), and
``Window.__new__`` needs two arguments, so the worker cannot unpickle it. The dataset, the
default collate_fn and the absent worker_init_fn are fine.
"""

import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class Window(tuple):
    def __new__(cls, start, stop):
        return super().__new__(cls, (start, stop))


class WindowSampler(Sampler):
    def __init__(self, n, size):
        self.n = n
        self.size = size

    def __len__(self):
        return self.n - self.size

    def __iter__(self):
        return (Window(i, i + self.size) for i in range(self.n - self.size))


class Series(Dataset):
    def __init__(self, n):
        self.values = torch.arange(n, dtype=torch.float32)

    def __len__(self):
        return len(self.values)

    def __getitem__(self, window):
        start, stop = window
        return self.values[start:stop]


def make_loader():
    return DataLoader(Series(64), sampler=WindowSampler(64, 8), batch_size=4, num_workers=2)
