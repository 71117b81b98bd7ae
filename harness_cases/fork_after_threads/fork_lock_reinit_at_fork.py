"""Good: the module re-creates its lock in every forked child (``os.register_at_fork``)."""

import os
import threading

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "fork-lock-reinit-at-fork",
    "family": "fork-after-threads",
    "title": "Lock re-created after fork with os.register_at_fork (fix)",
    "why": "os.register_at_fork(after_in_child=...) gives every forked child a new, free lock, as "
    "the logging module does for its handlers, so a lock held by a parent thread at fork time no "
    "longer blocks the workers. Spawn and forkserver import the module afresh anyway. A thread "
    "still runs at fork time, so Python 3.12+ still warns.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "timeout_s": 40,
    "sources": [
        "https://docs.python.org/3/library/os.html#os.register_at_fork",
        "https://github.com/pytorch/pytorch/issues/138957",
    ],
}

REFRESH_S = 2.0
_CACHE_LOCK = threading.Lock()
_CACHE: dict[int, int] = {}


def _new_lock_in_child():
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only; Windows has no fork
    os.register_at_fork(after_in_child=_new_lock_in_child)


def refresh(holding):
    with _CACHE_LOCK:
        holding.set()
        threading.Event().wait(REFRESH_S)
        _CACHE.clear()


def lookup(i):
    with _CACHE_LOCK:
        return _CACHE.setdefault(i, i * i)


class CachedSquares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i, lookup(i)])


def run(cell):
    holding = threading.Event()
    thread = threading.Thread(target=refresh, args=(holding,), daemon=True)
    thread.start()
    holding.wait()
    cell.check(DataLoader(CachedSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
    thread.join()
