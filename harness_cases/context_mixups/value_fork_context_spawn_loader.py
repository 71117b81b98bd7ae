"""A ``Value`` from the fork context, shared with a loader told to use spawn."""

import multiprocessing

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Skip, Wrong, squares

CASE = {
    "id": "value-fork-context-spawn-loader",
    "family": "context-mixups",
    "title": "fork-context Value given to a loader with multiprocessing_context='spawn'",
    "why": "The dataset counts served items in a multiprocessing.Value made by the fork context, "
    "while the loader asks for spawn workers explicitly. Since Python 3.11.5 sending a fork-made "
    "lock to a spawn child raises \"A SemLock created in a fork context is being shared with a "
    "process in a spawn context\". The explicit context wins over the platform's start method, so "
    "every worker method fails alike. Python 3.10 has no such check: the spawn worker uses the "
    "fork-made lock and dies with a segmentation fault (observed on 3.10.13). Skipped where fork "
    "does not exist (Windows).",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "context-mix", "spawn": "context-mix", "forkserver": "context-mix"},
    "expect_when": [
        {"python": "<=3.10", "expect": {"fork": "error", "spawn": "error", "forkserver": "error"},
         "expect_kind": {"fork": "worker-died", "spawn": "worker-died", "forkserver": "worker-died"}},
    ],
    "fix": "value-loader-context",
    "matches": {"objects": [{"is": "fork-context-semlock"}], "errors": [{"kind": "context-mix"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/105514",
        "https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
    ],
}


class CountingSquares(Dataset):
    def __init__(self, n, counter):
        self.n = n
        self.counter = counter

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        return torch.tensor([i, i * i])


def run(cell):
    if "fork" not in multiprocessing.get_all_start_methods():
        raise Skip("this platform has no fork context")
    counter = multiprocessing.get_context("fork").Value("i", 0)
    extra = {"multiprocessing_context": "spawn"} if cell.num_workers else {}
    loader = DataLoader(CountingSquares(16, counter), batch_size=4, num_workers=cell.num_workers, **extra)
    cell.check(loader, squares(16))
    if counter.value != 16:
        raise Wrong(f"the shared counter says {counter.value} items were served, expected 16")
