"""A dataset that keeps the ``NpzFile`` returned by ``np.load("x.npz")`` in ``__init__``."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import NPZ_PASSES, make_npz

CASE = {
    "id": "dataset-npz-file",
    "family": "resources",
    "title": "Dataset holds the NpzFile of np.load('x.npz')",
    "why": "np.load of an .npz archive returns a lazy NpzFile that keeps the archive open (a "
    "zipfile.ZipFile over an open file), so spawn and forkserver fail pickling the file ('cannot "
    "pickle '_io.BufferedReader' object'). Fork shares one open file description, and with it "
    "one offset: every npz['sq'] reads the member again, the workers' seeks move the offset in "
    "between, and zipfile's CRC-32 check (or numpy's header check) turns the corrupt bytes into "
    "an error in the worker. The race needs the workers' reads to overlap: each item here reads "
    "the array several times; with one short read per item fork passed here.",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "worker-exception", "spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-npz-lazy",
    "matches": {
        "static": [{"rule": "HL201", "call": "numpy.load"}],
        "objects": [{"within": "numpy.lib.npyio.NpzFile"}]},
    "sources": [
        "https://github.com/numpy/numpy/issues/18124",
        "https://github.com/zju3dv/LoFTR/issues/90",
        "https://github.com/vocalpy/vak/issues/402",
    ],
}


class NpzSquares(Dataset):
    def __init__(self, path, n):
        self.n = n
        self.npz = np.load(path)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        for _ in range(NPZ_PASSES):  # each npz["sq"] reads the whole member from the archive again
            value = int(self.npz["sq"][i])
        return torch.tensor([i, value])


def run(cell):
    ds = NpzSquares(make_npz(), 16)
    try:
        cell.check(DataLoader(ds, batch_size=2, num_workers=cell.num_workers), squares(16))
    finally:
        ds.npz.close()
