"""Good: the setting travels with the dataset object, which every start method delivers."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "setting-passed-to-dataset",
    "family": "context-mixups",
    "title": "Run-time setting stored on the dataset (fix)",
    "why": "The dataset carries the setting as an attribute; fork copies it and spawn or "
    "forkserver pickle it, so every worker sees the value the parent chose.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.python.org/3/library/multiprocessing.html#programming-guidelines",
        "https://github.com/metatensor/metatrain/issues/1243",
    ],
}


class Scaled(Dataset):
    def __init__(self, scale):
        self.scale = scale

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([i, i * i]) * self.scale


def run(cell):
    cell.check(DataLoader(Scaled(3), batch_size=4, num_workers=cell.num_workers), squares(16) * 3)
