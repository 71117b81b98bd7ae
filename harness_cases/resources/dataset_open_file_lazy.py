"""Good: keep only the path; each worker opens its own handle on first use."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._files import make_records_file, read_record

CASE = {
    "id": "dataset-open-file-lazy",
    "family": "resources",
    "title": "Dataset keeps the path and opens lazily in the worker (fix)",
    "why": "Only a string is pickled; the file is opened in the process that reads it, so no handle "
    "or offset is shared.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://github.com/pytorch/pytorch/issues/11887"],
}


class LazyRecordFile(Dataset):
    def __init__(self, path, n):
        self.path = path
        self.n = n
        self.f = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.f is None:
            self.f = open(self.path, "rb")
        return torch.tensor(read_record(self.f, i))


def run(cell):
    ds = LazyRecordFile(make_records_file(16), 16)
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
    finally:
        if ds.f is not None:  # opened here only by the in-process control
            ds.f.close()
