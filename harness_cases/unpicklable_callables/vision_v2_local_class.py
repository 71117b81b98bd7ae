"""A torchvision ``transforms.v2.Transform`` subclass defined inside the training function."""

from torch.utils.data import DataLoader
from torchvision.transforms import v2

from harness.case import Squares, squares

CASE = {
    "id": "vision-v2-local-class",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.v2 Transform subclass defined inside a function",
    "why": "An instance pickles by a reference to its class, and 'run.<locals>.AddOne' cannot be "
    "looked up by name, so spawn and forkserver fail pickling the dataset that holds the "
    "transform. Fork copies memory and never pickles.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "vision-v2-toplevel-class",
    "requires": ["module:torchvision"],
    "matches": {"static": [{"rule": "HL103", "base": "torchvision.transforms.v2.*"}]},
    "sources": [
        "https://github.com/xingyizhou/CenterNet/issues/649",
        "https://docs.pytorch.org/vision/stable/auto_examples/transforms/plot_custom_transforms.html",
    ],
}


def run(cell):
    class AddOne(v2.Transform):
        def transform(self, inpt, params):
            return inpt + 1

    ds = Squares(16, transform=AddOne())
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16) + 1)
