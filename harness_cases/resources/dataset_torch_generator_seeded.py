"""Good: the dataset keeps a seed and builds its generator in each process, from the worker seed."""

import os

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from harness_cases.resources.dataset_torch_generator import check_distinct

CASE = {
    "id": "dataset-torch-generator-seeded",
    "family": "resources",
    "title": "torch.Generator created lazily per worker from the worker seed (fix)",
    "why": "The dataset stores only a seed and creates its Generator on first use in each process, "
    "seeded from get_worker_info().seed (base seed + worker id, different per worker and per "
    "epoch). No Generator is ever pickled, and no two workers share a stream.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading",
        "https://github.com/facebookresearch/pytorchvideo/issues/21",
    ],
}


class Jitter(Dataset):
    def __init__(self, n, seed):
        self.n = n
        self.seed = seed
        self._gen = None
        self._pid = None

    def __getstate__(self):
        return {**self.__dict__, "_gen": None, "_pid": None}

    def _generator(self):
        if self._gen is None or self._pid != os.getpid():
            info = get_worker_info()
            self._gen = torch.Generator().manual_seed(self.seed if info is None else info.seed)
            self._pid = os.getpid()
        return self._gen

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randint(0, 2**62, (3,), generator=self._generator())


def run(cell):
    loader = DataLoader(Jitter(16, seed=7), batch_size=4, num_workers=cell.num_workers)
    check_distinct(cell.iterate(loader))
