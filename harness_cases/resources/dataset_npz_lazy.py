"""Good: keep the ``.npz`` path; each worker calls ``np.load`` itself on first use."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import NPZ_PASSES, make_npz

CASE = {
    "id": "dataset-npz-lazy",
    "family": "resources",
    "title": "Dataset keeps the .npz path and loads it lazily in the worker (fix)",
    "why": "Only the path is pickled; each worker opens the archive in its own process, with its "
    "own file offset, so the same repeated reads that fail under fork in dataset-npz-file are safe.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://github.com/numpy/numpy/issues/18124"],
}


class LazyNpzSquares(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.n = n
        self.npz = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.npz is None:
            self.npz = np.load(self.path)
        for _ in range(NPZ_PASSES):  # the same reads as dataset-npz-file, from this worker's own file
            value = int(self.npz["sq"][i])
        return torch.tensor([i, value])


def run(cell):
    ds = LazyNpzSquares(make_npz(), 16)
    try:
        cell.check(DataLoader(ds, batch_size=2, num_workers=cell.num_workers), squares(16))
    finally:
        if ds.npz is not None:  # opened here only by the in-process control
            ds.npz.close()
