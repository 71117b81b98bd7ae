"""An ``IterableDataset`` whose ``__iter__`` ignores which worker runs it."""

import torch
from torch.utils.data import DataLoader, IterableDataset

from harness.case import squares

CASE = {
    "id": "iterable-no-sharding",
    "family": "silent-wrong",
    "title": "IterableDataset without per-worker sharding",
    "why": "Every worker gets its own copy of the IterableDataset and runs the whole __iter__, so "
    "with N workers every item arrives N times. Nothing fails under any start method; the case "
    "counts the items.",
    "expect": {"in-process": "pass", "fork": "wrong", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "iterable-sharded",
    "sources": [
        "https://github.com/huggingface/datasets/issues/3423",
        "https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset",
    ],
}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield torch.tensor([i, i * i])


def run(cell):
    cell.check(DataLoader(Stream(16), batch_size=1, num_workers=cell.num_workers), squares(16))
