"""A background thread is alive, holding nothing, when the workers fork."""

import threading

from torch.utils.data import DataLoader

from harness.case import Squares, add_one, squares

CASE = {
    "id": "fork-thread-running",
    "family": "fork-after-threads",
    "title": "Workers forked while a background thread runs (hazard)",
    "why": "Nothing here is locked at fork time, so every method passes. It is still the hazard of "
    "the family: whether a fork child deadlocks depends on what the other threads hold at that "
    "instant. Python 3.12+ reports it on every such fork with \"DeprecationWarning: This process "
    "... is multi-threaded, use of fork() may lead to deadlocks in the child.\", which the cell "
    "records with the pass; Python 3.11 and older fork silently.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/138957",
        "https://docs.python.org/3/whatsnew/3.12.html#deprecated",
        "https://docs.python.org/3/library/os.html#os.fork",
    ],
}


def heartbeat(stop):
    while not stop.wait(0.05):
        pass


def run(cell):
    stop = threading.Event()
    thread = threading.Thread(target=heartbeat, args=(stop,), daemon=True)
    thread.start()
    try:
        loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
        cell.check(loader, squares(16) + 1)
    finally:
        stop.set()
        thread.join()
