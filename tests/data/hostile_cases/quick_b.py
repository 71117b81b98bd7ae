"""A second good, quick case (concurrent-run tests): the same loader as ``quick_a``."""

from . import quick_a

CASE = {
    "id": "hostile-quick-b",
    "family": "hostile",
    "title": "good and quick",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    quick_a.run(cell)
