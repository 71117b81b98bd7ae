"""Every process of a cell reports its own memory peak when it ends (Linux).

Loaded by the start-up hook (``sitecustomize``) in every fresh interpreter of a cell, and by
the warm template before it forks cells, then :func:`install` is called. It imports nothing of
``harness`` and nothing that is not already loaded at interpreter start-up, so a case sees no
difference; everything it does is wrapped so that it can never change how a process ends.

Why: the harness used to read each worker's private memory (USS) from outside, many times
while the worker was young, so that short fork workers were not missed. Each reading walks
the worker's page tables (``/proc/PID/smaps_rollup``, about 4 ms for a torch process), and
together they were most of the harness's own CPU. A process knows its own peak exactly at the
end: the kernel's high-water mark of its resident set (``VmHWM`` in ``/proc/self/status``,
``proc(5)``), and one USS reading at that point. The harness's sampler then only has to find
processes and cover those that die by a signal (see ``harness.run.sampler``).

When a process reports:

* **multiprocessing children** (DataLoader workers under fork, spawn and forkserver):
  ``multiprocessing.process.BaseProcess._bootstrap`` calls ``util._exit_function()`` after
  ``run()`` returns or raises, then the child calls ``os._exit`` (``popen_fork.py``), so
  :mod:`atexit` does not run there. A ``multiprocessing.util.Finalize`` does: it is created
  in each child by an after-fork callback (``util.register_after_fork``), which
  ``BaseProcess._after_fork`` runs right after it clears the finalizers inherited from the
  parent.
* **every other interpreter** (the cell itself, a spawn worker's own interpreter, a script
  run as ``python -``): :mod:`atexit`, which the warm template's cells also run before
  ``os._exit``.

A worker killed by a signal cannot report (a crash, ``os._exit`` in a worker, a kill by its
parent). Its parent still learns its peak when it reaps it: ``wait4(2)`` returns the child's
``ru_maxrss`` (``getrusage(2)``: the largest resident set of the child and of the children it
waited for, in KiB on Linux). So :func:`install` also replaces ``os.waitpid`` with the same
call through ``os.wait4``: multiprocessing reaps its workers with ``os.waitpid``
(``popen_fork.Popen.poll`` in the cell, ``forkserver.main`` in the forkserver server). A child
reaped without a report of its own leaves ``reaped-PID`` (``MAXRSS_BYTES REAPER_PID``). The
harness trusts it only for a child that was forked without an exec: ``exec`` keeps the old
address space's high-water mark in ``ru_maxrss`` (``exec_mmap`` in the kernel), and for a spawn
child started through ``vfork`` that is its parent's. Only that call changes; what it returns
and raises is the same.

A worker killed by a signal leaves no USS of its own either. When a process of the cell sends
``SIGTERM`` or ``SIGKILL`` through ``os.kill`` (``Process.terminate()`` and ``kill()``, which
``Pool.terminate()`` and the DataLoader's shutdown use, and a case's own ``os.kill``), the
replaced ``os.kill`` first reads the target's USS and high-water mark, if it is a process of
the cell that has not reported (``uss-PID``: ``USS_BYTES VMHWM_BYTES``), or reports at once
when the target is itself (a report a later one replaces, should it survive: a handled
``SIGTERM``). The signal is sent whatever happens meanwhile.

Nothing here raises an error of its own: its file and ``/proc`` errors are dropped. An
exception that a signal handler raises while this code runs still propagates, as it would
from the caller's next line.

A process reports at most once. ``HARNESS_CELL_PEAKS`` names the folder the reports go to,
one file ``peak-PID`` each, one line of space-separated fields::

    PID PPID VMHWM_BYTES USS_BYTES COST_S HELPER

Every process also leaves a marker ``armed-PID`` (``PPID HELPER FORKED``) as it starts: a fresh
interpreter at start-up (``FORKED`` 0), a forked child right after the fork
(``os.register_at_fork``, ``FORKED`` 1). So a
worker that dies before it could report is still counted, however short its life.

A forkserver worker first unpickles what its parent sent, before ``_bootstrap``; a failure
there (``Can't get attribute``, the main-guard errors: the failures this project is about)
ends it through ``sys.excepthook`` and ``os._exit`` in ``multiprocessing.forkserver.main``,
with no finalizer run. So until it reaches ``_bootstrap`` such a worker has its
``sys.excepthook`` wrapped to report first; the original is put back at ``_bootstrap``.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import time

# ``typing`` is not imported at run time (this module loads in every interpreter of a cell).
# Type checkers treat any name ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]

ENV_DIR = "HARNESS_CELL_PEAKS"

# multiprocessing starts its helpers as ``python -c 'from multiprocessing.X import main; ...'``
# (``multiprocessing.util.spawnv_passfds``). A forkserver worker keeps the server's command
# line, but it reports through the multiprocessing path, never as a helper.
_HELPER_COMMAND = re.compile(r"from multiprocessing\.(?:resource_tracker|forkserver|semaphore_tracker) import main")

#: What the cell process's command line holds (a fresh cell's, and a warm cell's as it sets it).
_CELL_COMMAND = "-m harness.child.cell "

#: What this module's own work can raise (files, ``/proc``, parsing, a missing attribute of
#: ``multiprocessing``); dropped. Anything else, such as an exception a signal handler raises
#: meanwhile, propagates.
_OWN_ERRORS = (OSError, ValueError, IndexError, AttributeError, ImportError)

_installed = False
_reported_pid = 0
_mp_armed = False
_forkserver = False  # this process is multiprocessing's forkserver server


class _Anchor:
    """The object ``util.register_after_fork`` keeps a weak reference to."""


_ANCHOR = _Anchor()


def _write(name: str, line: str) -> None:
    folder = os.environ.get(ENV_DIR)
    if not folder:
        return
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, line.encode("ascii"))
    finally:
        os.close(fd)


def _is_helper() -> bool:
    return _HELPER_COMMAND.search(" ".join(getattr(sys, "orig_argv", sys.argv))) is not None


def mark(forked: bool) -> None:
    """Leave ``armed-PID`` (``PPID HELPER FORKED``); ``forked``: called in a forked child, which
    is a worker even where it keeps a helper's command line (a forkserver worker)."""
    try:
        _write(f"armed-{os.getpid()}", f"{os.getppid()} {int(not forked and _is_helper())} {int(forked)}\n")
    except _OWN_ERRORS:
        pass


def _status_bytes(field: bytes, pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def _uss_bytes(pid: int | str = "self") -> int:
    """Private memory: ``Private_Clean + Private_Dirty + Private_Hugetlb`` (psutil's USS)."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
        for line in f:
            if line.startswith(b"Private_"):
                total += int(line.split()[1]) * 1024
    return total


def report(helper_possible: bool = True, final: bool = True) -> None:
    """Write this process's peak RSS and current USS to ``$HARNESS_CELL_PEAKS/peak-PID`` (once).

    Args:
        helper_possible: whether this may be one of multiprocessing's helper processes or the
            cell process itself (false on the multiprocessing-child path: a forkserver worker
            keeps the server's command line but is a worker). Those write their line without
            reading their USS, which the harness does not use.
        final: no later report follows; false before a signal the process may survive, whose
            report the one at its end replaces.
    """
    global _reported_pid
    try:
        pid = os.getpid()
        folder = os.environ.get(ENV_DIR)
        if _reported_pid == pid or not folder:
            return
        if final:
            _reported_pid = pid
        t0 = time.process_time()
        command = " ".join(getattr(sys, "orig_argv", sys.argv)) if helper_possible else ""
        helper = _HELPER_COMMAND.search(command) is not None
        hwm = _status_bytes(b"VmHWM:")
        # The harness needs no USS of a helper, nor of the cell process itself (its peak RSS).
        uss = 0 if helper or _CELL_COMMAND in command else _uss_bytes()
        cost = time.process_time() - t0
        _write(f"peak-{pid}", f"{pid} {os.getppid()} {hwm} {uss} {cost:.6f} {int(helper)}\n")
    except _OWN_ERRORS:
        pass


def _worker_report() -> None:
    report(helper_possible=False)


def _in_multiprocessing_child(_anchor: object) -> None:
    """After-fork callback: runs in every multiprocessing child, after its finalizers were cleared."""
    try:
        from multiprocessing import util

        util.Finalize(None, _worker_report, exitpriority=-(10**6))
        if isinstance(sys.excepthook, _ReportingExcepthook):
            sys.excepthook = sys.excepthook.original
    except _OWN_ERRORS:
        pass


class _ReportingExcepthook:
    """``sys.excepthook`` of a forkserver worker before ``_bootstrap``: report, then the original."""

    def __init__(self, original: ExceptHook) -> None:
        self.original = original

    def __call__(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> object:
        _worker_report()
        return self.original(exc_type, exc, tb)


def _arm_multiprocessing() -> None:
    """Register :func:`_in_multiprocessing_child` once per process lineage, once
    ``multiprocessing.util`` is loaded (the registry is inherited by fork)."""
    global _mp_armed
    util = sys.modules.get("multiprocessing.util")
    if _mp_armed or util is None:
        return
    try:
        util.register_after_fork(_ANCHOR, _in_multiprocessing_child)
        _mp_armed = True
    except _OWN_ERRORS:
        pass


def _after_fork_in_child() -> None:
    # A forked process is about to become a multiprocessing child (its parent loaded
    # multiprocessing to start it) or a warm cell: arm before BaseProcess._after_fork runs.
    global _forkserver
    mark(forked=True)
    _arm_multiprocessing()
    if _forkserver:  # this is a forkserver worker: see the module's docstring
        _forkserver = False
        try:
            sys.excepthook = _ReportingExcepthook(sys.excepthook)
        except _OWN_ERRORS:
            pass


def _note_reaped(pid: int, maxrss_kib: int) -> None:
    """Leave ``reaped-PID`` for a child of a cell reaped without its own ``peak-PID``."""
    try:
        folder = os.environ.get(ENV_DIR)
        if folder and pid > 0 and not os.path.exists(os.path.join(folder, f"peak-{pid}")):
            _write(f"reaped-{pid}", f"{maxrss_kib * 1024} {os.getpid()}\n")
    except _OWN_ERRORS:
        pass


_original_waitpid = os.waitpid


def _waitpid(*args: int, **kwargs: int) -> tuple[int, int]:
    """``os.waitpid`` through ``os.wait4``, noting a reaped child's peak (see the module doc).
    Any other form of call goes to the original, which raises what it raises."""
    if kwargs or len(args) != 2:
        return _original_waitpid(*args, **kwargs)
    got, status, usage = os.wait4(*args)
    if got > 0 and not (os.WIFSTOPPED(status) or os.WIFCONTINUED(status)):  # it ended
        _note_reaped(got, usage.ru_maxrss)
    return got, status


#: Linux's numbers for SIGKILL and SIGTERM (``signal(7)``; ``signal`` is not imported here).
_FATAL_SIGNALS = (9, 15)
_original_kill = os.kill


def _note_killed(pid: int) -> None:
    """Before a fatal signal to ``pid``: its USS and peak (``uss-PID``) if it is an unreported
    process of this cell, or this process's own report (which a later one may replace)."""
    try:
        if pid == os.getpid():
            report(final=False)
            return
        folder = os.environ.get(ENV_DIR)
        if (folder and pid > 0 and os.path.exists(os.path.join(folder, f"armed-{pid}"))
                and not os.path.exists(os.path.join(folder, f"peak-{pid}"))):
            _write(f"uss-{pid}", f"{_uss_bytes(pid)} {_status_bytes(b'VmHWM:', pid)}\n")
    except _OWN_ERRORS:
        pass


def _kill(*args: int, **kwargs: int) -> None:
    """``os.kill``, reading a cell process's USS before it is killed (see the module doc).
    Any other form of call goes to the original, which raises what it raises."""
    if kwargs or len(args) != 2:
        return _original_kill(*args, **kwargs)
    try:
        if args[1] in _FATAL_SIGNALS:
            _note_killed(args[0])
    finally:
        _original_kill(*args)  # sent even when a signal handler raised meanwhile
    return None


# Named as what they replace: ``pickle`` then stores them as ``os.kill`` and ``os.waitpid``,
# which load anywhere (the originals outside a cell).
for _replacement, _name in ((_kill, "kill"), (_waitpid, "waitpid")):
    _replacement.__module__, _replacement.__name__, _replacement.__qualname__ = "os", _name, _name


def install() -> None:
    """Arm the reports in this process and, through fork, in its descendants (idempotent).

    Does nothing off Linux (no ``/proc/self/smaps_rollup``). The start-up hook calls it in a
    fresh interpreter when ``HARNESS_CELL_PEAKS`` is set; the warm template calls it with the
    variable unset, and each cell it forks reads the variable when it reports.
    """
    global _installed
    if _installed or not sys.platform.startswith("linux"):
        return
    _installed = True
    global _forkserver
    _forkserver = _is_helper() and "multiprocessing.forkserver" in " ".join(getattr(sys, "orig_argv", sys.argv))
    mark(forked=False)
    atexit.register(report)
    if hasattr(os, "wait4"):
        os.waitpid = _waitpid
    os.kill = _kill
    _arm_multiprocessing()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
