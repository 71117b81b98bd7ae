"""Sets the cell's counters to nonsense and checks nothing: not a pass, and the shard stays valid."""

CASE = {
    "id": "hostile-lies",
    "family": "hostile",
    "title": "cell.batches and first_batch_s set by hand",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    cell.batches = "many"
    cell.first_batch_s = float("nan")
