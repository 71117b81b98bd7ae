"""Workers return many small tensors that the main process keeps, under a 256-file limit."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Skip

try:
    import resource
except ImportError:  # Windows: no POSIX resource limits
    resource = None

CASE = {
    "id": "fd-limit-many-tensors",
    "family": "shm-fd-limits",
    "title": "Many separate tensors kept from workers exhaust open files",
    "why": "Under torch's 'file_descriptor' sharing strategy (the Linux default), every tensor "
    "storage a worker sends arrives as shared memory that the receiving process keeps open as a "
    "file descriptor while the tensor lives. Items here are lists of 8 tensors, collated as lists "
    "(no stacking), and the main process keeps all 512; the case lowers the soft open-file limit "
    "to 256 (a stand-in for the common 1024) so this fails quickly, with \"received 0 items of "
    "ancdata\". Every worker method sends batches the same way, so all fail. macOS and Windows "
    "use the 'file_system' strategy, which keeps no descriptor per storage, so the same code "
    "passes there (observed with the macOS profile). Skipped where POSIX open-file limits do "
    "not exist (Windows).",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"fork": "fd-limit", "spawn": "fd-limit", "forkserver": "fd-limit"},
    "expect_when": [
        {"sharing_strategy": "file_system", "expect": {"fork": "pass", "spawn": "pass", "forkserver": "pass"}},
    ],
    "fix": "fd-limit-one-tensor-per-batch",
    "matches": {"errors": [{"kind": "fd-limit"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/11201",
        "https://docs.pytorch.org/docs/stable/multiprocessing.html#sharing-strategies",
    ],
}

FILE_LIMIT = 256
ITEMS = 64
PARTS = 8


def lower_file_limit():
    """Lower this process's soft RLIMIT_NOFILE to FILE_LIMIT (workers inherit it)."""
    if resource is None:
        raise Skip("POSIX open-file limits do not exist here")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = FILE_LIMIT if soft == resource.RLIM_INFINITY else min(FILE_LIMIT, soft)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


def expected_parts():
    """The items' content, shape ``(ITEMS, PARTS, 4)``."""
    return torch.arange(ITEMS * PARTS).reshape(ITEMS, PARTS, 1).expand(ITEMS, PARTS, 4)


class Parts(Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        return [torch.full((4,), i * PARTS + j) for j in range(PARTS)]


def keep_lists(items):
    return items


def run(cell):
    lower_file_limit()
    loader = DataLoader(Parts(), batch_size=4, num_workers=cell.num_workers, collate_fn=keep_lists)
    kept = []  # every received tensor stays alive, as in code that accumulates outputs

    def stacked():
        for batch in loader:
            kept.append(batch)
            yield torch.stack([torch.stack(item) for item in batch])

    cell.check(stacked(), expected_parts())
