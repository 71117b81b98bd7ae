"""A ``Value`` from the default context, shared with a loader told to use spawn."""

import multiprocessing

from torch.utils.data import DataLoader

from harness.case import Wrong, squares
from harness_cases.context_mixups.value_fork_context_spawn_loader import CountingSquares

CASE = {
    "id": "value-default-context-spawn-loader",
    "family": "context-mixups",
    "title": "multiprocessing.Value (default context) given to a spawn loader",
    "why": "multiprocessing.Value uses the default start method. Where that is fork (Linux up to "
    "Python 3.13) the lock is fork-made and the explicit spawn loader rejects it (\"A SemLock "
    "created in a fork context ...\"); where the default is spawn (Windows, macOS) or forkserver "
    "(Linux 3.14+) the same code passes. Code tested on a laptop fails on a Linux server. Python "
    "3.10 has no such check (it came in 3.11.5): the spawn worker uses the fork-made lock and dies "
    "with a segmentation fault (observed on 3.10.13).",
    "expect": {"in-process": "pass", "fork": "error", "spawn": "pass", "forkserver": "pass"},
    "expect_kind": {"fork": "context-mix"},
    "expect_when": [{"python": "<=3.10", "expect": {"fork": "error"}, "expect_kind": {"fork": "worker-died"}}],
    "fix": "value-loader-context",
    "sources": [
        "https://github.com/pytorch/pytorch/issues/105514",
        "https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
    ],
}


def run(cell):
    counter = multiprocessing.Value("i", 0)
    extra = {"multiprocessing_context": "spawn"} if cell.num_workers else {}
    loader = DataLoader(CountingSquares(16, counter), batch_size=4, num_workers=cell.num_workers, **extra)
    cell.check(loader, squares(16))
    if counter.value != 16:
        raise Wrong(f"the shared counter says {counter.value} items were served, expected 16")
