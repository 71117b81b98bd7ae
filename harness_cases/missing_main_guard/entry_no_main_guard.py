"""Script case: the training code runs at import time, with no main guard."""

CASE = {
    "id": "entry-no-main-guard",
    "family": "missing-main-guard",
    "title": "Script without if __name__ == '__main__'",
    "script": True,
    "why": "Spawn and forkserver workers re-import the main script; unguarded, it builds a loader and "
    "starts workers again during the bootstrapping phase, which multiprocessing refuses with a "
    "RuntimeError. The parent only sees 'DataLoader worker exited unexpectedly'.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "bootstrap", "forkserver": "bootstrap"},
    "fix": "entry-main-guard",
    "matches": {
        "static": [{"rule": "HL301"}],
        "errors": [{"kind": "bootstrap"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/46648",
        "https://github.com/pytorch/tutorials/issues/1661",
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods",
    ],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, add_one, current_cell, squares  # noqa: E402

cell = current_cell()
loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
cell.check(loader, squares(16) + 1)
