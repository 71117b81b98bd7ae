"""A Dataset that opens its files in __init__: a sqlite3 database and a binary record file."""
import os
import sqlite3
import struct
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset


def make_files(folder, n):
    db = os.path.join(folder, "values.db")
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, x INTEGER)")
        conn.executemany("INSERT INTO v VALUES (?, ?)", [(i, i * 3) for i in range(n)])
    records = os.path.join(folder, "records.bin")
    with open(records, "wb") as out:
        out.write(b"".join(struct.pack("<q", i * i) for i in range(n)))
    return db, records


class Pairs(Dataset):
    def __init__(self, db, records, n):
        self.n = n
        self.conn = sqlite3.connect(db, check_same_thread=False)
        self.records = open(records, "rb")  # 8 bytes per record

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        (x,) = self.conn.execute("SELECT x FROM v WHERE i = ?", (i,)).fetchone()
        self.records.seek(8 * i)
        (sq,) = struct.unpack("<q", self.records.read(8))
        return torch.tensor([x, sq])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        db, records = make_files(folder, 6)
        loader = DataLoader(Pairs(db, records, 6), batch_size=3, num_workers=2)
        print([b.tolist() for b in loader])
