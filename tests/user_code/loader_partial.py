"""A collate_fn built with functools.partial around a function local to the factory.

Problems (by hand): ``collate_fn.func`` (a local function) and ``collate_fn.keywords['key']``
(a lambda passed as a keyword). The dataset itself is fine.
"""

import functools

import torch
from torch.utils.data import DataLoader, Dataset


class Lengths(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.arange(i + 1)


def make_loader():
    def sorted_pad(batch, key, pad_value):
        batch = sorted(batch, key=key)
        return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=pad_value)

    collate = functools.partial(sorted_pad, key=lambda t: len(t), pad_value=-1)
    return DataLoader(Lengths(), batch_size=4, num_workers=2, collate_fn=collate)
