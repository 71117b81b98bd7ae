"""Run cells in isolation: one new process and process group per cell, under a watchdog.

Flow: plan cells (case × method) → launch each in its own process → sample its memory and
enforce the timeout → kill whatever is left of its tree → classify → record. The harness
process never imports case code; see :mod:`harness.child.cell` for the cell side.

Two isolation modes start a cell's process:

* ``warm`` (the default on Linux): forked from a template interpreter that has already
  imported torch (:mod:`harness.run.warm`), so a cell costs a fork instead of an
  interpreter start plus ``import torch`` (about 1.5 s).
* ``fresh`` (Windows, macOS, or ``--isolation fresh``): ``python -m harness.child.cell`` in a new
  interpreter.

Either way the cell leads its own session and process group, and its exit wakes the watcher
at once (a pidfd or the template's report), not at the next polling tick.
"""

from __future__ import annotations

import json
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from harness._options import DEFAULT_TIMEOUT_S, DEFAULT_WORKERS
from harness._policy import Platform, available_methods, current_os, platform_of, profile
from harness._progress import say
from harness.catalogue.discover import Case
from harness.classify.classifier import (
    CLASSIFIER_VERSION,
    EVIDENCE_CHARS,
    MESSAGE_CHARS,
    Observation,
    Verdict,
    classify,
    clip,
    evidence_of,
)
from harness.classify.outcomes import IN_PROCESS, matches_expectation
from harness.errors import UsageError
from harness.run.containment import child_env, reap_orphans, track, track_dir, untrack, untrack_dir
from harness.run.sampler import PEAKS_ENV, TreeSampler, kill_tree, read_peak_reports
from harness.run.warm import Template, TemplateError, WarmChild, warm_available

__all__ = [
    "CellRun",
    "CellSpec",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_WORKERS",
    "CELL_SITE_DIR",
    "ISOLATIONS",
    "SHORT_TEMP_ROOT",
    "Slot",
    "kill_live_cells",
    "cell_env",
    "cell_temp_root",
    "emulated_temp_dir",
    "launch_cell",
    "mark_broken",
    "plan",
    "record_for",
    "resolve_isolation",
    "run_cells",
    "run_one",
]

ISOLATIONS = ("warm", "fresh")
SAMPLE_INTERVAL_S = 0.05  # memory samples and timeout checks; an exit wakes the watcher at once
KILL_WAIT_S = 10.0  # seconds to wait for a killed cell to be reaped
IDLE_CHECK_S = 0.5  # how often a running cell's CPU use is checked
IDLE_AFTER_S = 1.0  # a cell this long under IDLE_CPU_FRACTION of a core gives its permit back
IDLE_CPU_FRACTION = 0.05
WARNINGS_KEPT = 20  # distinct warnings a record keeps


@dataclass(frozen=True)
class CellSpec:
    """One cell to run: a case under one method, with its worker count, timeout (seconds) and
    the platform profile it emulates (``macos``, ``windows``; ``None``: this machine as it is)."""

    case: Case
    method: str
    num_workers: int
    timeout_s: float
    profile: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(case id, method)``, unique within a runner."""
        return (self.case.id, self.method)

    def expected(self) -> tuple[str, str | None]:
        """``(outcome, kind or None)`` the case expects of this cell on this interpreter, under
        the profile's (or this platform's) torch sharing strategy."""
        emulating = profile(self.profile) if self.profile else None
        strategy = (emulating or platform_of(current_os(), sys.version_info[:2])).sharing_strategy
        expect, kinds = self.case.expectation(sys.version_info[:2], strategy)
        return expect[self.method], kinds.get(self.method)

    def to_child(self) -> dict:
        """The :class:`~harness.child.request.CellRequest` the cell process reads, as JSON.

        A script case's ``"stdin"`` mode is read from its file here (the cell reads no ``CASE``).
        """
        from harness.catalogue.literal import declared_stdin
        from harness.child.request import CellRequest

        return CellRequest(
            module=self.case.module,
            path=str(self.case.path),
            root=str(self.case.root),
            script=self.case.script,
            method=self.method,
            num_workers=self.num_workers,
            require_check=True,
            stdin=declared_stdin(self.case.path) if self.case.script else None,
        ).as_json()


@dataclass
class CellRun:
    """What launching one cell produced: the raw observation plus measured costs."""

    observation: Observation
    wall_s: float
    parent_peak_rss: int
    worker_peak_rss: int
    worker_peak_uss: int
    workers_seen: int
    leftovers: list[int]
    isolation: str = "fresh"


def plan(cases: Iterable[Case], methods: Iterable[str], timeout_s: float,
         num_workers: int = DEFAULT_WORKERS, *, timeout_scale: float = 1.0,
         profile: str | None = None) -> list[CellSpec]:
    """Every (case, method) cell, in-process control first for each case.

    Args:
        timeout_s: the run's per-cell timeout in seconds; a case's own ``timeout_s`` wins.
        timeout_scale: multiplies every timeout (slow runners: ``HARNESS_TIMEOUT_SCALE``).
        profile: the platform profile every cell emulates, or ``None``.
    """
    methods = list(methods)
    return [
        CellSpec(case, m, 0 if m == IN_PROCESS else num_workers,
                 (case.timeout_s or timeout_s) * timeout_scale, profile)
        for case in cases
        for m in methods
    ]


#: Where a cell's work folder goes on POSIX when the system temp directory is long. AF_UNIX
#: socket paths are limited to 104 bytes on macOS and 108 on Linux (``sun_path``), and a cell's
#: processes make sockets under its ``TMPDIR``: the forkserver's listener
#: (``multiprocessing.connection.arbitrary_address``: ``<TMPDIR>/pymp-XXXXXXXX/listener-XXXXXXXX``)
#: and torch's shared-memory manager (``torch_shm_manager``, the ``file_system`` strategy).
#: Under macOS's ``/var/folders/<2>/<28>/T/`` (49 characters) plus a work folder they do not
#: fit: forkserver fails with "AF_UNIX path too long" and the manager never starts.
SHORT_TEMP_ROOT = "/tmp"
#: A temp directory longer than this (characters) is replaced by :data:`SHORT_TEMP_ROOT`.
SHORT_TEMP_MAX_CHARS = 24


def cell_temp_root(system_temp: str | None = None) -> str:
    """The directory cell work folders are made in.

    The system temp directory (``tempfile.gettempdir()``), unless it is on POSIX and longer
    than :data:`SHORT_TEMP_MAX_CHARS` characters and :data:`SHORT_TEMP_ROOT` is a writable
    directory: then that one, so AF_UNIX socket paths under a cell's ``TMPDIR`` stay far
    below macOS's 104-byte limit. Windows uses no AF_UNIX sockets here and keeps its own.
    """
    base = system_temp or tempfile.gettempdir()
    if (os.name == "posix" and len(base) > SHORT_TEMP_MAX_CHARS and os.path.isdir(SHORT_TEMP_ROOT)
            and os.access(SHORT_TEMP_ROOT, os.W_OK | os.X_OK)):
        return SHORT_TEMP_ROOT
    return base


class emulated_temp_dir:  # noqa: N801 - used like a function returning a handle
    """Make this process's ``TMPDIR`` as long as the emulated platform's default temp directory.

    Everything the run starts (the warm template, cells) inherits it, as it would on that
    platform; cells still get short work folders (:func:`cell_temp_root`).
    :meth:`close` restores the previous ``TMPDIR`` and removes the directory.
    """

    def __init__(self, emulating: Platform) -> None:
        self._old = os.environ.get("TMPDIR")
        self.path: str | None = None
        chars = emulating.temp_dir_chars
        if not chars:
            return
        base = tempfile.mkdtemp(prefix=f"{emulating.id}-")
        track_dir(base)
        # Pad with a nested folder so the whole path (with its final slash) has ``chars`` characters.
        pad = max(1, chars - len(base) - 2)
        path = os.path.join(base, "x" * pad)
        os.makedirs(path, exist_ok=True)
        self.path, self._base = path + os.sep, base
        os.environ["TMPDIR"] = self.path
        tempfile.tempdir = None

    def close(self) -> None:
        """Restore ``TMPDIR`` and remove the long directory (idempotent)."""
        if self.path is None:
            return
        if self._old is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self._old
        tempfile.tempdir = None
        shutil.rmtree(self._base, ignore_errors=True)
        untrack_dir(self._base)
        self.path = None


#: The start-up hook every new interpreter in a cell imports (see its module docstring).
CELL_SITE_DIR = Path(__file__).resolve().parent.parent / "child" / "cellsite"
#: The folder, inside a cell's work folder, its processes report their memory peaks to.
PEAKS_FOLDER = "peaks"
#: Whether a cell's processes report their own memory peaks (Linux: ``/proc/self``).
SELF_REPORTED_PEAKS = sys.platform.startswith("linux")


def cell_env(spec: CellSpec, workdir: Path, stderr_path: Path) -> dict[str, str]:
    """The complete environment of a cell process, and so of every process it starts.

    ``TMPDIR``/``TEMP``/``TMP`` are the cell's own work folder (removed with it);
    ``PYTHONPATH`` starts with the start-up hook (:data:`CELL_SITE_DIR`: worker stderr that
    reaches ``stderr_path`` even where a spawn child's ``sys.stderr`` is ``None``, and the
    profile's sharing strategy), the case's catalogue root and, for a project's own catalogue,
    the project directory (``Case.import_root``), so its package imports in the cell and in
    every worker as it would from there.
    """
    env = dict(os.environ)
    env["HARNESS_CELL_METHOD"] = spec.method
    env["HARNESS_CELL_WORKERS"] = str(spec.num_workers)
    env["HARNESS_CELL_STDERR"] = str(stderr_path)
    env[PEAKS_ENV] = str(workdir / PEAKS_FOLDER)
    env.pop("HARNESS_SHARING_STRATEGY", None)
    if spec.profile:
        env["HARNESS_SHARING_STRATEGY"] = profile(spec.profile).sharing_strategy
    for var in ("TMPDIR", "TEMP", "TMP"):
        env[var] = str(workdir)
    project = str(spec.case.import_root) if spec.case.import_root else ""
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(CELL_SITE_DIR), str(spec.case.root), project, env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def resolve_isolation(requested: str | None = "auto") -> str:
    """The isolation a run gets: ``warm`` where :func:`~harness.run.warm.warm_available`, else ``fresh``.

    Args:
        requested: ``auto`` (or ``None``), ``warm`` or ``fresh``. ``warm`` where it is not
            available (Windows, macOS) falls back to ``fresh``.

    Raises:
        UsageError: ``requested`` is none of these (also a ``ValueError``).
    """
    if requested in (None, "auto"):
        return "warm" if warm_available() else "fresh"
    if requested not in ISOLATIONS:
        raise UsageError(f"unknown isolation {requested!r} (choose from auto, {', '.join(ISOLATIONS)})")
    return "warm" if requested == "warm" and warm_available() else "fresh"


class _FreshChild:
    """A cell in a fresh interpreter: a :class:`subprocess.Popen` whose exit wakes a waiter at once.

    On Linux a pidfd (``os.pidfd_open``, Linux 5.3) becomes readable when the process exits,
    so :meth:`wait` returns without the polling delay of ``Popen.wait(timeout)``.
    """

    def __init__(self, proc: subprocess.Popen) -> None:
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
        for pid, proc in list(sampler.procs.items()):
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


def launch_cell(spec: CellSpec, *, template: Template | None = None,
                stop: threading.Event | None = None, slot: Slot | None = None) -> CellRun:
    """Run one cell in its own process and process group; wait, watch and clean up.

    Args:
        spec: the cell.
        template: fork the cell from this warm template (:mod:`harness.run.warm`); ``None``
            starts a fresh interpreter (``python -m harness.child.cell``). If the template fails,
            the cell falls back to a fresh interpreter, with one warning on stderr.
        stop: when set (an interrupted run), the cell is killed as soon as it is registered.
        slot: the ``--jobs`` permit this cell holds; released early when the cell goes idle.

    The cell is killed with its whole tree when ``spec.timeout_s`` expires. Afterwards every
    process that belonged to it is killed too (workers, forkserver, resource tracker).
    """
    _become_subreaper()
    workdir = Path(tempfile.mkdtemp(prefix="hc-", dir=cell_temp_root()))
    with _LIVE_LOCK:
        _LIVE_DIRS.add(workdir)
    track_dir(workdir)
    result_path = workdir / "result.json"
    stderr_path = workdir / "stderr.txt"
    stdout_path = workdir / "stdout.txt"
    env = child_env(cell_env(spec, workdir, stderr_path))
    args = [json.dumps(spec.to_child()), str(result_path)]
    stdout_path.touch()
    stderr_path.touch()
    (workdir / PEAKS_FOLDER).mkdir()
    child: WarmChild | _FreshChild
    if template is not None and not template.failed:
        try:
            # The first fork waits for the template's imports; the cell's clock starts after.
            template.wait_ready()
            t0 = time.monotonic()
            child = template.fork(argv=["-m", *args], env=env, cwd=str(workdir),
                                  stdout=str(stdout_path), stderr=str(stderr_path))
        except TemplateError as exc:
            _remove_workdir(workdir)
            if stop is not None and stop.is_set():  # the run is being interrupted: start nothing
                return CellRun(Observation(None, False, None, ""), 0.0, 0, 0, 0, 0, [])
            template.failed = True
            _warn_once(f"warm template failed ({exc}); cells start fresh interpreters from now on")
            return launch_cell(spec, stop=stop, slot=slot)
    else:
        kwargs: dict = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
        else:
            kwargs["start_new_session"] = True
        t0 = time.monotonic()
        with open(stderr_path, "wb") as err, open(stdout_path, "wb") as out:
            child = _FreshChild(subprocess.Popen(
                [sys.executable, "-m", "harness.child.cell", *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=workdir, env=env, **kwargs,
            ))
    track(child.pid)
    sampler = TreeSampler(child.pid, peaks=workdir / PEAKS_FOLDER if SELF_REPORTED_PEAKS else None)
    # A sampler with its own thread (Linux) samples at its own cadence; else sample here.
    self_sampling = getattr(sampler, "_thread", None) is not None
    timed_out = False
    if not _register(child.pid, sampler, stop):
        kill_tree(child.pid, sampler.procs.values())
    idle = _IdleWatch(t0) if slot is not None else None
    deadline = t0 + spec.timeout_s
    while True:
        now = time.monotonic()
        if child.wait(min(SAMPLE_INTERVAL_S, max(0.0, deadline - now))):
            break
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            kill_tree(child.pid, sampler.procs.values())
            child.wait(KILL_WAIT_S)
            break
        if not self_sampling:
            sampler.sample()
        if idle is not None and slot is not None and slot.held and idle.idle(sampler, now):
            slot.release(parked=True)
    wall = time.monotonic() - t0
    if callable(getattr(sampler, "stop", None)):
        sampler.stop()
    leftovers = kill_tree(child.pid, sampler.procs.values())
    _unregister(child.pid)
    untrack(child.pid)
    reap_orphans()
    if isinstance(child, _FreshChild):
        child.close()
    if child.lost and template is not None and not (stop is not None and stop.is_set()):
        template.failed = True
        _warn_once("warm template died; cells start fresh interpreters from now on")
        _remove_workdir(workdir)
        return launch_cell(spec, stop=stop, slot=slot)
    result = None
    if result_path.exists():
        try:
            result = json.loads(result_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            result = None
    stderr = _read_tail(stderr_path, STDERR_READ_BYTES)
    sampler.absorb(read_peak_reports(workdir / PEAKS_FOLDER))
    _remove_workdir(workdir)
    return CellRun(
        observation=Observation(child.returncode, timed_out, result, stderr),
        wall_s=wall,
        parent_peak_rss=sampler.parent_peak_rss,
        worker_peak_rss=sampler.worker_peak_rss,
        worker_peak_uss=sampler.worker_peak_uss,
        workers_seen=len(sampler.workers_seen),
        leftovers=leftovers,
        isolation="warm" if isinstance(child, WarmChild) else "fresh",
    )


#: Bytes of a cell's stderr the harness reads (the end of it): enough for every traceback the
#: classifier looks for, bounded when a cell prints gigabytes.
STDERR_READ_BYTES = 1 << 20


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


def _seconds(value: object) -> float | None:
    """A duration the cell reported, rounded to 0.1 ms; ``None`` unless a finite number >= 0
    (a case sets ``cell.first_batch_s`` itself, and may set anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return round(float(value), 4)


def record_for(spec: CellSpec, runner_id: str, verdict: Verdict, run: CellRun | None) -> dict:
    """The shard result record for one cell (see ``shard.schema.json``)."""
    res = run.observation.result if run else None
    expected, expected_kind = spec.expected()
    rec = {
        "runner": runner_id,
        "case": spec.case.id,
        "family": spec.case.family,
        "method": spec.method,
        "outcome": verdict.outcome,
        "kind": verdict.kind,
        "message": clip(verdict.message, MESSAGE_CHARS),
        "root_cause": clip(verdict.root_cause, MESSAGE_CHARS),
        "duration_s": _seconds(res.get("duration_s")) if res else None,
        "first_batch_s": _seconds(res.get("first_batch_s")) if res else None,
        "wall_s": round(run.wall_s, 4) if run else None,
        "parent_peak_rss_bytes": run.parent_peak_rss if run else None,
        "worker_peak_rss_bytes": run.worker_peak_rss if run else None,
        "worker_peak_uss_bytes": run.worker_peak_uss if run else None,
        "workers_seen": run.workers_seen if run else None,
        "warnings": [clip(w, 500) for w in res.get("warnings", [])][:WARNINGS_KEPT] if res else [],
        "expected": expected,
        "expected_kind": expected_kind,
        "matches": matches_expectation(verdict.outcome, verdict.kind, expected, expected_kind),
        "broken": False,
        "exit_code": run.observation.returncode if run else None,
        "classifier": CLASSIFIER_VERSION,
    }
    if run:
        rec["isolation"] = run.isolation
        rec["evidence"] = evidence_of(run.observation)
        if verdict.outcome not in ("pass", "unsupported", "skipped"):
            rec["stderr_tail"] = clip(run.observation.stderr, EVIDENCE_CHARS, keep="tail")
    return rec


def run_one(spec: CellSpec, runner_id: str, *, template: Template | None = None,
            stop: threading.Event | None = None, slot: Slot | None = None) -> dict:
    """Run (or mark ``unsupported``) one cell and return its record.

    Keyword arguments are those of :func:`launch_cell`.
    """
    emulating = profile(spec.profile) if spec.profile else None
    if spec.method != IN_PROCESS and spec.method not in available_methods(emulating):
        where = f"on {emulating.id}" if emulating else "on this platform"
        verdict = Verdict("unsupported", None, f"start method {spec.method!r} does not exist {where}", "")
        return record_for(spec, runner_id, verdict, None)
    run = launch_cell(spec, template=template, stop=stop, slot=slot)
    return record_for(spec, runner_id, classify(run.observation), run)


def mark_broken(records: list[dict], cases: dict[str, Case]) -> list[str]:
    """Flag every record of a case whose in-process control did not pass, or whose module
    failed to import in any cell.

    Returns one line per broken case, naming its file and its control's (or import) error.
    """
    lines = []
    done: set[str] = set()
    for rec in records:
        # A module that fails to import is broken whichever methods were selected.
        failed_import = rec["outcome"] == "error" and rec["kind"] == "import"
        if rec["case"] in done or not (failed_import or rec["method"] == IN_PROCESS):
            continue
        case = cases[rec["case"]]
        if not failed_import and (rec["outcome"] in ("pass", "skipped") or rec["expected"] != "pass"):
            continue
        done.add(case.id)
        for other in records:
            if other["case"] == rec["case"]:
                other["broken"] = True
                other["matches"] = False
        what = "the module failed to import" if failed_import else f"in-process control gave {rec['outcome']}"
        lines.append(f"{case.path}: broken case {case.id!r}: {what}: {rec['message'] or rec['root_cause']}")
    return lines


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


def _join(threads: list[threading.Thread], timeout: float | None = None) -> None:
    """Join ``threads`` in short steps, so a signal reaches the main thread on every platform."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for t in threads:
        while t.is_alive():
            if deadline is not None and time.monotonic() >= deadline:
                return
            t.join(0.2)


def run_cells(specs: list[CellSpec], runner_id: str, jobs: int,
              on_done: Callable[[dict], None] | None = None,
              stop: threading.Event | None = None, *, isolation: str | None = "auto",
              template: Template | None = None, park_idle: bool = True) -> list[dict]:
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
    stop = stop or threading.Event()
    lock = threading.Lock()
    records: list[dict] = []
    errors: list[BaseException] = []
    own: Template | None = None
    if template is None and resolve_isolation(isolation) == "warm" and specs:
        own = template = Template().start()
    sem = threading.Semaphore(max(1, jobs))
    threads: list[threading.Thread] = []

    def task(spec: CellSpec, slot: Slot) -> None:
        try:
            if stop.is_set():
                return
            rec = run_one(spec, runner_id, template=template, stop=stop,
                          slot=slot if park_idle else None)
            if stop.is_set():
                return
            with lock:
                records.append(rec)
                if on_done:
                    on_done(rec)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)
            stop.set()
        finally:
            slot.release()

    try:
        for spec in specs:
            acquired = False
            while not stop.is_set():
                if sem.acquire(timeout=0.2):
                    acquired = True
                    break
            if acquired and stop.is_set():
                sem.release()
            if not acquired or stop.is_set():
                break
            t = threading.Thread(target=task, args=(spec, Slot(sem)), daemon=True,
                                 name=f"cell-{spec.case.id}-{spec.method}")
            t.start()
            threads.append(t)
        _join(threads)
        if errors:
            raise errors[0]
        if stop.is_set():
            raise KeyboardInterrupt
    except BaseException:
        stop.set()
        kill_live_cells()
        if own is not None:
            own.close()
        _join(threads, timeout=KILL_WAIT_S * 2)
        kill_live_cells()
        raise
    finally:
        if own is not None:
            own.close()
    return records
