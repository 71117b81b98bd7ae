"""Good: a dataset that keeps a bare ``logging.Logger`` (with a handler attached to it)."""

import logging

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-logger",
    "family": "resources",
    "title": "Dataset holds a logging.Logger (fix)",
    "why": "Since Python 3.7 a logger pickles by name (Logger.__reduce__ returns getLogger, name), "
    "so its handlers and their locks are never pickled; each worker gets the logger of that name "
    "in its own process. Not a problem under any start method.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.python.org/3/whatsnew/3.7.html#logging",
        "https://github.com/Preston-Landers/concurrent-log-handler/issues/24",
    ],
}


class LoggedSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.log = logging.getLogger("harness_cases.resources.dataset_logger")
        self.log.addHandler(logging.StreamHandler())

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.log.debug("item %d", i)
        return torch.tensor([i, i * i])


def run(cell):
    cell.check(DataLoader(LoggedSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
