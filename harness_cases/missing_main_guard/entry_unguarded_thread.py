"""Script case: a background thread started above the main guard, and a lock it holds."""

CASE = {
    "id": "entry-unguarded-thread",
    "family": "missing-main-guard",
    "title": "Thread started outside the main guard holds a lock workers need",
    "script": True,
    "why": "A module-level cache refresher thread (started when the script is imported, outside "
    "the main guard) holds a lock that the dataset also takes. Fork copies the lock while the "
    "thread holds it, but not the thread, so every worker blocks forever. Up to Python 3.13 "
    "spawn and forkserver workers import the script themselves and start their own thread, so "
    "the lock is fresh and they pass. From Python 3.14 the forkserver preloads __main__ "
    "(gh-126631 made its long-broken preload work), so the thread starts in the forkserver, and "
    "its workers are forked from a process whose lock is held: forkserver hangs as fork does, "
    "with a DeprecationWarning that the forkserver is multi-threaded. Start threads inside the "
    "main guard, or in worker_init_fn.",
    "expect": {"in-process": "pass", "fork": "hang", "spawn": "pass", "forkserver": "pass"},
    "expect_when": [{"python": ">=3.14", "expect": {"forkserver": "hang"}}],
    "fix": "entry-main-guard",
    "timeout_s": 30,
    "sources": [
        "https://github.com/python/cpython/issues/126631",
        "https://docs.python.org/3.14/library/multiprocessing.html#multiprocessing.set_forkserver_preload",
        "https://docs.python.org/3/library/os.html#os.fork",
    ],
}

import threading  # noqa: E402
import time  # noqa: E402

from torch.utils.data import DataLoader, Dataset  # noqa: E402

from harness.case import current_cell, squares  # noqa: E402

CACHE_LOCK = threading.Lock()


def refresh_cache_forever():
    """Hold the lock most of the time, as a refresher rebuilding a shared cache does."""
    while True:
        with CACHE_LOCK:
            time.sleep(0.05)
        time.sleep(0.001)


threading.Thread(target=refresh_cache_forever, daemon=True, name="cache-refresher").start()


class CachedSquares(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        with CACHE_LOCK:
            return squares(16)[i]


if __name__ == "__main__":
    cell = current_cell()
    cell.check(DataLoader(CachedSquares(), batch_size=4, num_workers=cell.num_workers), squares(16))
