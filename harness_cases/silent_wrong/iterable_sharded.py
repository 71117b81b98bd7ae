"""Good: the ``IterableDataset`` yields only its worker's share of the items."""

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from harness.case import squares

CASE = {
    "id": "iterable-sharded",
    "family": "silent-wrong",
    "title": "IterableDataset sharded with get_worker_info() (fix)",
    "why": "__iter__ asks get_worker_info() which worker it runs in and yields every "
    "num_workers-th item from its id, so each item is produced once; with batch_size=1 the "
    "loader's round-robin over workers even restores the original order.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset"],
}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, self.n, step):
            yield torch.tensor([i, i * i])


def run(cell):
    cell.check(DataLoader(Stream(16), batch_size=1, num_workers=cell.num_workers), squares(16))
