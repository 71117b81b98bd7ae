"""A dataset that keeps its own ``torch.Generator`` for augmentation noise.

Problem (by hand): ``dataset.rng``. It pickles, but ``torch.Generator.__reduce__`` returns its
state as a new tensor that nothing keeps alive; under torch's ``file_descriptor`` sharing
strategy (the Linux default) that tensor's shared-memory descriptor is closed before the
worker is launched, and the worker dies with ``unable to resize file <filename not specified>
to the right size``. ``dataset.base`` (a tensor the dataset keeps) is fine.
"""

import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n):
        self.base = torch.arange(n, dtype=torch.float32)
        self.rng = torch.Generator().manual_seed(1234)

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        return self.base[i] + 0.01 * torch.randn((), generator=self.rng)


def make_loader():
    return DataLoader(Noisy(16), batch_size=4, num_workers=2)
