"""Raises with a message that is not valid UTF-8: a non-UTF-8 file name on Linux."""

import os

CASE = {
    "id": "hostile-surrogate",
    "family": "hostile",
    "title": "message with a lone surrogate",
    "why": "test fixture",
    "expect": {"in-process": "error", "fork": "error", "spawn": "error", "forkserver": "error"},
    "sources": ["tests"],
}


def run(cell):
    raise RuntimeError(os.fsdecode(b"cannot open img\xfe.png \x1b[31mred\x1b[0m"))
