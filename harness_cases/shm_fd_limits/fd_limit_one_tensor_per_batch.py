"""Good: each item is one tensor and the default collate stacks a batch into one tensor."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness_cases.shm_fd_limits.fd_limit_many_tensors import (
    ITEMS,
    PARTS,
    expected_parts,
    lower_file_limit,
)

CASE = {
    "id": "fd-limit-one-tensor-per-batch",
    "family": "shm-fd-limits",
    "title": "One stacked tensor per batch, under the same 256-file limit (fix)",
    "why": "Stacking the parts in the dataset and letting the default collate_fn stack the batch "
    "sends one storage, so one descriptor, per batch instead of 32; 16 kept batches stay far "
    "below the limit. (torch.multiprocessing.set_sharing_strategy('file_system') is the other "
    "repair, but a spawn worker needs it set again, and it leaves shared-memory files behind "
    "if a process dies.)",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/11201",
        "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies",
    ],
}


class StackedParts(Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        return torch.stack([torch.full((4,), i * PARTS + j) for j in range(PARTS)])


def run(cell):
    lower_file_limit()
    kept = []

    def kept_batches():
        for batch in DataLoader(StackedParts(), batch_size=4, num_workers=cell.num_workers):
            kept.append(batch)
            yield batch

    cell.check(kept_batches(), expected_parts())
