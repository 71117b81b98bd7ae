"""A lambda bound to a module-level name: still unpicklable, because its name is '<lambda>'."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-lambda-module-level",
    "family": "unpicklable-callables",
    "title": "Lambda assigned to a module-level name",
    "why": "Pickle looks functions up by __qualname__, which for any lambda is '<lambda>', not the "
    "variable it was assigned to; 'attribute lookup <lambda> on module failed' under spawn and forkserver.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-toplevel-def",
    "matches": {
        "static": [{"rule": "HL101", "scope": "module"}],
        "objects": [{"is": "lambda", "name": "<lambda>"}],
        "errors": [{"kind": "pickle", "text": "Can't pickle <function <lambda> at "}],
    },
    "sources": ["https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled"],
}

add_one = lambda x: x + 1


def run(cell):
    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
