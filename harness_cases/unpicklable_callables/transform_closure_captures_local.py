"""A transform closure that captures a training-loop local."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-closure-captures-local",
    "family": "unpicklable-callables",
    "title": "Transform is a closure over a training-loop variable",
    "why": "A closure is a local function; pickle cannot name it, so spawn and forkserver fail. "
    "Pass the captured value to a top-level callable class instead.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-toplevel-class",
    "matches": {
        "static": [{"rule": "HL102", "is": "closure"}],
        "objects": [{"is": "closure"}]},
    "sources": [
        "https://github.com/xingyizhou/CenterNet/issues/649",
        "https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors",
    ],
}


def run(cell):
    offset = 1

    def shift(x):
        return x + offset

    loader = DataLoader(Squares(16, transform=shift), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + offset)
