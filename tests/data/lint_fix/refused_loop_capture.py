"""Closures made in a loop read the loop variable late: a partial would bind it early."""
import torch
from torch.utils.data import DataLoader, Dataset


class Numbers(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.transform(torch.tensor(i))


def main():
    for shift in (1, 2):
        loader = DataLoader(Numbers(lambda x: x + shift), batch_size=2, num_workers=2)  # noqa: B023
        print([b.tolist() for b in loader])


if __name__ == "__main__":
    main()
