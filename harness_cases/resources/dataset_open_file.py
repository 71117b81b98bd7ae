"""A dataset that opens its data file in ``__init__`` and keeps the handle."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._files import make_records_file, read_record

CASE = {
    "id": "dataset-open-file",
    "family": "resources",
    "title": "Dataset holds a file opened in __init__",
    "why": "An open file object cannot be pickled ('cannot pickle _io.BufferedReader'), so spawn and "
    "forkserver fail. Fork passes by sharing the descriptor, and with it the file offset, which is "
    "unsafe for seek-then-read code.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-open-file-lazy",
    "matches": {
        "static": [{"rule": "HL201", "is": "open-file"}],
        "objects": [{"is": "open-file"}],
        "errors": [
            {
                "kind": "pickle",
                "text": [
                    r"cannot pickle '_io\.\w+' object",
                    "cannot pickle 'BufferedReader' instances",
                ],
            }
        ],
    },
    "sources": ["https://github.com/justchenhao/BIT_CD/issues/47", "https://github.com/qiuqiao/SOFA/issues/18"],
}


class RecordFile(Dataset):
    def __init__(self, path, n):
        self.n = n
        self.f = open(path, "rb")

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(read_record(self.f, i))


def run(cell):
    ds = RecordFile(make_records_file(16), 16)
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
