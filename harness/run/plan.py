"""Planning the cells of a run: which cells, with what timeout, in which environment.

A cell is one case under one start method (:class:`CellSpec`). Its process gets a complete
environment (:func:`cell_env`): its own short work folder as ``TMPDIR`` (:func:`cell_temp_root`),
the start-up hook (:data:`CELL_SITE_DIR`) and the case's roots on ``PYTHONPATH``, and, under a
platform profile, that platform's torch sharing strategy and temp-path length
(:class:`emulated_temp_dir`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._options import DEFAULT_WORKERS
from harness._policy import Platform, current_os, platform_of, profile
from harness.catalogue.discover import Case
from harness.classify.outcomes import IN_PROCESS
from harness.errors import UsageError
from harness.run.containment import track_dir, untrack_dir
from harness.run.sampler import PEAKS_ENV
from harness.run.warm import warm_available

__all__ = [
    "CELL_SITE_DIR",
    "CellSpec",
    "ISOLATIONS",
    "PEAKS_FOLDER",
    "SELF_REPORTED_PEAKS",
    "SHORT_TEMP_ROOT",
    "cell_env",
    "cell_temp_root",
    "emulated_temp_dir",
    "plan",
    "resolve_isolation",
]

ISOLATIONS = ("warm", "fresh")


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

    def to_child(self) -> dict[str, Any]:
        """The :class:`~harness.child.request.CellRequest` the cell process reads, as JSON.

        A script case's ``"stdin"`` mode comes from its ``CASE``, read once at discovery (the
        cell reads no ``CASE``).
        """
        from harness.child.request import CellRequest

        path: str = str(self.case.path)
        argv: tuple[str, ...] = ()
        if self.case.notebook:  # run by the notebook driver, in a real kernel
            from harness.notebook.kernel_run import DRIVER

            path, argv = str(DRIVER), (str(self.case.path),)
        return CellRequest(
            module=self.case.module,
            path=path,
            root=str(self.case.root),
            script=self.case.script,
            method=self.method,
            num_workers=self.num_workers,
            require_check=True,
            stdin=self.case.stdin if self.case.script else None,
            argv=argv,
        ).as_json()


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
    root = str(spec.case.root) if spec.case.root_on_pythonpath else ""
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(CELL_SITE_DIR), root, project, *_absolute_paths(env.get("PYTHONPATH", ""))) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHON_COLORS"] = "0"  # plain tracebacks (3.13+); the classifier strips colours anyway
    return env


def _absolute_paths(pythonpath: str) -> list[str]:
    """The entries of a ``PYTHONPATH`` made absolute against this process's working directory:
    what they mean in the user's shell (``site`` makes ``sys.path`` entries absolute at start-up),
    although a cell starts in a folder of its own."""
    if not pythonpath:
        return []
    return [os.path.abspath(p or os.curdir) for p in pythonpath.split(os.pathsep)]  # "" is the directory


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
