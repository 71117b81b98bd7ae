"""A dataset that opens a zip archive in ``__init__`` and reads members from it in workers."""

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
    "id": "dataset-zip-archive",
    "family": "resources",
    "title": "Dataset holds a zip archive opened in __init__",
    "why": "Under spawn and forkserver the ZipFile cannot be pickled (its open file and lock). Under "
    "fork both workers inherit one open file description, and with it one file offset: each "
    "member read is a seek followed by reads, and the other worker's seeks move the offset in "
    "between. The reports describe this as silent corruption; here zipfile's CRC-32 check turns "
    "the corrupt bytes into an exception in the worker (BadZipFile 'Bad CRC-32', 'Bad magic number' "
    "or EOFError, whichever read was hit first), so the observed outcome under fork is an error, "
    "not wrong data. Every worker reads all members many times so the two always overlap.",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "worker-exception", "spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-zip-lazy",
    "matches": {
        "static": [{"rule": "HL201", "call": "zipfile.ZipFile"}],
        "objects": [{"within": "zipfile.ZipFile"}]},
    "sources": [
        "https://github.com/numpy/numpy/issues/18124",
        "https://github.com/zarr-developers/zarr-python/issues/1218",
    ],
}

PASSES = 40


class ZipMembers(Dataset):
    def __init__(self, path, n):
        self.n = n
        self.archive = zipfile.ZipFile(path)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        total = 0
        for _ in range(PASSES):
            for k in range(MEMBERS):
                total += member_checksum(self.archive.read(member_name(k)))
        return torch.tensor([i, total])


def run(cell):
    ds = ZipMembers(make_zip(), 8)
    expected = torch.tensor([[i, expected_checksum(PASSES)] for i in range(8)])
    cell.check(DataLoader(ds, batch_size=1, num_workers=cell.num_workers), expected)
