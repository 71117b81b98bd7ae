"""A lambda passed as ``collate_fn``."""

import torch
from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "collate-fn-lambda",
    "family": "loader-callables",
    "title": "collate_fn is a lambda",
    "why": "Each worker collates its own batches, so collate_fn is pickled into every spawn or "
    "forkserver worker; a lambda has no importable name (\"Can't pickle <function <lambda>>\"). "
    "Fork copies it and passes. Python 3.14 makes forkserver the Linux default, so this starts "
    "failing on Linux there too.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "collate-fn-toplevel",
    "matches": {
        "static": [{"rule": "HL101", "reaches": "collate_fn"}],
        "objects": [{"is": "lambda", "path": "collate_fn*"}]},
    "sources": [
        "https://github.com/HazyResearch/cartridges/issues/20",
        "https://github.com/vllm-project/guidellm/issues/782",
        "https://github.com/pytorch/vision/issues/5801",
    ],
}


def run(cell):
    loader = DataLoader(Squares(16), batch_size=4, num_workers=cell.num_workers,
                        collate_fn=lambda items: torch.stack(items) * 2)
    cell.check(loader, squares(16) * 2)
