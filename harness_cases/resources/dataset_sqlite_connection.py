"""A dataset that holds an sqlite3 connection made in ``__init__``."""

import sqlite3

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._files import make_squares_db

CASE = {
    "id": "dataset-sqlite-connection",
    "family": "resources",
    "title": "Dataset holds an sqlite3 connection",
    "why": "sqlite3.Connection cannot be pickled, so spawn and forkserver fail. Under fork the "
    "connection is inherited, which sqlite documents as unsafe across fork.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-sqlite-lazy",
    "matches": {
        "static": [{"rule": "HL201", "is": "sqlite"}],
        "objects": [{"type": "sqlite3.*"}],
        "errors": [{"kind": "pickle", "text": r"cannot pickle 'sqlite3\.\w+' object"}],
    },
    "sources": ["https://github.com/nicolay-r/ARElight/issues/147", "https://www.sqlite.org/howtocorrupt.html#_carrying_an_open_database_connection_across_a_fork_"],
}


class SqliteSquares(Dataset):
    def __init__(self, path, n):
        self.n = n
        self.conn = sqlite3.connect(path, check_same_thread=False)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        (v,) = self.conn.execute("SELECT v FROM sq WHERE i = ?", (i,)).fetchone()
        return torch.tensor([i, v])


def run(cell):
    ds = SqliteSquares(make_squares_db(16), 16)
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
