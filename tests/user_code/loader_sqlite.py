"""Labels looked up in sqlite through a small repository object made in ``__init__``.

Problem (by hand): ``dataset.db.conn`` (an ``sqlite3.Connection``); ``dataset.db.path``
(a str) pickles.
"""

import os
import sqlite3
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset


class LabelStore:
    def __init__(self, path):
        self.path = path
        self.conn = sqlite3.connect(path, check_same_thread=False)

    def label(self, i):
        (v,) = self.conn.execute("SELECT label FROM labels WHERE id = ?", (i,)).fetchone()
        return v


def make_db(n):
    fd, path = tempfile.mkstemp(suffix=".sqlite")
    os.close(fd)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE labels (id INTEGER PRIMARY KEY, label INTEGER)")
        conn.executemany("INSERT INTO labels VALUES (?, ?)", [(i, i % 3) for i in range(n)])
    conn.close()
    return path


class Labelled(Dataset):
    def __init__(self, n):
        self.n = n
        self.db = LabelStore(make_db(n))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i, self.db.label(i)])


def make_loader():
    return DataLoader(Labelled(10), batch_size=5, num_workers=2)
