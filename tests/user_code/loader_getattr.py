"""A dataset wrapper that forwards attribute access to the wrapped dataset through ``__getattr__``.

Problem (by hand): ``dataset``, the ``Forwarding`` wrapper. It pickles in the parent, but a
worker unpickling it builds an instance with no attributes, looks up ``__setstate__`` on it,
reaches ``__getattr__``, which reads ``self.dataset``, which calls ``__getattr__`` again:
``RecursionError``, and every spawn or forkserver worker dies. Fork copies the live object and
never unpickles it. Run as a script, it iterates the loader once.
"""

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    classes = ("even", "odd")

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor(i * i)


class Forwarding(Dataset):
    """Delegates everything it does not have (``classes``, ``__len__`` callers) to ``dataset``."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getattr__(self, name):
        return getattr(self.dataset, name)

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i]


def make_loader():
    return DataLoader(Forwarding(Squares()), batch_size=4, num_workers=2)


if __name__ == "__main__":
    print(sum(int(b.sum()) for b in make_loader()))
