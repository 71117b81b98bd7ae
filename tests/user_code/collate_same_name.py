"""A collate_fn that returns a namedtuple class it makes on each call, named like a module-level one.

Problem (by hand): ``batch.__class__``. Everything a worker start sends pickles, and so does
every sample; but each call of ``collate`` makes a new class ``Batch`` whose module and name
lead to the module-level ``Batch``, a different object, so the batch cannot be pickled on its
way back to the main process. The worker's queue feeder thread prints the ``PicklingError``
and drops the batch; the main process waits for it forever, under every start method, fork
included. Run as a script, it iterates the loader once.
"""

from collections import namedtuple

import torch
from torch.utils.data import DataLoader, Dataset

Batch = namedtuple("Batch", ["inputs", "targets"])


class Pairs(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor(i % 2)


def collate(samples):
    # Meant to be the Batch above; a fresh class each call, with the same name.
    Batch = namedtuple("Batch", ["inputs", "targets"])  # noqa: N806 - the bug being shown
    inputs, targets = zip(*samples, strict=True)
    return Batch(torch.stack(inputs), torch.stack(targets))


def make_loader():
    return DataLoader(Pairs(), batch_size=4, num_workers=2, collate_fn=collate)


if __name__ == "__main__":
    print(sum(len(b.inputs) for b in make_loader()))
