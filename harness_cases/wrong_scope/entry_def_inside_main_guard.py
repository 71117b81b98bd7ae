"""Script case: a transform defined inside ``if __name__ == "__main__":``."""

CASE = {
    "id": "entry-def-inside-main-guard",
    "family": "wrong-scope",
    "title": "Function defined inside the main guard, passed to workers",
    "script": True,
    "why": "The function pickles by reference as __main__.add_one. A spawn or forkserver worker "
    "re-imports the script as __mp_main__, where the guarded block does not run, so unpickling "
    "fails with \"Can't get attribute 'add_one' on <module '__mp_main__'>\" and the worker exits.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "main-attribute", "forkserver": "main-attribute"},
    "fix": "entry-main-guard",
    "matches": {
        "static": [{"rule": "HL302", "is": "local-function"}],
        "errors": [
            {
                "kind": "main-attribute",
                "text": [
                    r"Can't get attribute '[^']+' on <module '__mp_main__'",
                    r"module '__mp_main__' has no attribute '[^']+'",
                ],
            }
        ],
    },
    "sources": ["https://github.com/pytorch/pytorch/issues/87016"],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, current_cell, squares  # noqa: E402

if __name__ == "__main__":

    def add_one(x):
        return x + 1

    cell = current_cell()
    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
