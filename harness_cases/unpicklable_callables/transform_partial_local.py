"""``functools.partial`` of a function defined inside the training function."""

import functools

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-partial-local",
    "family": "unpicklable-callables",
    "title": "functools.partial of a local function as transform",
    "why": "A partial pickles as (function, args, keywords), so it is only as picklable as the "
    "function it wraps; 'run.<locals>.scale' cannot be looked up by name, so spawn and forkserver "
    "fail while pickling the dataset. Fork copies memory and never pickles.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-partial-toplevel",
    "matches": {
        "static": [{"rule": "HL102", "within": "functools.partial"}],
        "objects": [{"is": "local-function", "within": "functools.partial"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/167429",
        "https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled",
    ],
}


def run(cell):
    def scale(x, k):
        return x * k

    loader = DataLoader(Squares(16, transform=functools.partial(scale, k=3)), batch_size=4,
                        num_workers=cell.num_workers)
    cell.check(loader, squares(16) * 3)
