"""A dataset that keeps the logging handler it attached to its logger."""

import logging

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-log-handler",
    "family": "resources",
    "title": "Dataset holds a logging handler",
    "why": "A handler owns an RLock (and often a stream), which cannot be pickled (\"cannot pickle "
    "'_thread.RLock' object\"), so spawn and forkserver fail while pickling the dataset. The "
    "logger itself would have been fine: it pickles by name (see the fix). Fork copies the "
    "handler, and logging re-creates handler locks after fork.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-logger",
    "matches": {
        "static": [{"rule": "HL201", "call": "logging.*"}],
        "objects": [{"within": "logging.Handler"}]},
    "sources": [
        "https://github.com/Preston-Landers/concurrent-log-handler/issues/24",
        "https://docs.python.org/3/library/logging.html#thread-safety",
    ],
}


class LoggedSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.log = logging.getLogger("harness_cases.resources.dataset_log_handler")
        self.handler = logging.StreamHandler()
        self.log.addHandler(self.handler)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.log.debug("item %d", i)
        return torch.tensor([i, i * i])


def run(cell):
    cell.check(DataLoader(LoggedSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
