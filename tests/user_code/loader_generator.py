"""A dataset that keeps the generator returned by ``Path.iterdir()``.

Problem (by hand): ``dataset.files`` (a generator).
"""

import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, IterableDataset


class FileStream(IterableDataset):
    def __init__(self, root):
        self.root = root
        self.files = Path(root).iterdir()

    def __iter__(self):
        for f in self.files:
            yield torch.tensor(len(f.read_bytes()))


def make_loader():
    root = tempfile.mkdtemp()
    for i in range(4):
        (Path(root) / f"{i}.txt").write_text("x" * i)
    return DataLoader(FileStream(root), batch_size=2, num_workers=2)
