"""A dataset that keeps a seeded ``torch.Generator`` for its augmentations."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Wrong

CASE = {
    "id": "dataset-torch-generator",
    "family": "resources",
    "title": "Dataset holds a seeded torch.Generator",
    "why": "The report says torch.Generator cannot be pickled. With torch 2.x it pickles, with its "
    "state, and two other failures take the place of that error. Fork workers each inherit the "
    "very same generator state, and DataLoader reseeds only the global RNGs (torch, random, "
    "numpy), never a generator the dataset owns, so every worker draws the same 'random' "
    "augmentations; the case checks that no two items drew the same values. Under spawn and "
    "forkserver, Generator.__reduce__ hands pickle a freshly made state tensor; torch's pickler "
    "shares its storage through a file descriptor, but that temporary tensor is freed before the "
    "worker starts, so the worker dies unpickling it (\"unable to resize file <filename not "
    "specified> to the right size: Invalid argument\"). macOS and Windows share tensors through "
    "files (the file_system strategy): there the state tensor survives, every spawn and "
    "forkserver worker unpickles the same generator state, and the data is silently wrong, as "
    "under fork (observed with the macOS and Windows profiles).",
    "expect": {"in-process": "pass", "fork": "wrong", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "worker-died", "forkserver": "worker-died"},
    "expect_when": [
        {"sharing_strategy": "file_system", "expect": {"spawn": "wrong", "forkserver": "wrong"}},
    ],
    "fix": "dataset-torch-generator-seeded",
    "matches": {
        "static": [{"rule": "HL201", "is": "torch-generator"}],
        "objects": [{"type": "torch._C.Generator"}],
        "errors": [{"text": "unable to resize file"}],
    },
    "sources": [
        "https://github.com/facebookresearch/pytorchvideo/issues/21",
        "https://docs.pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading",
    ],
}


class Jitter(Dataset):
    def __init__(self, n, seed):
        self.n = n
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randint(0, 2**62, (3,), generator=self.gen)


def check_distinct(batches):
    """Raise Wrong when two items drew the same random values."""
    items = torch.cat(batches)
    first = {}
    for i, row in enumerate(items.tolist()):
        j = first.setdefault(tuple(row), i)
        if j != i:
            raise Wrong(f"items {j} and {i} drew the same random values {row}")


def run(cell):
    batches = cell.iterate(DataLoader(Jitter(16, seed=7), batch_size=4, num_workers=cell.num_workers))
    check_distinct(batches)
