"""Good: the loader runs in a non-daemonic child process, which may have workers."""

import multiprocessing

import torch
from torch.utils.data import DataLoader

from harness.case import Cell, Squares, Wrong, squares

CASE = {
    "id": "loader-in-child-process",
    "family": "context-mixups",
    "title": "DataLoader iterated in a non-daemonic Process (fix)",
    "why": "A Process started with daemon=False may start children, so its loader can have "
    "workers; the result comes back through a queue.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/15950",
        "https://docs.python.org/3/library/multiprocessing.html#multiprocessing.Process.daemon",
    ],
}


def evaluate(num_workers, results):
    """Runs in the child: iterate a loader; send every item and the first batch's delay (s) back."""
    loader = DataLoader(Squares(16), batch_size=4, num_workers=num_workers)
    timer = Cell("child", num_workers)
    results.put((torch.cat(timer.iterate(loader)).tolist(), timer.first_batch_s))


def run(cell):
    results = multiprocessing.Queue()
    child = multiprocessing.Process(target=evaluate, args=(cell.num_workers, results), daemon=False)
    child.start()
    items, cell.first_batch_s = results.get(timeout=50)
    got = torch.tensor(items)
    cell.batches += len(got) // 4
    child.join()
    if child.exitcode != 0 or not torch.equal(got, squares(16)):
        raise Wrong(f"the child exited with {child.exitcode} and returned {got.tolist()}")
