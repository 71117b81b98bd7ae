"""Saving a run's results into its runner's shard, so that no observed result is ever lost.

A shard file is shared: a narrower run (``--cases``, ``--start-method``), a resumed run and a
concurrent run into the same ``--out`` all write the same runner's shard. Every save
therefore happens under a file lock (``filelock``; the lock file is ``.<shard>.lock`` beside
the shard) and merges with what is on disk at that moment:

* a cell this run owns (one it was asked to run) takes this run's record once it has one;
  until then a record that another run wrote *during* this run is kept, and the one that was
  there when this run started is dropped (it is being re-observed);
* every other cell keeps the newest record on disk, or the one read when this run started,
  except in a split run's shard (``harness run --split``, ``exclusive``), which holds exactly
  the cells of its part: the other parts' shards hold the rest;
* ``complete`` is true only when the run finished and the shard holds a record for every
  start method of every case in its case table.

A file at the shard's path that is not a readable shard (corrupt, or written by another
harness version) is never overwritten: it is renamed to ``<name>.unreadable-<UTC time>``
first, and the run says so. When the shard cannot be written at all (a read-only or full
disk), the results go to a file in the temp directory instead, and the error names both.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from filelock import FileLock, Timeout

from harness.classify.outcomes import METHODS
from harness.errors import SaveError
from harness.shard.format import (
    SCHEMA_VERSION,
    CaseTable,
    Record,
    Runner,
    Shard,
    ShardError,
    read_shard,
    write_json_atomic,
)

__all__ = ["LOCK_TIMEOUT_S", "SaveError", "ShardWriter"]

#: Seconds a save waits for another run holding the shard's lock.
LOCK_TIMEOUT_S = 120.0

Key = tuple[str, str]


def _key(rec: Record) -> Key:
    return (rec["case"], rec["method"])


def set_aside(path: Path) -> Path:
    """Rename an unusable file at ``path`` to ``<name>.unreadable-<UTC time>``; returns the new path."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.unreadable-{stamp}")
    os.replace(path, target)
    return target


class ShardWriter:
    """Writes one run's results into ``path``, merged with the shard on disk (see module doc).

    Args:
        path: the shard file.
        runner: this run's ``runner`` object.
        table: the case table of this run's selection (:func:`harness.run.pipeline.case_table`).
        owned: the ``(case, method)`` keys this run was asked to run.
        initial: the shard that was at ``path`` when the run started, or ``None``.
        drop_cases: case ids whose records are dropped (cases no longer in the catalogue;
            the run names them).
        warn: called with one line when a file is set aside.
        exclusive: the shard holds only the ``owned`` cells (a split run's part); records of
            other cells, on disk or in ``initial``, are dropped.
    """

    def __init__(self, path: Path, *, runner: Runner, table: CaseTable, owned: set[Key],
                 initial: Shard | None = None, drop_cases: Collection[str] = frozenset(),
                 warn: Callable[[str], None] = lambda line: None, exclusive: bool = False) -> None:
        self.path = Path(path)
        self.runner = runner
        self.table = dict(table)
        self.owned = set(owned)
        self.drop_cases = set(drop_cases)
        self.exclusive = exclusive
        self._warn = warn
        initial = initial or {}
        self._initial = {_key(r): r for r in initial.get("results", ())}
        self._initial_table = dict(initial.get("cases", {}))
        self._lock = FileLock(str(self.path.with_name(f".{self.path.name}.lock")), timeout=LOCK_TIMEOUT_S)
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the last file written or read
        self._disk: Shard | None = None

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _read_disk(self) -> Shard | None:
        """The shard on disk now; re-read only when another writer changed it."""
        stamp = self._stat()
        if stamp is None:
            self._disk = None
        elif stamp != self._seen:
            try:
                data = read_shard(self.path)
            except ShardError as exc:
                moved = set_aside(self.path)
                self._warn(f"{exc}; kept as {moved.name}, not overwritten")
                data = None
            if data is not None and data["runner"].get("id") != self.runner.get("id"):
                moved = set_aside(self.path)
                self._warn(f"{self.path}: a shard of runner {data['runner'].get('id')!r}, not "
                           f"{self.runner.get('id')!r}; kept as {moved.name}, not overwritten")
                data = None
            self._disk = data
        self._seen = stamp
        return self._disk

    def merge(self, mine: list[Record], disk: Shard | None) -> tuple[list[Record], CaseTable]:
        """The merged ``(results, case table)`` of ``mine`` and ``disk`` (see the module doc)."""
        merged: dict[Key, Record] = {k: r for k, r in self._initial.items() if k not in self.owned}
        for rec in (disk or {}).get("results", ()):
            key = _key(rec)
            if key not in self.owned or rec != self._initial.get(key):
                merged[key] = rec
        for rec in mine:
            merged[_key(rec)] = rec
        results = [r for k, r in merged.items()
                   if r["case"] not in self.drop_cases and (not self.exclusive or k in self.owned)]
        present = {r["case"] for r in results}
        table = {c: m for c, m in {**self._initial_table, **(disk or {}).get("cases", {})}.items() if c in present}
        table.update(self.table)
        results.sort(key=lambda r: (r["case"], METHODS.index(r["method"]) if r["method"] in METHODS else 99))
        return results, table

    def save(self, mine: list[Record], *, finished: bool,
             finalize: Callable[[list[Record]], None] | None = None, compact: bool = False) -> list[Record]:
        """Merge ``mine`` with the shard on disk and write it, under the lock.

        Args:
            mine: this run's records (resumed ones included).
            finished: the run ran every cell it planned; ``complete`` may then be true.
            finalize: called with the merged records before they are written (marks broken
                cases across this run's and earlier records).
            compact: write the JSON on one line (a partial shard saved while cells finish;
                see :func:`~harness.shard.format.write_json_atomic`).

        Returns:
            The merged records, as written.

        Raises:
            SaveError: the shard could not be written (the results were saved elsewhere).
        """
        try:
            with self._lock:
                results, table = self.merge(mine, self._read_disk())
                if finalize is not None:
                    finalize(results)
                have = {_key(r) for r in results}
                complete = finished and all((c, m) in have for c in table for m in METHODS)
                data = {"schema_version": SCHEMA_VERSION, "complete": complete, "runner": self.runner,
                        "cases": table, "results": results}
                write_json_atomic(self.path, data, compact=compact)
                self._seen = self._stat()
                self._disk = data
                return results
        except (OSError, Timeout) as exc:
            raise SaveError(self._rescue(mine, exc)) from None

    def _rescue(self, mine: list[Record], exc: BaseException) -> str:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        data = {"schema_version": SCHEMA_VERSION, "complete": False, "runner": self.runner,
                "cases": self.table, "results": mine}
        try:
            fd, spare = tempfile.mkstemp(prefix="harness-unsaved-", suffix=".json")
            os.close(fd)
            write_json_atomic(Path(spare), data)
        except OSError:
            return f"{self.path}: cannot write the shard ({why}); the results are lost"
        return f"{self.path}: cannot write the shard ({why}); {len(mine)} result(s) saved to {spare}"
