"""Good: the ``Value`` and the loader's workers come from one and the same context."""

import multiprocessing

from torch.utils.data import DataLoader

from harness.case import Wrong, squares
from harness_cases.context_mixups.value_fork_context_spawn_loader import CountingSquares

CASE = {
    "id": "value-loader-context",
    "family": "context-mixups",
    "title": "Value created from the loader's own context (fix)",
    "why": "One context object makes both the shared Value and the loader's workers "
    "(multiprocessing_context=ctx), so the lock always matches the workers' start method.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
        "https://github.com/pytorch/pytorch/issues/105514",
    ],
}


def run(cell):
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("i", 0)
    extra = {"multiprocessing_context": ctx} if cell.num_workers else {}
    loader = DataLoader(CountingSquares(16, counter), batch_size=4, num_workers=cell.num_workers, **extra)
    cell.check(loader, squares(16))
    if counter.value != 16:
        raise Wrong(f"the shared counter says {counter.value} items were served, expected 16")
