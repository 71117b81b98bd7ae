"""The pool: run cells ``--jobs`` at a time, each on its own thread, in the order given.

An idle cell (a hang waiting for its timeout) hands its permit on (:class:`~harness.run.launch.Slot`),
so the cores it does not use run the next cell. On an interrupt no new cell starts and every
running one is killed with its tree (:func:`~harness.run.launch.kill_live_cells`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from harness.run.launch import KILL_WAIT_S, Slot, kill_live_cells
from harness.run.plan import CellSpec, resolve_isolation
from harness.run.records import run_one
from harness.run.warm import Template

__all__ = ["run_cells"]


def _join(threads: list[threading.Thread], timeout: float | None = None) -> None:
    """Join ``threads`` in short steps, so a signal reaches the main thread on every platform."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for t in threads:
        while t.is_alive():
            if deadline is not None and time.monotonic() >= deadline:
                return
            t.join(0.2)


def run_cells(specs: list[CellSpec], runner_id: str, jobs: int,
              on_done: Callable[[dict[str, Any]], None] | None = None,
              stop: threading.Event | None = None, *, isolation: str | None = "auto",
              template: Template | None = None, park_idle: bool = True) -> list[dict[str, Any]]:
    """Run ``specs`` in their given order, ``jobs`` at a time; ``on_done(record)`` after each cell.

    A cell holds one of ``jobs`` permits while it runs; a cell that goes idle (see
    :class:`Slot`) hands its permit to the next cell. Put the longest cells first (see
    :func:`harness.run.schedule.longest_first`) so no core idles at the end.

    Args:
        specs: the cells, in start order.
        runner_id: the shard's runner id, copied into each record.
        jobs: how many cells may use the CPU at once.
        on_done: called (under a lock) with each record as its cell finishes.
        stop: set it to stop starting cells; running cells are killed and not recorded.
        isolation: ``auto`` (warm where available), ``warm`` or ``fresh``; ignored when
            ``template`` is given.
        template: a started :class:`~harness.run.warm.Template` to fork cells from; the
            caller closes it. Without one, a warm run starts and closes its own.
        park_idle: let an idle cell hand its permit on (see :class:`Slot`); ``False`` keeps
            at most ``jobs`` cells alive at any time (``jobs=1``: strictly one after another).

    On ``KeyboardInterrupt`` (or when ``stop`` is set) no new cell starts, running cells are
    killed with their trees (and an own template with its children) and are not recorded, and
    the interrupt propagates.
    """
    pool = _Pool(runner_id, jobs, on_done, stop or threading.Event(), park_idle)
    own: Template | None = None
    if template is None and resolve_isolation(isolation) == "warm" and specs:
        own = template = Template().start()
    pool.template = template
    try:
        pool.start_all(specs)
        _join(pool.threads)
        if pool.errors:
            raise pool.errors[0]
        if pool.stop.is_set():
            raise KeyboardInterrupt
    except BaseException:
        pool.stop.set()
        kill_live_cells()
        if own is not None:
            own.close()
        _join(pool.threads, timeout=KILL_WAIT_S * 2)
        kill_live_cells()
        raise
    finally:
        if own is not None:
            own.close()
    return pool.records


class _Pool:
    """The threads of one :func:`run_cells` call: one per started cell, ``jobs`` permits."""

    def __init__(self, runner_id: str, jobs: int, on_done: Callable[[dict[str, Any]], None] | None,
                 stop: threading.Event, park_idle: bool) -> None:
        self.runner_id, self.on_done, self.stop, self.park_idle = runner_id, on_done, stop, park_idle
        self.template: Template | None = None
        self.lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []
        self.sem = threading.Semaphore(max(1, jobs))
        self.threads: list[threading.Thread] = []

    def _permit(self) -> bool:
        """Wait for a permit, checking ``stop`` every 0.2 s; False (holding none) once stopped."""
        while not self.stop.is_set():
            if self.sem.acquire(timeout=0.2):
                if self.stop.is_set():
                    self.sem.release()
                    return False
                return True
        return False

    def start_all(self, specs: list[CellSpec]) -> None:
        """Start each cell on its own thread as a permit frees, in order, until stopped."""
        for spec in specs:
            if not self._permit():
                return
            t = threading.Thread(target=self._task, args=(spec, Slot(self.sem)), daemon=True,
                                 name=f"cell-{spec.case.id}-{spec.method}")
            t.start()
            self.threads.append(t)

    def _task(self, spec: CellSpec, slot: Slot) -> None:
        try:
            if self.stop.is_set():
                return
            rec = run_one(spec, self.runner_id, template=self.template, stop=self.stop,
                          slot=slot if self.park_idle else None)
            if self.stop.is_set():
                return
            with self.lock:
                self.records.append(rec)
                if self.on_done:
                    self.on_done(rec)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            self.errors.append(exc)
            self.stop.set()
        finally:
            slot.release()
