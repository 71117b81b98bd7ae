"""A background thread holds a module-level lock at the moment the workers fork."""

import threading

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "fork-lock-held-by-thread",
    "family": "fork-after-threads",
    "title": "Workers forked while a thread holds a lock they need",
    "why": "fork copies only the calling thread. A cache-refresh thread holds the cache's lock "
    "when the workers fork, so each forked worker gets a copy of a lock that is locked forever "
    "(no thread in the child will release it) and blocks on its first item: the loader hangs "
    "until the watchdog kills it. Spawn and forkserver workers import the module afresh and get "
    "a new, free lock. In-process, the main thread simply waits for the refresh to end. The same "
    "mechanism is behind OpenMP and tokenizer deadlocks after fork; Python 3.12+ warns about "
    "forking a multi-threaded process.",
    "expect": {"in-process": "pass", "fork": "hang", "spawn": "pass", "forkserver": "pass"},
    "fix": "fork-lock-reinit-at-fork",
    "timeout_s": 40,
    "sources": [
        "https://github.com/pytorch/pytorch/issues/138957",
        "https://github.com/pytorch/pytorch/issues/45198",
        "https://docs.python.org/3/library/os.html#os.fork",
    ],
}

REFRESH_S = 2.0
_CACHE_LOCK = threading.Lock()
_CACHE: dict[int, int] = {}


def refresh(holding):
    """A slow cache refresh (standing for I/O) that holds the lock throughout."""
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
