"""A transform closure over training-loop locals, and a local worker_init_fn.

Problems (by hand): ``dataset.transform`` (a closure over ``mean``/``std``) and
``worker_init_fn`` (a local def, no closure).
"""

import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Signals(Dataset):
    def __init__(self, n, transform):
        self.n = n
        self.transform = transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(torch.full((3,), float(i)))


def make_loader():
    mean, std = 4.0, 2.0

    def standardise(x):
        return (x - mean) / std

    def seed_worker(worker_id):
        seed = torch.initial_seed() % 2**32
        np.random.seed(seed)
        random.seed(seed)

    return DataLoader(Signals(32, standardise), batch_size=8, num_workers=2, worker_init_fn=seed_worker)
