"""Raises an exception whose ``__str__`` raises SystemExit and whose ``__notes__`` is not a list,
after printing 5 MB to stderr: the cell still reports it."""

import sys

CASE = {
    "id": "hostile-evil-exception",
    "family": "hostile",
    "title": "an exception that cannot be printed",
    "why": "test fixture",
    "expect": {"in-process": "error", "fork": "error", "spawn": "error", "forkserver": "error"},
    "sources": ["tests"],
}


class Evil(Exception):
    __notes__ = 5

    def __str__(self):
        raise SystemExit(3)


def run(cell):
    sys.stderr.write("x" * 5_000_000 + "\n")
    raise Evil()
