"""Good: the ``transforms.v2.Transform`` subclass is defined at module level."""

from torch.utils.data import DataLoader
from torchvision.transforms import v2

from harness.case import Squares, squares

CASE = {
    "id": "vision-v2-toplevel-class",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.v2 Transform subclass defined at module level (fix)",
    "why": "The class is importable by name, so its instances pickle and reach spawn and "
    "forkserver workers.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:torchvision"],
    "sources": ["https://docs.pytorch.org/vision/stable/auto_examples/transforms/plot_custom_transforms.html"],
}


class AddOne(v2.Transform):
    """Adds one to every input (a v2 transform over plain tensors)."""

    def transform(self, inpt, params):
        return inpt + 1


def run(cell):
    ds = Squares(16, transform=AddOne())
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16) + 1)
