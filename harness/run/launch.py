"""Launching and watching one cell process: start it, sample it, enforce its timeout, clean up.

Two isolation modes start a cell's process:

* ``warm`` (the default on Linux): forked from a template interpreter that has already
  imported torch (:mod:`harness.run.warm`), so a cell costs a fork instead of an
  interpreter start plus ``import torch`` (about 1.5 s).
* ``fresh`` (Windows, macOS, ``--isolation fresh``, or after the template failed):
  ``python -m harness.child.cell`` in a new interpreter.

Either way the cell leads its own session and process group, its exit wakes the watcher at
once (a pidfd or the template's report), not at the next polling tick, and when it ends every
process that belonged to it is killed (workers, forkserver, resource tracker). The harness
process never imports case code; see :mod:`harness.child.cell` for the cell side.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from harness._progress import say
from harness.classify.classifier import Observation
from harness.run.containment import child_env, reap_orphans, track, track_dir, untrack, untrack_dir
from harness.run.plan import PEAKS_FOLDER, SELF_REPORTED_PEAKS, CellSpec, cell_env, cell_temp_root
from harness.run.sampler import TreeSampler, kill_tree, read_peak_reports
from harness.run.warm import Template, TemplateError, WarmChild

__all__ = ["CellRun", "KILL_WAIT_S", "STDERR_READ_BYTES", "Slot", "kill_live_cells", "launch_cell"]

KILL_WAIT_S = 10.0  # seconds to wait for a killed cell to be reaped
IDLE_CHECK_S = 1.0  # how often a running cell's CPU use is checked
IDLE_AFTER_S = 1.0  # a cell this long under IDLE_CPU_FRACTION of a core gives its permit back
IDLE_CPU_FRACTION = 0.05


@dataclass
class CellRun:
    """What launching one cell produced: the raw observation plus measured costs, and the end
    of the cell's standard output (at most :data:`STDOUT_READ_BYTES`; ``harness reproduce``
    shows it: it is the user's script's own output)."""

    observation: Observation
    wall_s: float
    parent_peak_rss: int
    worker_peak_rss: int
    worker_peak_uss: int
    workers_seen: int
    leftovers: list[int]
    isolation: str = "fresh"
    stdout: str = ""


class _FreshChild:
    """A cell in a fresh interpreter: a :class:`subprocess.Popen` whose exit wakes a waiter at once.

    On Linux a pidfd (``os.pidfd_open``, Linux 5.3) becomes readable when the process exits,
    so :meth:`wait` returns without the polling delay of ``Popen.wait(timeout)``.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self._pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(proc.pid)
            except OSError:
                self._pidfd = None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    lost = False

    def wait(self, timeout: float | None) -> bool:
        if timeout is None:
            self.proc.wait()
            return True
        if self._pidfd is not None:
            ready, _, _ = select.select([self._pidfd], [], [], max(0.0, timeout))
            if not ready:
                return False
            self.proc.wait()
            return True
        try:
            self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class Slot:
    """One of ``--jobs`` permits, held by a running cell until it ends or goes idle.

    A cell whose whole process tree has used almost no CPU for :data:`IDLE_AFTER_S` seconds
    (a hang waiting for its timeout, a deadlocked worker) gives its permit back, so the cores
    it does not use run the next cell. It never takes a permit again.
    """

    def __init__(self, sem: threading.Semaphore | None = None) -> None:
        self._sem = sem
        self._lock = threading.Lock()
        self.held = sem is not None
        self.parked = False

    def release(self, parked: bool = False) -> None:
        """Give the permit back (once); ``parked`` marks a cell that still runs, idle."""
        with self._lock:
            if not self.held:
                return
            self.held = False
            self.parked = parked
        assert self._sem is not None
        self._sem.release()


class _IdleWatch:
    """Whether a cell's process tree has been idle: under :data:`IDLE_CPU_FRACTION` of one core
    over the last :data:`IDLE_AFTER_S` seconds (process CPU times from psutil)."""

    def __init__(self, t0: float) -> None:
        self._mark = t0
        self._cpu: dict[int, float] = {}
        self._idle_since: float | None = None

    def idle(self, sampler: TreeSampler, now: float) -> bool:
        if now - self._mark < IDLE_CHECK_S:
            return False
        cpu: dict[int, float] = {}
        for pid, proc in sampler.current.items():
            try:
                t = proc.cpu_times()
            except psutil.Error:
                continue
            cpu[pid] = t.user + t.system
        used = sum(v - self._cpu.get(pid, 0.0) for pid, v in cpu.items())
        window = now - self._mark
        self._mark, self._cpu = now, cpu
        if used > IDLE_CPU_FRACTION * window:
            self._idle_since = None
            return False
        if self._idle_since is None:
            self._idle_since = now - window
        return now - self._idle_since >= IDLE_AFTER_S


_WARNED: set[str] = set()
_SUBREAPER: bool | None = None


def _become_subreaper() -> bool:
    """Make this process adopt orphans of its descendants (Linux ``PR_SET_CHILD_SUBREAPER``).

    A cell's helpers (resource tracker, forkserver) and killed workers outlive the cell and
    are reparented; under init they linger as zombies until init reaps them, which
    :func:`~harness.run.sampler.kill_tree` would wait for (seconds, on some systems). Adopted by
    the harness they are reaped by that same wait at once (``prctl(2)``). Idempotent.
    """
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                _SUBREAPER = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
            except (OSError, AttributeError):
                _SUBREAPER = False
    return _SUBREAPER


def _warn_once(line: str) -> None:
    if line not in _WARNED:
        _WARNED.add(line)
        say(line, command="")


class CellProcess(Protocol):
    """One running cell process, fresh (:class:`_FreshChild`) or forked by the warm template
    (:class:`~harness.run.warm.WarmChild`): what the watcher needs of either."""

    pid: int
    lost: bool  # the process that started it died before it could report this one's exit

    @property
    def returncode(self) -> int | None: ...

    def wait(self, timeout: float | None) -> bool: ...


@dataclass
class _Workdir:
    """A cell's own folder: its ``TMPDIR`` and cwd, its result, stdout and stderr files and the
    folder its processes report their peaks to; removed (and forgotten) with :meth:`remove`."""

    path: Path
    result: Path = field(init=False)
    stdout: Path = field(init=False)
    stderr: Path = field(init=False)
    peaks: Path = field(init=False)

    def __post_init__(self) -> None:
        self.result, self.stdout, self.stderr = (self.path / n for n in ("result.json", "stdout.txt", "stderr.txt"))
        self.peaks = self.path / PEAKS_FOLDER

    @classmethod
    def create(cls) -> _Workdir:
        work = cls(Path(tempfile.mkdtemp(prefix="hc-", dir=cell_temp_root())))
        with _LIVE_LOCK:
            _LIVE_DIRS.add(work.path)
        track_dir(work.path)
        work.peaks.mkdir()  # stdout and stderr are created as the cell starts
        return work

    def remove(self) -> None:
        _remove_workdir(self.path)


def _start(spec: CellSpec, work: _Workdir, template: Template | None) -> tuple[CellProcess, float]:
    """Start the cell process, forked from ``template`` or as a fresh interpreter; returns it
    and the monotonic time its clock starts (after a first fork waited for the template).

    Raises:
        TemplateError: the template could not fork it.
    """
    env = child_env(cell_env(spec, work.path, work.stderr))
    args = [json.dumps(spec.to_child()), str(work.result)]
    if template is not None:
        template.wait_ready()
        t0 = time.monotonic()
        child = template.fork(argv=["-m", *args], env=env, cwd=str(work.path),
                              stdout=str(work.stdout), stderr=str(work.stderr))
        return child, t0
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    t0 = time.monotonic()
    with open(work.stderr, "wb") as err, open(work.stdout, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.child.cell", *args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=work.path, env=env, **kwargs,
        )
    return _FreshChild(proc), t0


def _watch(child: CellProcess, sampler: TreeSampler, spec: CellSpec, t0: float,
           slot: Slot | None) -> bool:
    """Wait for the cell to end, sampling it at the sampler's cadence (an exit wakes the wait
    at once) and handing its permit on once it is idle; kill its tree at the timeout. True if
    it timed out."""
    every = min(sampler.interval(), IDLE_CHECK_S)
    idle = _IdleWatch(t0) if slot is not None else None
    deadline = t0 + spec.timeout_s
    while True:
        if child.wait(min(every, max(0.0, deadline - time.monotonic()))):
            return False
        now = time.monotonic()
        if now >= deadline:
            sampler.stop()  # the last reading of what is about to be killed
            kill_tree(child.pid, sampler.procs.values())
            child.wait(KILL_WAIT_S)
            return True
        sampler.sample()
        if idle is not None and slot is not None and slot.held and idle.idle(sampler, now):
            slot.release(parked=True)


def _end(child: CellProcess, sampler: TreeSampler) -> list[int]:
    """Stop sampling, kill whatever is left of the cell's tree, forget it; the pids that
    survived the kill (normally none)."""
    sampler.stop()
    leftovers = kill_tree(child.pid, sampler.procs.values())
    _unregister(child.pid)
    untrack(child.pid)
    reap_orphans()
    if isinstance(child, _FreshChild):
        child.close()
    return leftovers


def _collect(child: CellProcess, sampler: TreeSampler, work: _Workdir, wall: float, timed_out: bool,
             leftovers: list[int]) -> CellRun:
    """What the cell left: its result file, its stderr's end, its processes' own memory
    reports merged into what was sampled; then its folder is removed."""
    result = None
    if work.result.exists():
        try:
            result = json.loads(work.result.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            result = None
    stderr = _read_tail(work.stderr, STDERR_READ_BYTES)
    stdout = _read_tail(work.stdout, STDOUT_READ_BYTES)
    sampler.absorb(read_peak_reports(work.peaks))
    if isinstance(child, WarmChild):
        sampler.absorb_reaped_cell(child.maxrss)
    work.remove()
    return CellRun(
        observation=Observation(child.returncode, timed_out, result, stderr),
        wall_s=wall,
        parent_peak_rss=sampler.parent_peak_rss,
        worker_peak_rss=sampler.worker_peak_rss,
        worker_peak_uss=sampler.worker_peak_uss,
        workers_seen=len(sampler.workers_seen),
        leftovers=leftovers,
        isolation="fresh" if isinstance(child, _FreshChild) else "warm",
        stdout=stdout,
    )


def launch_cell(spec: CellSpec, *, template: Template | None = None,
                stop: threading.Event | None = None, slot: Slot | None = None) -> CellRun:
    """Run one cell in its own process and process group; wait, watch and clean up.

    Args:
        spec: the cell.
        template: fork the cell from this warm template (:mod:`harness.run.warm`); ``None``
            starts a fresh interpreter (``python -m harness.child.cell``). If the template
            fails (cannot fork, or dies under the cell), the cell is run again in a fresh
            interpreter, and so is every later cell, with one warning on stderr.
        stop: when set (an interrupted run), the cell is killed as soon as it is registered.
        slot: the ``--jobs`` permit this cell holds; released early when the cell goes idle.

    The cell is killed with its whole tree when ``spec.timeout_s`` expires. Afterwards every
    process that belonged to it is killed too (workers, forkserver, resource tracker).
    """
    _become_subreaper()
    stopping = stop is not None and stop.is_set
    for warm in (template, None):  # a failed warm start is retried once, fresh
        if warm is not None and warm.failed:
            continue
        work = _Workdir.create()
        try:
            child, t0 = _start(spec, work, warm)
        except TemplateError as exc:
            work.remove()
            if stopping and stopping():  # the run is being interrupted: start nothing
                return CellRun(Observation(None, False, None, ""), 0.0, 0, 0, 0, 0, [])
            assert warm is not None
            warm.failed = True
            _warn_once(f"warm template failed ({exc}); cells start fresh interpreters from now on")
            continue
        track(child.pid)
        sampler = TreeSampler(child.pid, peaks=work.peaks if SELF_REPORTED_PEAKS else None,
                              launcher=warm is None)
        if not _register(child.pid, sampler, stop):
            kill_tree(child.pid, sampler.procs.values())
        timed_out = _watch(child, sampler, spec, t0, slot)
        wall = time.monotonic() - t0
        leftovers = _end(child, sampler)
        if child.lost and warm is not None and not (stopping and stopping()):
            warm.failed = True
            _warn_once("warm template died; cells start fresh interpreters from now on")
            work.remove()
            continue
        return _collect(child, sampler, work, wall, timed_out, leftovers)
    raise AssertionError("unreachable: the fresh attempt always returns")  # pragma: no cover


#: Bytes of a cell's stderr the harness reads (the end of it): enough for every traceback the
#: classifier looks for, bounded when a cell prints gigabytes.
STDERR_READ_BYTES = 1 << 20
#: Bytes of a cell's stdout the harness reads (the end of it), for ``harness reproduce``.
STDOUT_READ_BYTES = 64 << 10


def _read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of ``path`` as text (undecodable bytes replaced); ``""`` if unreadable."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


_LIVE: dict[int, TreeSampler] = {}
_LIVE_DIRS: set[Path] = set()  # work folders of cells not yet cleaned up
_LIVE_LOCK = threading.Lock()


def _register(pid: int, sampler: TreeSampler, stop: threading.Event | None) -> bool:
    """Track a running cell for :func:`kill_live_cells`; False when ``stop`` is already set.

    ``stop`` is checked under the same lock :func:`kill_live_cells` takes, so a cell started
    while a run is being interrupted is either killed there or by its own launcher.
    """
    with _LIVE_LOCK:
        _LIVE[pid] = sampler
        return not (stop is not None and stop.is_set())


def _unregister(pid: int) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(pid, None)


def kill_live_cells() -> None:
    """Kill every cell process tree still running, and remove the work folders of cells that
    were launched but not cleaned up (used on interrupt)."""
    with _LIVE_LOCK:
        live = list(_LIVE.items())
    for pid, sampler in live:
        kill_tree(pid, sampler.procs.values())
    with _LIVE_LOCK:
        dirs = list(_LIVE_DIRS)
    for d in dirs:
        _remove_workdir(d)


def _remove_workdir(workdir: Path) -> None:
    """Remove a cell's work folder and forget it."""
    shutil.rmtree(workdir, ignore_errors=True)
    with _LIVE_LOCK:
        _LIVE_DIRS.discard(workdir)
    untrack_dir(workdir)


