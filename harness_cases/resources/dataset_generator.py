"""A dataset that keeps the generator returned by ``Path.iterdir()``."""

from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._archives import make_square_files

CASE = {
    "id": "dataset-generator",
    "family": "resources",
    "title": "Dataset holds a generator (Path.iterdir())",
    "why": "Generators cannot be pickled (\"cannot pickle 'generator' object\"), so spawn and "
    "forkserver fail. Fork copies the unconsumed generator into each worker, which then lists "
    "the folder on first use, and passes. Python 3.13 alone made Path.iterdir() list the folder "
    "at once and return a map over that list, which pickles, so spawn and forkserver pass there; "
    "3.14 returns a generator again (observed on 3.12.1, 3.13.0 and 3.14.10).",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "expect_when": [{"python": "==3.13", "expect": {"spawn": "pass", "forkserver": "pass"}}],
    "fix": "dataset-file-list",
    "matches": {
        "static": [{"rule": "HL201", "is": "generator"}],
        "objects": [{"is": "generator"}],
        "errors": [{"kind": "pickle", "text": "cannot pickle 'generator' object"}],
    },
    "sources": ["https://github.com/hustvl/YOLOP/issues/127"],
}


class FolderSquares(Dataset):
    def __init__(self, folder, n):
        self.n = n
        self.entries = Path(folder).iterdir()
        self._files = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self._files is None:
            self._files = sorted(self.entries)
        a, b = self._files[i].read_text(encoding="ascii").split()
        return torch.tensor([int(a), int(b)])


def run(cell):
    ds = FolderSquares(make_square_files(16), 16)
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
