"""mypkg's loader as users build it: a top-level transform."""

from mypkg.data import double, expected, make_loader

CASE = {
    "id": "mypkg-loader",
    "family": "mypkg",
    "title": "make_loader() with a top-level transform",
    "why": "Everything the workers need pickles by reference to mypkg.data.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["mypkg/data.py"],
}


def run(cell):
    cell.check(make_loader(cell.num_workers), expected(8, double))
