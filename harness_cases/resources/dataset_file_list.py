"""Good: the dataset stores a sorted list of paths."""

from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._archives import make_square_files

CASE = {
    "id": "dataset-file-list",
    "family": "resources",
    "title": "Dataset stores a list of paths (fix)",
    "why": "A list of Path objects pickles by value, so every worker gets the same file list.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://github.com/hustvl/YOLOP/issues/127"],
}


class FolderSquares(Dataset):
    def __init__(self, folder):
        self.files = sorted(Path(folder).iterdir())

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        a, b = self.files[i].read_text(encoding="ascii").split()
        return torch.tensor([int(a), int(b)])


def run(cell):
    ds = FolderSquares(make_square_files(16))
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
