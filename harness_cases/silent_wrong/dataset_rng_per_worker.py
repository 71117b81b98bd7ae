"""Good: each worker gives the dataset a Generator seeded from its own worker seed."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from harness_cases.silent_wrong.dataset_rng_object import check_distinct

CASE = {
    "id": "dataset-rng-per-worker",
    "family": "silent-wrong",
    "title": "numpy Generator re-created per worker from the worker seed (fix)",
    "why": "worker_init_fn replaces the dataset's Generator with one seeded from "
    "get_worker_info().seed, which differs per worker and per epoch, so streams differ.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading",
        "https://github.com/TorchDSP/torchsig/issues/343",
    ],
}


class Augmented(Dataset):
    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(self.rng.integers(0, 2**62, size=3))


def seed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def run(cell):
    loader = DataLoader(Augmented(16, seed=3), batch_size=4, num_workers=cell.num_workers,
                        worker_init_fn=seed_worker)
    check_distinct(cell.iterate(loader))
