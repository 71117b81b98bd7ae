"""Augmentations configured in nested lists and dicts, two of them lambdas.

Problems (by hand): ``dataset.transform.transforms[2]`` (a lambda in a Compose) and
``dataset.ops['flip']`` (a lambda in a dict of named ops). Everything else pickles.
"""

import torch
from common import Compose, Normalize, to_tensor
from torch.utils.data import DataLoader, Dataset


class AugmentedSquares(Dataset):
    def __init__(self, n, transform, ops):
        self.n = n
        self.transform = transform
        self.ops = ops
        self.meta = {"splits": [list(range(n)), []], "name": "squares"}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.transform([i, i * i])
        for op in self.ops.values():
            x = op(x)
        return x


def make_loader():
    transform = Compose([to_tensor, Normalize(0.0, 1.0), lambda x: x * 2])
    ops = {"identity": torch.clone, "flip": lambda x: x.flip(0), "abs": torch.abs}
    return DataLoader(AugmentedSquares(16, transform, ops), batch_size=4, num_workers=2)
