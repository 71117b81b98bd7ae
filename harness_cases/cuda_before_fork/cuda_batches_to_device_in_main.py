"""Good: workers build CPU tensors; the main process moves each batch to the device."""

import torch
from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "cuda-batches-to-device-in-main",
    "family": "cuda-before-fork",
    "title": "Workers stay on the CPU; batches move to the device in the main process (fix)",
    "why": "Workers never touch CUDA, so a CUDA context in the parent does not matter to fork; "
    "the main process moves each batch to the device (pin_memory helps). It runs without CUDA "
    "too, on the CPU.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing",
        "https://docs.pytorch.org/docs/stable/data.html#memory-pinning",
    ],
}


def run(cell):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.zeros(1, device=device)  # initialise the device in the parent first, as a model would
    loader = DataLoader(Squares(16), batch_size=4, num_workers=cell.num_workers)
    cell.check((batch.to(device).cpu() for batch in loader), squares(16))
