"""The closure reads a local assigned again after it is made."""
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
    offset = 1

    def add(x):
        return x + offset

    offset = 10
    loader = DataLoader(Numbers(add), batch_size=2, num_workers=2)
    print([b.tolist() for b in loader])


if __name__ == "__main__":
    main()
