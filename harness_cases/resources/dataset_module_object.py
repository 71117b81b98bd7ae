"""A dataset that stores a module object as an attribute."""

import math

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "dataset-module-object",
    "family": "resources",
    "title": "Dataset stores a module object",
    "why": "Module objects cannot be pickled ('cannot pickle module object'), so a dataset that keeps "
    "one in its __dict__ fails under spawn and forkserver.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-module-imported",
    "matches": {
        "static": [{"rule": "HL201", "is": "module"}],
        "objects": [{"type": "module"}],
        "errors": [{"kind": "pickle", "text": "cannot pickle 'module' object"}],
    },
    "sources": ["https://github.com/pytorch/vision/issues/9195"],
}


class ModuleHolder(Dataset):
    def __init__(self, n):
        self.n = n
        self.mathlib = math

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i, int(self.mathlib.pow(i, 2))])


def run(cell):
    cell.check(DataLoader(ModuleHolder(16), batch_size=4, num_workers=cell.num_workers), squares(16))
