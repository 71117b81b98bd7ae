"""Good: keep the database path; connect lazily in each worker."""

import sqlite3

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._files import make_squares_db

CASE = {
    "id": "dataset-sqlite-lazy",
    "family": "resources",
    "title": "Dataset connects to sqlite lazily in the worker (fix)",
    "why": "Only the path is pickled; each worker opens its own connection on first use.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://github.com/nicolay-r/ARElight/issues/147"],
}


class LazySqliteSquares(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.n = n
        self.conn = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.conn is None:
            self.conn = sqlite3.connect(self.path)
        (v,) = self.conn.execute("SELECT v FROM sq WHERE i = ?", (i,)).fetchone()
        return torch.tensor([i, v])


def run(cell):
    ds = LazySqliteSquares(make_squares_db(16), 16)
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
