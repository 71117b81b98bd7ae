"""A downstream project's loader factory, as its CI would name it: ``factory.py:make_loader``.

Problems (by hand): ``dataset.transform``, the local ``def scale`` (line 14), and
``collate_fn``, the lambda (line 18). ``make_safe_loader`` uses top-level callables only.
Run as a script, it iterates ``make_loader()`` once.
"""

import torch
from shapesdata.datasets import Shapes, halve
from torch.utils.data import DataLoader


def make_loader():
    def scale(x):
        return x * 3.0

    return DataLoader(Shapes(16, scale), batch_size=4, num_workers=2,
                      collate_fn=lambda batch: torch.stack(batch))


def make_safe_loader():
    return DataLoader(Shapes(16, halve), batch_size=4, num_workers=2)


if __name__ == "__main__":
    print(sum(len(b) for b in make_loader()))
