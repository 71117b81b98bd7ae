"""One loader with several unrelated problems, and many objects that pickle fine.

Problems (by hand):
  * ``dataset.transform.transforms[1]``: a lambda inside the Compose;
  * ``dataset.index_file``: a text file opened in ``__init__``;
  * ``dataset.np_module``: the ``numpy`` module object;
  * ``dataset.cache.lock``: a ``threading.Lock`` in a small cache object;
  * ``collate_fn.__self__.sort_key``: a lambda on the object whose bound method is the collate_fn.
Not problems: the logger, the numpy array, the tensor, ``Normalize``, the bound method itself.
"""

import logging
import os
import tempfile
import threading

import numpy as np
import torch
from common import Compose, Normalize, to_tensor
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("user.loader_several")


class Cache:
    def __init__(self):
        self.items = {}
        self.lock = threading.Lock()


class Batcher:
    def __init__(self):
        self.sort_key = lambda t: t.sum()

    def collate(self, batch):
        return torch.stack(sorted(batch, key=self.sort_key))


class Records(Dataset):
    def __init__(self, index_path):
        self.transform = Compose([to_tensor, lambda x: x + 1, Normalize(0.0, 1.0)])
        self.index_file = open(index_path)
        self.np_module = np
        self.cache = Cache()
        self.log = log
        self.weights = np.linspace(0.0, 1.0, 1000)
        self.bias = torch.zeros(4)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform([i, i * i])


def make_loader():
    fd, path = tempfile.mkstemp(suffix=".idx")
    with os.fdopen(fd, "w") as f:
        f.write("0\n1\n")
    return DataLoader(Records(path), batch_size=4, num_workers=3, collate_fn=Batcher().collate)
