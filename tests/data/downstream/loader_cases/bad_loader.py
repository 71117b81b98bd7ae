"""mypkg's other loader: a lambda transform and a local worker_init_fn."""

from mypkg.data import double, expected, make_bad_loader

CASE = {
    "id": "mypkg-bad-loader",
    "family": "mypkg",
    "title": "make_bad_loader() with a lambda and a local worker_init_fn",
    "why": "A lambda and a function defined inside another have no importable name: spawn and "
    "forkserver cannot pickle them; fork copies them.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "mypkg-loader",
    "sources": ["mypkg/data.py"],
}


def run(cell):
    cell.check(make_bad_loader(cell.num_workers), expected(8, double))
