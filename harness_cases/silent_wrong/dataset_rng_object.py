"""A dataset that keeps a seeded ``numpy.random.Generator`` for its augmentations."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Wrong

CASE = {
    "id": "dataset-rng-object",
    "family": "silent-wrong",
    "title": "numpy Generator stored on the dataset",
    "why": "DataLoader seeds each worker's global RNGs (torch, random, and numpy's legacy global "
    "state) differently, but a Generator object owned by the dataset is copied (fork) or pickled "
    "(spawn, forkserver) with the same state into every worker, so all workers draw the same "
    "'random' augmentations. The case checks that no two items drew the same values.",
    "expect": {"in-process": "pass", "fork": "wrong", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "dataset-rng-per-worker",
    "sources": [
        "https://github.com/TorchDSP/torchsig/issues/343",
        "https://github.com/pytorch/pytorch/issues/5059",
        "https://docs.pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading",
    ],
}


class Augmented(Dataset):
    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(self.rng.integers(0, 2**62, size=3))


def check_distinct(batches):
    """Raise Wrong when two items drew the same random values."""
    items = torch.cat(batches)
    first = {}
    for i, row in enumerate(items.tolist()):
        j = first.setdefault(tuple(row), i)
        if j != i:
            raise Wrong(f"items {j} and {i} drew the same random values {row}")


def run(cell):
    batches = cell.iterate(DataLoader(Augmented(16, seed=3), batch_size=4, num_workers=cell.num_workers))
    check_distinct(batches)
