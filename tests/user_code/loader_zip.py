"""Images read from a zip archive opened once in ``__init__``.

Problems (by hand): a ``zipfile.ZipFile`` opened from a path holds the open file ``fp`` and a
``threading.RLock`` ``_lock`` (CPython ``Lib/zipfile``), so ``dataset.archive.fp`` and
``dataset.archive._lock``. ``dataset.names`` (a list of str) pickles.
"""

import os
import tempfile
import zipfile

import torch
from torch.utils.data import DataLoader, Dataset


def write_archive(n):
    fd, path = tempfile.mkstemp(suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(n):
            zf.writestr(f"img_{i:03d}.bin", bytes([i % 256]) * 16)
    return path


class ZipImages(Dataset):
    def __init__(self, path):
        self.archive = zipfile.ZipFile(path)
        self.names = sorted(self.archive.namelist())

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return torch.frombuffer(bytearray(self.archive.read(self.names[i])), dtype=torch.uint8)


def make_loader():
    return DataLoader(ZipImages(write_archive(12)), batch_size=4, num_workers=2)
