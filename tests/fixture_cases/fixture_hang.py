"""A dataset whose ``__getitem__`` never returns: the cell must end as ``hang``."""

import time

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "fixture-hang",
    "family": "fixture",
    "title": "getitem sleeps forever",
    "why": "test fixture",
    "expect": {"in-process": "hang", "fork": "hang", "spawn": "hang", "forkserver": "hang"},
    "sources": ["tests"],
}


class Sleeper(Squares):
    def __getitem__(self, i):
        time.sleep(3600)


def run(cell):
    cell.check(DataLoader(Sleeper(4), batch_size=2, num_workers=cell.num_workers), squares(4))
