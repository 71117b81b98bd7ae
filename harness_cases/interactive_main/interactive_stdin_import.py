"""Good: the interactive ``__main__`` only imports its dataset and transform from a module."""

CASE = {
    "id": "interactive-stdin-import",
    "family": "interactive-main",
    "title": "Interactive __main__ imports dataset and transform from a module (fix)",
    "script": True,
    "stdin": "interactive",
    "why": "Everything the workers need pickles by reference to an importable module "
    "(harness.case), so the file-less interactive __main__ is never looked up. (Code piped to "
    "'python -' is another matter: see interactive-python-dash-pipe.)",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/51344",
        "https://docs.python.org/3/library/multiprocessing.html#using-a-pool-of-workers",
    ],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, add_one, current_cell, squares  # noqa: E402

cell = current_cell()
loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
cell.check(loader, squares(16) + 1)
