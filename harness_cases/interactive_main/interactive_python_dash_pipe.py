"""Code piped to ``python -``: the loader works under fork, but spawn workers look for a file."""

CASE = {
    "id": "interactive-python-dash-pipe",
    "family": "interactive-main",
    "title": "Training code piped to 'python -' (no script file)",
    "script": True,
    "stdin": "pipe",
    "why": "Piped to 'python -', the code runs with __main__.__file__ set to '<stdin>' (CPython's "
    "PyRun_SimpleFile does that). Spawn and forkserver take that for the main script's path and "
    "make every worker run it again: the worker fails with \"FileNotFoundError: ... '<stdin>'\" "
    "before it unpickles anything, so even a loader built only from importable pieces (as here) "
    "dies with 'DataLoader worker exited unexpectedly'. Fork never re-runs the main module. The "
    "repair is a real script file with a main guard.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "worker-died", "forkserver": "worker-died"},
    "fix": "entry-main-guard",
    "matches": {
        "errors": [{"kind": "worker-died", "text": r"No such file or directory: '[^']*<stdin>'"}],
    },
    "sources": [
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods",
        "https://github.com/pytorch/pytorch/issues/51344",
    ],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, add_one, current_cell, squares  # noqa: E402

cell = current_cell()
loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
cell.check(loader, squares(16) + 1)
