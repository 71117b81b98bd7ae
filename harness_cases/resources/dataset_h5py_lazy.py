"""Good: keep the HDF5 path; each worker opens its own h5py ``File`` on first use."""

import h5py
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import make_h5

CASE = {
    "id": "dataset-h5py-lazy",
    "family": "resources",
    "title": "Dataset keeps the HDF5 path and opens it lazily in the worker (fix)",
    "why": "Only the path and the length are pickled; each worker opens the file in its own "
    "process on first use, as h5py and HDF5 expect.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:h5py"],
    "sources": ["https://github.com/pytorch/pytorch/issues/11887", "https://github.com/qiuqiao/SOFA/issues/18"],
}


class LazyH5Squares(Dataset):
    def __init__(self, path):
        self.path = path
        with h5py.File(path, "r") as f:  # opened and closed: only the length is kept
            self.n = len(f["sq"])
        self.f = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.f is None:
            self.f = h5py.File(self.path, "r")
        return torch.from_numpy(self.f["sq"][i])


def run(cell):
    ds = LazyH5Squares(make_h5(16))
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
    finally:
        if ds.f is not None:  # opened here only by the in-process control
            ds.f.close()
