"""A dataset that keeps its file list as a Python list of many small ``str`` objects."""

import torch
from torch.utils.data import DataLoader, Dataset

CASE = {
    "id": "memory-object-list",
    "family": "memory-cost",
    "title": "A million Python str objects in a list (copy-on-read under fork)",
    "why": "Every outcome is a pass; the cost is the finding (worker_peak_uss_bytes, first_batch_s). "
    "Fork shares the parent's pages copy-on-write, but merely reading a Python object writes its "
    "reference count, so a worker that walks the list copies every page it touches: its private "
    "memory (USS) grows by about the size of the list's objects, per worker. Spawn and forkserver "
    "pickle the whole list into every worker instead (slower first batch, a full private copy "
    "per worker). The fix keeps the same data in one tensor, which has no per-item refcounts.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "fix": "memory-tensor-storage",
    "sources": [
        "https://github.com/pytorch/pytorch/issues/13246",
        "https://github.com/pytorch/pytorch/issues/20433",
        "https://github.com/metatensor/metatrain/issues/1229",
        "https://github.com/pytorch/pytorch/issues/139792",
    ],
}

PATHS = 1_000_000
ITEMS = 8


def path_name(i):
    return f"images/{i:08d}.jpg"


class PathList(Dataset):
    """Item ``k`` walks every path (as an epoch of lookups would) and returns ``[k, total length]``."""

    def __init__(self, n):
        self.paths = [path_name(i) for i in range(n)]

    def __len__(self):
        return ITEMS

    def __getitem__(self, k):
        total = 0
        for p in self.paths:
            total += len(p)
        return torch.tensor([k, total])


def run(cell):
    ds = PathList(PATHS)
    expected = torch.tensor([[k, PATHS * len(path_name(0))] for k in range(ITEMS)])
    cell.check(DataLoader(ds, batch_size=1, num_workers=cell.num_workers), expected)
