"""The case API: everything a catalogue case module needs, the built-in catalogue's and yours.

A case module declares a literal ``CASE`` dict (the format: ``harness/schemas/case.schema.json``;
README, "How to add a case") and either defines ``run(cell)`` or is a script
(``"script": True``) that calls :func:`current_cell`. It builds a real
:class:`torch.utils.data.DataLoader` with ``cell.num_workers`` workers (``0`` for the
in-process control) and hands it to :meth:`Cell.check`, which iterates it, times the first
batch, and compares every item with what was expected. A mismatch raises :class:`Wrong`, so
a ``pass`` means every expected batch arrived with the right content; a case that returns
without a checked batch is ``error``/``unchecked``, never a pass.

Exports: :class:`Cell`, :func:`current_cell`, :class:`Wrong`, :class:`Skip`, and a reference
dataset (:class:`Squares`, :func:`squares`) with picklable transforms (:func:`add_one`,
:class:`AddOne`). This module imports torch; the harness process never imports it, only cell
processes do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.data import Dataset

__all__ = ["AddOne", "Cell", "Skip", "Squares", "Wrong", "add_one", "current_cell", "squares"]

ENV_METHOD = "HARNESS_CELL_METHOD"
ENV_WORKERS = "HARNESS_CELL_WORKERS"


class Wrong(Exception):
    """The loader finished but delivered wrong data; the message is the one-line reason."""


class Skip(Exception):
    """A precondition of the case is missing (for example CUDA); the cell is ``skipped``."""


class Cell:
    """What a case needs to know about the cell it runs in.

    Attributes:
        method: ``in-process``, ``fork``, ``spawn`` or ``forkserver``.
        num_workers: ``0`` for ``in-process``, else the worker count cases should use (>= 2).
        first_batch_s: seconds from iterator creation to the first batch (set by :meth:`check`).
        batches: number of batches received by :meth:`check`.
    """

    def __init__(self, method: str, num_workers: int) -> None:
        self.method = method
        self.num_workers = num_workers
        self.first_batch_s: float | None = None
        self.batches = 0

    @property
    def in_process(self) -> bool:
        """True for the ``num_workers=0`` control."""
        return self.num_workers == 0

    def iterate(self, loader: Iterable[Any]) -> list[Any]:
        """Iterate ``loader`` once, timing the first batch; returns the batches."""
        t0 = time.perf_counter()
        out = []
        for batch in loader:
            if self.first_batch_s is None:
                self.first_batch_s = time.perf_counter() - t0
            out.append(batch)
        if self.first_batch_s is None:
            self.first_batch_s = time.perf_counter() - t0
        self.batches += len(out)
        return out

    def check(self, loader: Iterable[Any], expected: torch.Tensor) -> None:
        """Iterate ``loader`` and require its concatenated batches to equal ``expected``.

        Args:
            loader: a DataLoader whose batches are tensors of shape ``(B, *item)``.
            expected: tensor of shape ``(N, *item)``, the items in loader order.

        Raises:
            Wrong: no batch arrived, or an item is missing, duplicated or has the wrong content.
        """
        batches = self.iterate(loader)
        if not batches:
            raise Wrong(f"the loader delivered no batch; expected {expected.shape[0]} items")
        got = torch.cat([torch.as_tensor(b) for b in batches]) if batches else torch.empty(0)
        if got.shape != expected.shape:
            raise Wrong(f"expected {expected.shape[0]} items, got {got.shape[0] if got.dim() else 0}")
        if not torch.equal(got, expected):
            bad = int((got != expected).reshape(len(got), -1).any(dim=1).nonzero()[0])
            raise Wrong(f"item {bad} is {got[bad].tolist()}, expected {expected[bad].tolist()}")


_CURRENT: Cell | None = None


def current_cell() -> Cell:
    """The cell this process runs in, from the environment the harness sets.

    Outside the harness (a case run by hand) it defaults to ``spawn`` with two
    workers, the strictest setting.
    """
    global _CURRENT
    if _CURRENT is None:
        method = os.environ.get(ENV_METHOD, "spawn")
        workers = int(os.environ.get(ENV_WORKERS, "0" if method == "in-process" else "2"))
        _CURRENT = Cell(method, workers)
    return _CURRENT


def squares(n: int) -> torch.Tensor:
    """The reference items: row ``i`` is ``[i, i*i]`` (int64), shape ``(n, 2)``."""
    i = torch.arange(n, dtype=torch.int64)
    return torch.stack([i, i * i], dim=1)


class Squares(Dataset[torch.Tensor]):
    """Map-style dataset of ``n`` items ``[i, i*i]``, passed through ``transform``.

    Args:
        n: number of items.
        transform: callable applied to each item tensor of shape ``(2,)``, or ``None``.
    """

    def __init__(self, n: int, transform: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        self.n = n
        self.transform = transform

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        item = torch.tensor([i, i * i], dtype=torch.int64)
        return self.transform(item) if self.transform is not None else item


def add_one(x: torch.Tensor) -> torch.Tensor:
    """A picklable top-level transform: ``x + 1``."""
    return x + 1


class AddOne:
    """A picklable top-level callable class: ``x + self.k`` (default ``k=1``)."""

    def __init__(self, k: int = 1) -> None:
        self.k = k

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.k
