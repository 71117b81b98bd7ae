"""A Dataset class defined inside the factory that builds the loader.

Problem (by hand): ``dataset.__class__`` (the local class ``make_loader.<locals>.Windows``);
the instance's own state (ints and a list) pickles.
"""

import torch
from torch.utils.data import DataLoader, Dataset


def make_loader(length=64, window=8):
    class Windows(Dataset):
        def __init__(self):
            self.series = list(range(length))
            self.window = window

        def __len__(self):
            return length - window

        def __getitem__(self, i):
            return torch.tensor(self.series[i : i + self.window])

    return DataLoader(Windows(), batch_size=4, num_workers=2)
