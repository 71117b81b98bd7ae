"""A dataset that opens an HDF5 file with h5py in ``__init__`` and keeps the ``File``."""

import h5py
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import make_h5

CASE = {
    "id": "dataset-h5py-file",
    "family": "resources",
    "title": "Dataset holds an h5py File opened in __init__",
    "why": "h5py objects refuse to be pickled ('h5py objects cannot be pickled'), so spawn and "
    "forkserver fail while sending the dataset to the workers. Fork copies the open file into "
    "each worker; for this read-only file and these small reads it delivered the right data "
    "here, although HDF5 does not support a file handle shared across fork and the reports "
    "show wrong or failed reads with larger, concurrent reads.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-h5py-lazy",
    "requires": ["module:h5py"],
    "matches": {
        "static": [{"rule": "HL201", "call": "h5py.*"}],
        "objects": [{"type": "h5py.*"}],
        "errors": [{"kind": "pickle", "text": "h5py objects cannot be pickled"}],
    },
    "sources": ["https://github.com/pytorch/pytorch/issues/11887", "https://github.com/qiuqiao/SOFA/issues/18"],
}


class H5Squares(Dataset):
    def __init__(self, path):
        self.f = h5py.File(path, "r")
        self.n = len(self.f["sq"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(self.f["sq"][i])


def run(cell):
    ds = H5Squares(make_h5(16))
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
    finally:
        ds.f.close()
