"""A good loader whose case also starts a double-fork ``setsid`` daemon and a detached child,
then passes: the harness must end both when the cell ends (see ``leaky.py``)."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

from .leaky import _daemon, _detached, _note

CASE = {
    "id": "leaky-pass",
    "family": "fixture",
    "title": "passes, leaving a daemon behind",
    "why": "test fixture for containment",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    _note("cell")
    _daemon()
    _detached()
    cell.check(DataLoader(Squares(4), batch_size=2, num_workers=cell.num_workers), squares(4))
