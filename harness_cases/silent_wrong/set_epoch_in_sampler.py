"""Good: the epoch travels with the indices, from a sampler that lives in the main process."""

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from harness.case import Wrong
from harness_cases.silent_wrong.set_epoch_persistent_workers import EPOCHS, expected

CASE = {
    "id": "set-epoch-in-sampler",
    "family": "silent-wrong",
    "title": "set_epoch on the sampler, which yields (epoch, index) (fix)",
    "why": "The sampler runs in the main process, so its set_epoch always takes effect (as with "
    "DistributedSampler.set_epoch); it yields (epoch, index) pairs, which reach the persistent "
    "workers with every batch of indices.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/huggingface/datasets/issues/6673",
        "https://docs.pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler",
    ],
}


class EpochSampler(Sampler):
    def __init__(self, n):
        self.n = n
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return self.n

    def __iter__(self):
        return ((self.epoch, i) for i in range(self.n))


class EpochSquares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, key):
        epoch, i = key
        return torch.tensor([epoch, i, i * i])


def run(cell):
    sampler = EpochSampler(16)
    extra = {"persistent_workers": True} if cell.num_workers else {}
    loader = DataLoader(EpochSquares(16), sampler=sampler, batch_size=4, num_workers=cell.num_workers, **extra)
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        got = torch.cat(cell.iterate(loader))
        if not torch.equal(got, expected(epoch, 16)):
            raise Wrong(f"epoch {epoch}: items carry epoch {sorted(set(got[:, 0].tolist()))}, expected {epoch}")
