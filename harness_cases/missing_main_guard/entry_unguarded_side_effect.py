"""Script case: the loader is guarded, but start-up work above the guard is not."""

CASE = {
    "id": "entry-unguarded-side-effect",
    "family": "missing-main-guard",
    "title": "Start-up work outside the main guard re-runs in workers",
    "script": True,
    "why": "Only the loader is inside the guard; the start-up step above it (standing for a "
    "download, a cache build or a log header) runs whenever the script is imported. Spawn and "
    "forkserver workers re-import the script as __mp_main__, so it runs again in each worker: "
    "with 2 workers the case counts 3 runs in 3 processes. Fork never re-imports. Nothing fails; "
    "the work is silently repeated (and, if slow, delays every worker's first batch).",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "wrong", "forkserver": "wrong"},
    "fix": "entry-main-guard",
    "sources": [
        "https://github.com/pytorch/pytorch/issues/12831",
        "https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods",
    ],
}

import os  # noqa: E402
import tempfile  # noqa: E402

from torch.utils.data import DataLoader  # noqa: E402

from harness.case import Squares, Wrong, add_one, current_cell, squares  # noqa: E402

# Start-up work that should happen once per program: it records each run in a log shared by
# the parent and its workers (the environment variable is inherited by every child).
RUN_LOG = os.environ.setdefault(
    "UNGUARDED_CASE_LOG", os.path.join(tempfile.gettempdir(), f"startup-{os.getpid()}.log"))
with open(RUN_LOG, "a", encoding="ascii") as log:
    log.write(f"{os.getpid()}\n")

if __name__ == "__main__":
    cell = current_cell()
    loader = DataLoader(Squares(16, transform=add_one), batch_size=4, num_workers=cell.num_workers)
    cell.check(loader, squares(16) + 1)
    with open(RUN_LOG, encoding="ascii") as log:
        runs = log.read().split()
    if len(runs) != 1:
        raise Wrong(f"start-up code outside the main guard ran {len(runs)} times "
                    f"(in {len(set(runs))} processes), expected once")
