"""Interactive ``__main__``: a transform defined at the prompt (REPL, ``python -i``, notebook)."""

CASE = {
    "id": "interactive-stdin-def",
    "family": "interactive-main",
    "title": "Transform defined in an interactive __main__ (REPL, notebook)",
    "script": True,
    "stdin": "interactive",
    "why": "The function pickles by reference as __main__.add_one. The interactive interpreter's "
    "__main__ (the REPL reading stdin, python -i, a notebook kernel) has no file, so a spawn or "
    "forkserver worker has nothing to re-import: unpickling fails with \"Can't get attribute "
    "'add_one' on <module '__main__' (built-in)>\" and the worker exits. No main guard helps "
    "here. Fork workers inherit the function in memory. The same text comes out of a real "
    "'python -i' fed this code on stdin.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "main-attribute", "forkserver": "main-attribute"},
    "fix": "interactive-stdin-import",
    "matches": {
        "errors": [
            {
                "kind": "main-attribute",
                "text": [
                    r"Can't get attribute '[^']+' on <module '__main__' \(",
                    r"module '__main__' has no attribute '[^']+'",
                ],
            }
        ],
    },
    "sources": [
        "https://github.com/pytorch/pytorch/issues/51344",
        "https://github.com/lava-nc/lava/issues/665",
        "https://docs.python.org/3/library/multiprocessing.html#using-a-pool-of-workers",
    ],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, current_cell, squares  # noqa: E402


def add_one(x):
    return x + 1


cell = current_cell()
loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
cell.check(loader, squares(16) + 1)
