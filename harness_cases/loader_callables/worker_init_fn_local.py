"""A ``worker_init_fn`` defined inside the training function."""

from torch.utils.data import DataLoader, get_worker_info

from harness.case import Squares, squares

CASE = {
    "id": "worker-init-fn-local",
    "family": "loader-callables",
    "title": "worker_init_fn defined inside the training function",
    "why": "worker_init_fn runs in each worker, so spawn and forkserver pickle it; a local "
    "function ('run.<locals>.init_worker') cannot be pickled. Fork copies it and passes. "
    "In-process it is never called.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "worker-init-fn-toplevel",
    "matches": {
        "static": [{"rule": "HL102", "reaches": "worker_init_fn"}],
        "objects": [{"type": "function", "path": "worker_init_fn*"}]},
    "sources": [
        "https://github.com/pytorch/pytorch/issues/167429",
        "https://docs.pytorch.org/docs/stable/data.html#multi-process-data-loading",
    ],
}


def run(cell):
    def init_worker(worker_id):
        get_worker_info().dataset.transform = None

    loader = DataLoader(Squares(16), batch_size=4, num_workers=cell.num_workers, worker_init_fn=init_worker)
    cell.check(loader, squares(16))
