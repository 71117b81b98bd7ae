"""Good: what the workers learn travels back with the batches; the main process aggregates."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Wrong, squares

CASE = {
    "id": "worker-results-returned",
    "family": "silent-wrong",
    "title": "Per-item records returned with the batch and collected in the main process (fix)",
    "why": "Batches are the one channel from workers to the main process under every start "
    "method, so the record (here, the served index) rides along with each item and the main "
    "process builds the statistics itself.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/mosaicml/streaming/issues/106",
        "https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading",
    ],
}


class ReportingSquares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"item": torch.tensor([i, i * i]), "served": i}


def run(cell):
    served = set()

    def items():
        for batch in DataLoader(ReportingSquares(16), batch_size=4, num_workers=cell.num_workers):
            served.update(batch["served"].tolist())
            yield batch["item"]

    cell.check(items(), squares(16))
    if len(served) != 16:
        raise Wrong(f"the main process collected {len(served)} of 16 served items")
