"""Datasets that are hard on the guard's checker process: they pickle here, then misbehave there."""

import os
import time

import torch
from torch.utils.data import Dataset


class Plain(Dataset):
    def __init__(self):
        self.n = 4  # some state, so that unpickling calls __setstate__

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(i)


class ExitsWhenLoaded(Plain):
    """Ends the process that unpickles it (a worker would die at start-up)."""

    def __setstate__(self, state):
        os._exit(3)


class HangsInGetitem(Plain):
    def __getitem__(self, i):
        time.sleep(3600)


class RaisesSystemExitInGetitem(Plain):
    def __getitem__(self, i):
        raise SystemExit(5)
