"""The downstream project's dataset: squares of an index, with a transform."""

import torch
from torch.utils.data import Dataset


class Shapes(Dataset):
    def __init__(self, n, transform):
        self.n = n
        self.transform = transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(torch.tensor(float(i * i)))


def halve(x):
    return x / 2
