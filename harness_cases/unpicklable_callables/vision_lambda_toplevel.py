"""Good: ``transforms.Lambda`` wrapping a function defined at module level."""

from torch.utils.data import DataLoader
from torchvision import transforms

from harness.case import Squares, add_one, squares

CASE = {
    "id": "vision-lambda-toplevel",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.Lambda wrapping a top-level function (fix)",
    "why": "The wrapped function pickles by its importable name (harness.case.add_one), so the "
    "Lambda transform and the dataset reach spawn and forkserver workers.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:torchvision"],
    "sources": ["https://github.com/openai/CLIP/issues/151"],
}


def run(cell):
    ds = Squares(16, transform=transforms.Lambda(add_one))
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(16) + 1)
