"""Datasets and loader factories: some a spawn worker can receive, some it cannot."""

import itertools

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset


class Squares(Dataset):
    """``n`` items ``i * i``, passed through ``transform``."""

    def __init__(self, n, transform=None):
        self.n = n
        self.transform = transform
        self.reads = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.reads += 1
        item = torch.tensor(i * i)
        return self.transform(item) if self.transform else item


def negate(x):
    return -x


def make_loader(num_workers=0):
    """Safe: a module-level transform."""
    return DataLoader(Squares(8, transform=negate), batch_size=4, num_workers=num_workers)


def make_lambda_loader(scale, num_workers=0):
    """Unsafe: the collate_fn is a lambda."""
    return DataLoader(Squares(8), batch_size=4, num_workers=num_workers,
                      collate_fn=lambda batch: torch.stack(batch) * scale)


def make_seeded_loader(num_workers=0):
    """Unsafe: worker_init_fn is a local function."""

    def seed_worker(worker_id):
        torch.manual_seed(worker_id)

    return DataLoader(Squares(8), num_workers=num_workers, worker_init_fn=seed_worker)


class Lines(Dataset):
    """Unsafe: opens its file in ``__init__`` and keeps the handle."""

    def __init__(self, path):
        self.fh = open(path, "rb")
        self.offsets = [0]

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        self.fh.seek(self.offsets[i])
        return self.fh.readline()


class LazyLines(Dataset):
    """Safe: opens its file on first use, in whichever process reads it."""

    def __init__(self, path):
        self.path = path
        self.fh = None

    def __len__(self):
        return 1

    def __getitem__(self, i):
        if self.fh is None:
            self.fh = open(self.path, "rb")
        self.fh.seek(0)
        return self.fh.readline()


class Counter(IterableDataset):
    """A hazard: an itertools iterator, which Python 3.14 no longer pickles."""

    def __init__(self):
        self.ids = itertools.count()

    def __iter__(self):
        for _ in range(3):
            yield torch.tensor(next(self.ids))


def make_scaled_loader(transform, num_workers=0):
    """Safe or not depending on the transform it is given."""
    return DataLoader(Squares(8, transform=transform), batch_size=4, num_workers=num_workers)


class Logged(Dataset):
    """Safe: appends a line to its log file at every item it reads (a side effect a test can see)."""

    def __init__(self, log):
        self.log = str(log)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with open(self.log, "a") as fh:
            fh.write(f"{i}\n")
        return torch.tensor(i)


class Sharded(IterableDataset):
    """Safe: splits its items between workers with get_worker_info(), as torch's docs show."""

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        start, step = (info.id, info.num_workers) if info is not None else (0, 1)
        return iter(range(start, 8, step))
