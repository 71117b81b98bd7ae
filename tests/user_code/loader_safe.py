"""A loader that is safe under spawn although it holds objects people suspect.

Nothing to report: a ``logging.Logger`` with a handler (pickles by name since Python 3.7), a
bound method of a picklable object as collate_fn, a numpy array, a tensor, an sqlite
connection dropped by ``__getstate__`` and reopened lazily, and a top-level ``worker_init_fn``.
"""

import logging
import os
import sqlite3
import tempfile

import numpy as np
import torch
from common import Compose, Normalize, Vocab, to_tensor
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("user.loader_safe")
log.addHandler(logging.StreamHandler())


def seed_worker(worker_id):
    np.random.seed(torch.initial_seed() % 2**32)


class Lookup(Dataset):
    def __init__(self, n):
        self.n = n
        self.log = log
        self.table = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        self.offsets = torch.arange(4)
        self.transform = Compose([to_tensor, Normalize(1.0, 2.0)])
        fd, self.db_path = tempfile.mkstemp(suffix=".sqlite")
        os.close(fd)
        self.conn = sqlite3.connect(self.db_path)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["conn"] = None  # reopened in the worker
        return state

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.conn is None:
            self.conn = sqlite3.connect(self.db_path)
        return self.transform(self.table[i]).long() + self.offsets


def make_loader():
    return DataLoader(Lookup(16), batch_size=4, num_workers=2, collate_fn=Vocab(7).collate,
                      worker_init_fn=seed_worker)
