"""Top-level building blocks a user's project would import: transforms, a Compose, collate helpers."""

from __future__ import annotations

import torch


class Compose:
    """Apply transforms in order (the shape of ``torchvision.transforms.Compose``)."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Normalize:
    """A picklable, top-level callable class."""

    def __init__(self, mean: float, std: float):
        self.mean = mean
        self.std = std

    def __call__(self, x):
        return (x - self.mean) / self.std


def to_tensor(x):
    return torch.as_tensor(x, dtype=torch.float32)


def pad_collate(batch, pad_value=0.0):
    """Stack 1-D tensors of different lengths, padding with ``pad_value``."""
    return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=pad_value)


class Vocab:
    """A tokenizer-like object whose bound method serves as a collate_fn."""

    def __init__(self, size: int):
        self.size = size

    def collate(self, batch):
        return torch.stack(batch) % self.size
