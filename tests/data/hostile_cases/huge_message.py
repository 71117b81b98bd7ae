"""Raises with a 50 MB message."""

CASE = {
    "id": "hostile-huge-message",
    "family": "hostile",
    "title": "50 MB exception message",
    "why": "test fixture",
    "expect": {"in-process": "error", "fork": "error", "spawn": "error", "forkserver": "error"},
    "sources": ["tests"],
}


def run(cell):
    raise RuntimeError("x" * 50_000_000)
