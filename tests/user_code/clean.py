"""A well-formed training script: top-level definitions, a main guard, and command-line options."""

import argparse

import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        x = torch.tensor([float(i)])
        return x, 3 * x + 1


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args(argv)
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Points(), batch_size=8, num_workers=args.num_workers)
    for _ in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
