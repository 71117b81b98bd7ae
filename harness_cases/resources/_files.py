"""Helpers for resource cases: a small fixed-record file and sqlite database of squares."""

from __future__ import annotations

import os
import sqlite3
import struct
import tempfile

RECORD = struct.Struct("<qq")


def make_records_file(n: int) -> str:
    """Write ``n`` records ``(i, i*i)`` as little-endian int64 pairs; returns the path."""
    fd, path = tempfile.mkstemp(prefix="harness-case-", suffix=".bin")
    with os.fdopen(fd, "wb") as f:
        for i in range(n):
            f.write(RECORD.pack(i, i * i))
    return path


def read_record(f, i: int) -> tuple[int, int]:
    """Read record ``i`` from binary file ``f`` without moving a shared file offset where possible."""
    if hasattr(os, "pread"):
        data = os.pread(f.fileno(), RECORD.size, i * RECORD.size)
    else:  # Windows: no pread; only in-process reaches here, where nothing else shares f
        f.seek(i * RECORD.size)
        data = f.read(RECORD.size)
    return RECORD.unpack(data)


def make_squares_db(n: int) -> str:
    """Create an sqlite database with table ``sq(i, v)`` holding ``(i, i*i)``; returns the path."""
    fd, path = tempfile.mkstemp(prefix="harness-case-", suffix=".sqlite")
    os.close(fd)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sq (i INTEGER PRIMARY KEY, v INTEGER)")
        conn.executemany("INSERT INTO sq VALUES (?, ?)", [(i, i * i) for i in range(n)])
    conn.close()
    return path
