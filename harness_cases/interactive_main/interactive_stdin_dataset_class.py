"""Interactive ``__main__``: a Dataset class defined in a notebook cell or at the REPL prompt."""

CASE = {
    "id": "interactive-stdin-dataset-class",
    "family": "interactive-main",
    "title": "Dataset class defined in an interactive __main__ (notebook)",
    "script": True,
    "stdin": "interactive",
    "why": "The dataset pickles by class reference as __main__.NotebookSquares; a spawn or "
    "forkserver worker cannot re-import a __main__ without a file, so unpickling fails with "
    "\"Can't get attribute 'NotebookSquares' on <module '__main__' (built-in)>\". The usual "
    "notebook repair is to move the class into a .py module and import it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "main-attribute", "forkserver": "main-attribute"},
    "fix": "interactive-stdin-import",
    "matches": {
        "errors": [
            {
                "kind": "main-attribute",
                "text": [
                    r"Can't get attribute '[A-Z][^']*' on <module '__main__' \(",
                    r"module '__main__' has no attribute '[A-Z][^']*'",
                ],
            }
        ],
    },
    "sources": [
        "https://github.com/pytorch/pytorch/issues/51344",
        "https://github.com/jupyter/notebook/issues/5261",
    ],
}

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from harness.case import current_cell, squares  # noqa: E402


class NotebookSquares(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([i, i * i])


cell = current_cell()
loader = DataLoader(NotebookSquares(), batch_size=4, num_workers=cell.num_workers)
cell.check(loader, squares(16))
