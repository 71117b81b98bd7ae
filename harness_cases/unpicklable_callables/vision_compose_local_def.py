"""A torchvision ``transforms.Compose`` holding a function defined inside the training function."""

from torch.utils.data import DataLoader
from torchvision import transforms

from harness.case import Squares, add_one, squares

CASE = {
    "id": "vision-compose-local-def",
    "family": "unpicklable-callables",
    "title": "torchvision transforms.Compose holding a local function",
    "why": "Compose pickles its list of transforms; one of them is 'run.<locals>.double', which "
    "pickle cannot look up by name, so spawn and forkserver fail pickling the dataset.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "vision-compose-toplevel",
    "requires": ["module:torchvision"],
    "matches": {"static": [{"rule": "HL102", "within": "torchvision.transforms.Compose"}]},
    "sources": ["https://github.com/openai/CLIP/issues/151", "https://github.com/xingyizhou/CenterNet/issues/649"],
}


def run(cell):
    def double(x):
        return x * 2

    ds = Squares(16, transform=transforms.Compose([add_one, double]))
    cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), (squares(16) + 1) * 2)
