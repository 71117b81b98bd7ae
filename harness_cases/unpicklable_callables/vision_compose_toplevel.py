"""Good: ``transforms.Compose`` of functions defined at module level."""

from torch.utils.data import DataLoader
from torchvision import transforms

from harness.case import Squares, add_one, squares

CASE = {
    "id": "vision-compose-toplevel",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.Compose of top-level functions (fix)",
    "why": "Every transform in the list pickles by its importable name, so the Compose and the "
    "dataset reach spawn and forkserver workers.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:torchvision"],
    "sources": ["https://github.com/openai/CLIP/issues/151"],
}


def double(x):
    return x * 2


def run(cell):
    ds = Squares(16, transform=transforms.Compose([add_one, double]))
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), (squares(16) + 1) * 2)
