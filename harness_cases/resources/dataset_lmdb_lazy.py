"""Good: keep the LMDB path; each worker opens its own environment in ``worker_init_fn``."""

import lmdb
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from harness.case import squares
from harness_cases.resources._libraries import make_lmdb, read_lmdb

CASE = {
    "id": "dataset-lmdb-lazy",
    "family": "resources",
    "title": "Dataset keeps the LMDB path and opens it in each worker (fix)",
    "why": "Only the path is pickled. worker_init_fn opens the environment in each worker process "
    "(the in-process control, which starts no worker, opens it on first use), so no "
    "environment crosses a process boundary.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:lmdb"],
    "sources": ["https://github.com/pytorch/vision/issues/689", "https://gitlab.com/ase/ase-db-backends/-/merge_requests/6",
                "https://openldap.org/lists/openldap-technical/201608/msg00067.html"],
}


class LazyLmdbSquares(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.n = n
        self.env = None

    def open(self):
        self.env = lmdb.open(self.path, readonly=True, lock=False, readahead=False, meminit=False)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.env is None:
            self.open()
        with self.env.begin(write=False) as txn:
            return torch.tensor(read_lmdb(txn, i))


def open_in_worker(worker_id):
    get_worker_info().dataset.open()


def run(cell):
    ds = LazyLmdbSquares(make_lmdb(16), 16)
    try:
        loader = DataLoader(ds, batch_size=4, num_workers=cell.num_workers, worker_init_fn=open_in_worker)
        cell.check(loader, squares(16))
    finally:
        if ds.env is not None:  # opened here only by the in-process control
            ds.env.close()
