"""A dataset that rotates through its augmentations with ``itertools.cycle``.

Hazard (by hand): ``dataset.augmentations``, an ``itertools.cycle``. It pickles up to Python
3.13 (3.12 and 3.13 warn that the support goes), and not on 3.14, which removed pickling from
``itertools`` iterators: safe here, a spawn or forkserver start that fails on 3.14. Run as a
script, it iterates the loader once.
"""

import itertools

import torch
from torch.utils.data import DataLoader, Dataset


def flip(x):
    return -x


def shift(x):
    return x + 1


class RotatingAugment(Dataset):
    def __init__(self, n):
        self.n = n
        self.augmentations = itertools.cycle([flip, shift])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return next(self.augmentations)(torch.tensor(float(i)))


def make_loader():
    return DataLoader(RotatingAugment(16), batch_size=4, num_workers=2)


if __name__ == "__main__":
    print(sum(len(b) for b in make_loader()))
