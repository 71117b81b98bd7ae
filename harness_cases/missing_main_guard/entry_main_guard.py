"""Good script case: top-level definitions, and the entry point behind the main guard."""

CASE = {
    "id": "entry-main-guard",
    "family": "missing-main-guard",
    "title": "Script with a main guard and top-level definitions (fix)",
    "script": True,
    "why": "Workers re-import the script as __mp_main__: the guard keeps the training code from "
    "re-running, and top-level definitions are still found by name.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods"],
}

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, current_cell, squares  # noqa: E402


def add_one(x):
    return x + 1


def main():
    cell = current_cell()
    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)


if __name__ == "__main__":
    main()
