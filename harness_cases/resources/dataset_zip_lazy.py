"""Good: keep the archive's path; each process opens its own ZipFile on first use."""

import os
import zipfile

import torch
from torch.utils.data import DataLoader, Dataset

from harness_cases.resources._archives import (
    MEMBERS,
    expected_checksum,
    make_zip,
    member_checksum,
    member_name,
)

CASE = {
    "id": "dataset-zip-lazy",
    "family": "resources",
    "title": "Zip archive opened lazily in each worker (fix)",
    "why": "Only the path is pickled; each process opens its own ZipFile (and so its own file "
    "offset) the first time it reads, and a copy inherited through fork is reopened because the "
    "pid changed.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/numpy/numpy/issues/18124",
        "https://github.com/pytorch/pytorch/issues/11887",
    ],
}

PASSES = 40


class LazyZipMembers(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.n = n
        self._archive = None
        self._pid = None

    def __getstate__(self):
        return {**self.__dict__, "_archive": None, "_pid": None}

    def _open(self):
        if self._archive is None or self._pid != os.getpid():
            self._archive = zipfile.ZipFile(self.path)
            self._pid = os.getpid()
        return self._archive

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        archive = self._open()
        total = 0
        for _ in range(PASSES):
            for k in range(MEMBERS):
                total += member_checksum(archive.read(member_name(k)))
        return torch.tensor([i, total])


def run(cell):
    ds = LazyZipMembers(make_zip(), 8)
    expected = torch.tensor([[i, expected_checksum(PASSES)] for i in range(8)])
    cell.check(DataLoader(ds, batch_size=1, num_workers=cell.num_workers), expected)
