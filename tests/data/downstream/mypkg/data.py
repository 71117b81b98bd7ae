"""Datasets and loader factories of the sample downstream project."""

import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    """``n`` items ``[i, 2*i]``, passed through ``transform``."""

    def __init__(self, n, transform=None):
        self.n = n
        self.transform = transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        item = torch.tensor([i, 2 * i])
        return self.transform(item) if self.transform else item


def double(x):
    return x * 2


def expected(n, transform=None):
    """The items a loader over ``Pairs(n, transform)`` delivers, in order, shape ``(n, 2)``."""
    items = torch.stack([torch.tensor([i, 2 * i]) for i in range(n)])
    return transform(items) if transform else items


def make_loader(num_workers=2):
    """A loader that spawn and forkserver workers can start."""
    return DataLoader(Pairs(8, transform=double), batch_size=4, num_workers=num_workers)


def make_bad_loader(num_workers=2):
    """A loader whose transform is a lambda and whose worker_init_fn is a local function."""

    def seed_worker(worker_id):
        torch.manual_seed(worker_id)

    return DataLoader(Pairs(8, transform=lambda x: x * 2), batch_size=4, num_workers=num_workers,
                      worker_init_fn=seed_worker)
