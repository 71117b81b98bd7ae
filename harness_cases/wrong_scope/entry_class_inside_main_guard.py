"""Script case: the Dataset class is defined inside ``if __name__ == "__main__":``."""

CASE = {
    "id": "entry-class-inside-main-guard",
    "family": "wrong-scope",
    "title": "Dataset class defined inside the main guard",
    "script": True,
    "why": "Instances pickle by class reference as __main__.GuardedSquares. A spawn or forkserver "
    "worker re-imports the script as __mp_main__, where the guarded block does not run, so the "
    "class is missing: \"Can't get attribute 'GuardedSquares' on <module '__mp_main__'>\", and the "
    "worker exits. Fork workers inherit the class in memory.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "main-attribute", "forkserver": "main-attribute"},
    "fix": "dataset-class-toplevel",
    "matches": {
        "static": [{"rule": "HL302", "is": "local-class"}],
        "errors": [
            {
                "kind": "main-attribute",
                "text": [
                    r"Can't get attribute '[A-Z][^']*' on <module '__mp_main__'",
                    r"module '__mp_main__' has no attribute '[A-Z][^']*'",
                ],
            }
        ],
    },
    "sources": [
        "https://github.com/pytorch/pytorch/issues/87016",
        "https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors",
    ],
}

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from harness.case import current_cell, squares  # noqa: E402

if __name__ == "__main__":

    class GuardedSquares(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return torch.tensor([i, i * i])

    cell = current_cell()
    loader = DataLoader(GuardedSquares(), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16))
