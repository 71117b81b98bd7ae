"""``dataset.set_epoch(e)`` in the main process, with ``persistent_workers=True``."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Wrong

CASE = {
    "id": "set-epoch-persistent-workers",
    "family": "silent-wrong",
    "title": "set_epoch on the dataset never reaches persistent workers",
    "why": "Persistent workers keep the copy of the dataset they received when they started. "
    "set_epoch changes the main process's copy only, so from the second epoch on the workers "
    "still produce epoch 0's data (a reshuffle or augmentation schedule that never advances). "
    "The case checks each epoch's items.",
    "expect": {"in-process": "pass", "fork": "wrong", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "set-epoch-in-sampler",
    "sources": [
        "https://github.com/huggingface/datasets/issues/6673",
        "https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader",
    ],
}

EPOCHS = 3


class EpochSquares(Dataset):
    def __init__(self, n):
        self.n = n
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([self.epoch, i, i * i])


def expected(epoch, n):
    i = torch.arange(n)
    return torch.stack([torch.full((n,), epoch), i, i * i], dim=1)


def run(cell):
    ds = EpochSquares(16)
    extra = {"persistent_workers": True} if cell.num_workers else {}
    loader = DataLoader(ds, batch_size=4, num_workers=cell.num_workers, **extra)
    for epoch in range(EPOCHS):
        ds.set_epoch(epoch)
        got = torch.cat(cell.iterate(loader))
        if not torch.equal(got, expected(epoch, 16)):
            raise Wrong(f"epoch {epoch}: items carry epoch {sorted(set(got[:, 0].tolist()))}, expected {epoch}")
