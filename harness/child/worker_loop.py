"""What a DataLoader worker does with what it receives, as ``_worker_loop`` does it.

Shared by :mod:`harness.inspect.worker_start` (``harness diagnose``, ``assert_spawn_safe``) and
the clean checker process of the pytest guard (:mod:`harness.child.checker`), so that both
build the first batch the same way: ``torch/utils/data/_utils/worker.py``'s seeding,
``get_worker_info()``, ``worker_init_fn(worker_id)``, and the fetcher.

A module of :mod:`harness.child`: it imports nothing of the harness outside that package.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["NOTHING", "draw_indices", "first_batch"]

#: :func:`first_batch` and :func:`draw_indices`: there is nothing (no batch the worker would
#: send back, no index drawn).
NOTHING: Any = object()


def draw_indices(index_sampler: Any) -> Any:
    """The first item the main process puts on a worker's index queue, or :data:`NOTHING`.

    Draws one batch from a fresh iterator over the loader's index sampler (its
    ``batch_sampler``, or its ``sampler`` without automatic batching), with the global random
    states of torch, ``random`` and numpy saved and restored, so the caller's streams do not
    move. An empty sampler gives :data:`NOTHING`. (An iterable dataset without batching draws
    ``None``.)

    Raises:
        BaseException: whatever the sampler, the batch sampler or the dataset's ``__len__``
            raises (a ``__len__`` that raises, a shuffle too large to allocate): the main
            process raises it too, under every start method, and no batch ever comes; the
            callers report it at ``indices``.
    """
    import random

    import numpy as np
    import torch

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            return next(iter(index_sampler), NOTHING)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def first_batch(args: Sequence[Any], indices: Any, raised: list[BaseException] | None = None) -> Any:
    """The first batch worker 0 sends back, built from ``args`` as ``_worker_loop`` builds it.

    ``args`` is the worker's own copy of the arguments (:attr:`WorkerStart.args` after a
    :func:`harness.inspect.walker.roundtrip`), so nothing the user's code does here touches the
    live loader. As in ``torch/utils/data/_utils/worker.py``: ``random``, torch and numpy are
    seeded from ``base_seed + worker_id``, ``get_worker_info()`` describes worker 0,
    ``worker_init_fn(0)`` runs, and the fetcher (``_DatasetKind.create_fetcher``) fetches
    ``indices``: ``dataset[i]`` for each index (or ``__getitems__``) then ``collate_fn`` under
    automatic batching, else ``collate_fn(dataset[index])``, or the next items of an iterable
    dataset. Torch's thread count and signal handlers are left alone. The random states and
    ``get_worker_info()`` are restored afterwards.

    Args:
        raised: where the ``Exception`` that stopped the batch is appended, when one did.

    Returns:
        The batch, or :data:`NOTHING` when the worker would send none back: ``worker_init_fn``,
        the dataset or ``collate_fn`` raised an ``Exception`` (the worker sends it to the main
        process, which re-raises it, under every start method, ``num_workers=0`` included) or
        an iterable dataset is exhausted.

    Raises:
        BaseException: what the user's code raises that is not an ``Exception``
            (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``): it ends the worker.
    """
    kind, dataset, auto_collation, collate_fn, drop_last, base_seed, init_fn, worker_id, n = args[
        :9
    ]
    with _as_worker(dataset, base_seed, worker_id, n):
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _dataset_kind().create_fetcher(
                kind, dataset, auto_collation, collate_fn, drop_last
            )
            return fetcher.fetch(indices)
        except StopIteration:  # an iterable dataset with no first item: nothing to send back
            return NOTHING
        except Exception as exc:  # noqa: BLE001 - sent to the main process and re-raised there, under every method
            if raised is not None:
                raised.append(exc)
            return NOTHING


def _dataset_kind() -> Any:
    """torch's ``_DatasetKind`` (its ``create_fetcher`` is not annotated)."""
    from torch.utils.data import _DatasetKind

    return _DatasetKind


@contextmanager
def _as_worker(dataset: Any, base_seed: int, worker_id: int, num_workers: int) -> Iterator[None]:
    """This process seeded and described as worker ``worker_id`` is by ``_worker_loop``; the
    random states of ``random``, numpy and torch and ``get_worker_info()`` restored afterwards."""
    import random

    import numpy as np
    import torch

    torch_worker: Any = importlib.import_module("torch.utils.data._utils.worker")
    py_state, np_state = random.getstate(), np.random.get_state()
    previous_info = torch_worker._worker_info
    try:
        with torch.random.fork_rng(devices=[]):
            seed = base_seed + worker_id
            random.seed(seed)
            torch.manual_seed(seed)
            np.random.seed(torch_worker._generate_state(base_seed, worker_id))
            torch_worker._worker_info = torch_worker.WorkerInfo(
                id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset
            )
            yield
    finally:
        torch_worker._worker_info = previous_info
        random.setstate(py_state)
        np.random.set_state(np_state)
