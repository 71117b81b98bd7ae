"""CUDA is initialised in the parent, then the dataset uses CUDA inside forked workers."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import Skip, squares

CASE = {
    "id": "cuda-init-before-fork",
    "family": "cuda-before-fork",
    "title": "CUDA initialised before fork, used in workers",
    "why": "A forked child inherits the parent's CUDA state but cannot use it; the first CUDA call "
    "in a fork worker raises \"Cannot re-initialize CUDA in forked subprocess\". Spawn and "
    "forkserver workers start clean and initialise CUDA themselves. Without CUDA every cell is "
    "skipped; the expectations come from the sources, not from a run here.",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "pass", "forkserver": "pass"},
    "expect_kind": {"fork": "cuda-reinit"},
    "fix": "cuda-batches-to-device-in-main",
    "matches": {"errors": [{"kind": "cuda-reinit"}]},
    "requires": ["cuda"],
    "sources": [
        "https://github.com/pytorch/pytorch/issues/77159",
        "https://github.com/pytorch/pytorch/issues/40403",
        "https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing",
    ],
}


class GpuSquares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.tensor([i], device="cuda")
        return torch.cat([x, x * x]).cpu()


def run(cell):
    if not torch.cuda.is_available():
        raise Skip("CUDA is not available")
    torch.zeros(1, device="cuda")  # the parent initialises CUDA, as a model.to("cuda") would
    cell.check(DataLoader(GpuSquares(16), batch_size=4, num_workers=cell.num_workers), squares(16))
