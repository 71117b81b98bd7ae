"""A shared counter made with the fork context, handed to a loader that spawns.

Problem (by hand): ``dataset.seen._lock``. A ``multiprocessing`` ``Value`` pickles as
``(synchronized, (self._obj, self._lock))`` (CPython ``Lib/multiprocessing/sharedctypes.py``),
and its lock's ``SemLock.__getstate__`` refuses a fork-context lock in a spawn start
(CPython 3.11.5+, ``Lib/multiprocessing/synchronize.py``). The ctypes object pickles.
"""

import multiprocessing

import torch
from torch.utils.data import Dataset


class Counted(Dataset):
    def __init__(self):
        self.seen = multiprocessing.get_context("fork").Value("i", 0)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with self.seen.get_lock():
            self.seen.value += 1
        return torch.tensor(i)


def make_dataset():
    return Counted()
