"""The parent sets a module-level setting at run time, trusting Linux to fork the workers."""

import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares

CASE = {
    "id": "global-set-in-parent",
    "family": "context-mixups",
    "title": "Module global set at run time, read by workers (assumes fork on Linux)",
    "why": "The training code stores a setting in a module-level dict at run time and, on Linux, "
    "relies on the workers inheriting it, as fork does. Spawn and forkserver workers import the "
    "module afresh and see its import-time default instead, so every item is silently scaled "
    "wrongly. Python 3.14 makes forkserver the Linux default, which turns such code wrong there "
    "without any change to it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "setting-passed-to-dataset",
    "sources": [
        "https://github.com/metatensor/metatrain/issues/1243",
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods",
    ],
}

SETTINGS = {"scale": 1}


class Scaled(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([i, i * i]) * SETTINGS["scale"]


def run(cell):
    SETTINGS["scale"] = 3  # set at run time, e.g. from the command line; workers are trusted to inherit it
    cell.check(DataLoader(Scaled(), batch_size=4, num_workers=cell.num_workers), squares(16) * 3)
