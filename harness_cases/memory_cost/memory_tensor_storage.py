"""Good: the same file list stored as one uint8 tensor of fixed-width names."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness_cases.memory_cost.memory_object_list import ITEMS, PATHS, path_name

CASE = {
    "id": "memory-tensor-storage",
    "family": "memory-cost",
    "title": "The same names in one uint8 tensor (fix)",
    "why": "One tensor is one object with one reference count, so walking it under fork writes no "
    "shared page and the workers' private memory stays small. Under spawn and forkserver, "
    "torch's pickler moves the tensor's storage to shared memory once and each worker maps it "
    "instead of unpickling a copy.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/13246",
        "https://docs.pytorch.org/docs/stable/notes/multiprocessing.html",
        "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies",
    ],
}

WIDTH = len(path_name(0))


class PathTensor(Dataset):
    """Names as a ``(n, WIDTH)`` uint8 tensor (0-padded); item ``k`` sums the name lengths."""

    def __init__(self, n):
        raw = bytearray()
        for i in range(n):
            raw += path_name(i).encode("ascii").ljust(WIDTH, b"\0")
        self.names = torch.frombuffer(raw, dtype=torch.uint8).reshape(n, WIDTH).clone()

    def __len__(self):
        return ITEMS

    def __getitem__(self, k):
        total = int(torch.count_nonzero(self.names))
        return torch.tensor([k, total])


def run(cell):
    ds = PathTensor(PATHS)
    expected = torch.tensor([[k, PATHS * WIDTH] for k in range(ITEMS)])
    cell.check(DataLoader(ds, batch_size=1, num_workers=cell.num_workers), expected)
