"""The dataset records what it served in an attribute; the main process reads it afterwards."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Wrong, squares

CASE = {
    "id": "worker-mutation-invisible",
    "family": "silent-wrong",
    "title": "State a worker changes on the dataset never reaches the main process",
    "why": "Each worker mutates its own copy of the dataset (copied by fork, unpickled under spawn "
    "and forkserver); the main process's copy never changes, so statistics, caches or 'seen' "
    "sets built in __getitem__ are silently empty there. The case checks the record after the "
    "epoch.",
    "expect": {"in-process": "pass", "fork": "wrong", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "worker-results-returned",
    "sources": [
        "https://github.com/mosaicml/streaming/issues/106",
        "https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading",
    ],
}


class RecordingSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.served = set()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.served.add(i)
        return torch.tensor([i, i * i])


def run(cell):
    ds = RecordingSquares(16)
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
    if len(ds.served) != 16:
        raise Wrong(f"the main process's dataset recorded {len(ds.served)} of 16 served items")
