"""Good: ``collate_fn`` is a module-level function."""

import torch
from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "collate-fn-toplevel",
    "family": "loader-callables",
    "title": "collate_fn is a top-level function (fix)",
    "why": "A module-level function pickles by reference, so every worker imports it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.pytorch.org/docs/stable/data.html#dataloader-collate-fn",
        "https://github.com/pytorch/vision/issues/5801",
    ],
}


def stack_doubled(items):
    return torch.stack(items) * 2


def run(cell):
    loader = DataLoader(Squares(16), batch_size=4, num_workers=cell.num_workers, collate_fn=stack_doubled)
    cell.check(loader, squares(16) * 2)
