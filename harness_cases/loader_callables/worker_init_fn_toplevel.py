"""Good: ``worker_init_fn`` is a module-level function."""

from torch.utils.data import DataLoader, get_worker_info

from harness.case import Squares, squares

CASE = {
    "id": "worker-init-fn-toplevel",
    "family": "loader-callables",
    "title": "worker_init_fn is a top-level function (fix)",
    "why": "A module-level function pickles by reference, so every worker imports and runs it.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading"],
}


def init_worker(worker_id):
    get_worker_info().dataset.transform = None


def run(cell):
    loader = DataLoader(Squares(16), batch_size=4, num_workers=cell.num_workers, worker_init_fn=init_worker)
    cell.check(loader, squares(16))
