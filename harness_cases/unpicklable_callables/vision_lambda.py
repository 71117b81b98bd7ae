"""A torchvision ``transforms.Lambda`` wrapping a lambda, built in the training function."""

from torch.utils.data import DataLoader
from torchvision import transforms

from harness.case import Squares, squares

CASE = {
    "id": "vision-lambda",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.Lambda wrapping a lambda",
    "why": "transforms.Lambda is an ordinary picklable object, but it stores the lambda it wraps, "
    "and a lambda has no importable name, so spawn and forkserver fail pickling the dataset. "
    "Fork copies memory and never pickles.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "vision-lambda-toplevel",
    "requires": ["module:torchvision"],
    "matches": {"static": [{"rule": "HL101", "within": "torchvision.transforms.Lambda"}]},
    "sources": ["https://github.com/openai/CLIP/issues/151", "https://github.com/pytorch/vision/issues/5801"],
}


def run(cell):
    ds = Squares(16, transform=transforms.Lambda(lambda x: x + 1))
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16) + 1)
