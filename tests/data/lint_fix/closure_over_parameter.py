"""A transform closure over a parameter of the function that builds the loader."""

import torch
from torch.utils.data import DataLoader, Dataset


class Numbers(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return self.transform(torch.tensor(float(i)))


def build(scale, workers):
    def rescale(x):
        """Multiply by the run's scale."""
        return x * scale

    return DataLoader(Numbers(rescale), batch_size=3, num_workers=workers)


if __name__ == "__main__":
    print([b.tolist() for b in build(2.5, 2)])
