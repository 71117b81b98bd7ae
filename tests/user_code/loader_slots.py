"""A transform spec with ``__slots__`` holding a lambda, and a handler stored on the dataset.

Problems (by hand): ``dataset.spec.fn`` (a lambda in a slot); the ``logging.StreamHandler``
stored as ``dataset.handler`` holds an ``RLock`` ``lock`` and its ``stream`` (a text file),
so ``dataset.handler.lock`` and ``dataset.handler.stream``.
"""

import logging
import sys

import torch
from torch.utils.data import Dataset


class Spec:
    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn


class Logged(Dataset):
    def __init__(self):
        self.spec = Spec("double", lambda x: 2 * x)
        self.handler = logging.StreamHandler(sys.stderr)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.spec.fn(torch.tensor(i))


def make_dataset():
    return Logged()


NOT_A_LOADER = 42


def broken_factory():
    raise ValueError("data root /nonexistent does not exist")
