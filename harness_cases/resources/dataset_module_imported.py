"""Good: use the module through a top-level import instead of storing it on the dataset."""

import math

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-module-imported",
    "family": "resources",
    "title": "Dataset uses a module imported at top level (fix)",
    "why": "The module is imported again by each worker; the dataset's __dict__ holds only data.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://github.com/pytorch/vision/issues/9195"],
}


class ModuleUser(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i, int(math.pow(i, 2))])


def run(cell):
    cell.check(DataLoader(ModuleUser(16), batch_size=4, num_workers=cell.num_workers), squares(16))
