"""The fix for an itertools iterator in a dataset: keep a list and index it by item."""

from torch.utils.data import DataLoader, Dataset

from harness.case import squares


def identity(x):
    return x


class IndexedAugment(Dataset):
    def __init__(self, n, augmentations):
        self.n = n
        self.augmentations = list(augmentations)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.augmentations[i % len(self.augmentations)](squares(self.n)[i])


CASE = {
    "id": "dataset-augment-list",
    "family": "resources",
    "title": "Dataset keeps its augmentations in a list, chosen by item index",
    "why": "A list of top-level functions pickles on every Python, and choosing by index makes "
    "each item's augmentation the same whichever worker loads it (a shared cycle would depend "
    "on the order in which each worker happens to see items).",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3.14/whatsnew/3.14.html#itertools"],
}


def run(cell):
    ds = IndexedAugment(16, [identity])
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16))
