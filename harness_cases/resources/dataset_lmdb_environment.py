"""A dataset that opens an LMDB environment in ``__init__`` and keeps it (as torchvision's LSUN did)."""

import lmdb
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import make_lmdb, read_lmdb

CASE = {
    "id": "dataset-lmdb-environment",
    "family": "resources",
    "title": "Dataset holds an lmdb Environment opened in __init__",
    "why": "lmdb.Environment is an extension object without pickle support ('cannot pickle "
    "'Environment' object'), so spawn and forkserver fail while sending the dataset. Fork "
    "inherits the memory map; opened read-only without a lock file, as here, the reads gave "
    "the right data, although LMDB's documentation says an environment must not be used in a "
    "child after fork.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-lmdb-lazy",
    "requires": ["module:lmdb"],
    "matches": {
        "static": [{"rule": "HL201", "call": "lmdb.*"}],
        "objects": [{"type": "Environment"}],
        "errors": [{"kind": "pickle", "text": r"cannot pickle '(lmdb\.\w+\.)?Environment' object"}],
    },
    "sources": ["https://github.com/pytorch/vision/issues/689", "https://gitlab.com/ase/ase-db-backends/-/merge_requests/6",
                "https://openldap.org/lists/openldap-technical/201608/msg00067.html"],
}


class LmdbSquares(Dataset):
    def __init__(self, path, n):
        self.n = n
        self.env = lmdb.open(path, readonly=True, lock=False, readahead=False, meminit=False)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.env.begin(write=False) as txn:
            return torch.tensor(read_lmdb(txn, i))


def run(cell):
    ds = LmdbSquares(make_lmdb(16), 16)
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
    finally:
        ds.env.close()
