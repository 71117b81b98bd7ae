"""A guarded training script whose DataLoader gets a lambda as ``collate_fn``."""

import torch
from torch.utils.data import DataLoader, Dataset


class Tokens(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.arange(i % 4 + 1)


def main():
    loader = DataLoader(
        Tokens(), batch_size=4, num_workers=2,
        collate_fn=lambda batch: torch.nn.utils.rnn.pad_sequence(batch, batch_first=True),
    )
    print(sum(b.shape[0] for b in loader))


if __name__ == "__main__":
    main()
