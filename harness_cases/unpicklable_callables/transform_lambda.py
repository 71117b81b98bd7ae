"""A transform given as a lambda, as in ``transforms.Lambda(lambda x: ...)``."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "transform-lambda",
    "family": "unpicklable-callables",
    "title": "Transform is a lambda created in the training function",
    "why": "A lambda has no importable name ('<lambda>'), so the ForkingPickler used by spawn and "
    "forkserver cannot pickle the dataset that holds it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "transform-toplevel-def",
    "matches": {
        "static": [{"rule": "HL101", "scope": "function"}],
        "objects": [{"is": "lambda"}], "errors": [{"kind": "pickle", "text": "<lambda>"}]},
    "sources": ["https://github.com/openai/CLIP/issues/151", "https://github.com/pytorch/vision/issues/5801"],
}


def run(cell):
    loader = DataLoader(Squares(16, transform=lambda x: x + 1), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
