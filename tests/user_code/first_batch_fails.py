"""Loaders whose first batch never comes: their sampler, batch sampler or dataset raises.

Each pickles and loads fine in a worker; iterating any of them raises, under every start
method and with ``num_workers=0``.
"""

from torch.utils.data import DataLoader, Dataset, Sampler


class Items(Dataset):
    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class LenRaises(Items):
    def __len__(self):
        raise TypeError("length unknown until the index is built")


class Huge(Items):
    """A length no shuffle can allocate a permutation for (8 TB of int64)."""

    def __len__(self):
        return 10**12


class GetitemRaises(Items):
    def __getitem__(self, i):
        raise KeyError(f"missing record {i}")


class BatchesRaise(Sampler):
    def __init__(self):
        self.n = 4

    def __iter__(self):
        raise RuntimeError("the bucket table is empty")

    def __len__(self):
        return 1


def collate_raises(batch):
    raise ValueError("ragged batch")


def len_raises():
    """(With ``shuffle=True`` the loader itself could not be built: ``RandomSampler`` asks for
    the length at once; the sequential sampler asks when iterated.)"""
    return DataLoader(LenRaises(), batch_size=2, num_workers=2)


def huge_shuffle():
    return DataLoader(Huge(), shuffle=True, batch_size=2, num_workers=2)


def batch_sampler_raises():
    return DataLoader(Items(), batch_sampler=BatchesRaise(), num_workers=2)


def getitem_raises():
    return DataLoader(GetitemRaises(), batch_size=2, num_workers=2)


def collate_fails():
    return DataLoader(Items(), batch_size=2, num_workers=2, collate_fn=collate_raises)


def empty():
    """Not a failure: an empty dataset has no first batch under any method, and says so."""
    return DataLoader(Items(0), batch_size=2, num_workers=2)
