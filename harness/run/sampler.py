"""Process-tree helpers: sample memory of a cell's processes, and kill them all.

Uses psutil for portability; on POSIX the cell also leads its own process group, which
:func:`kill_tree` kills as a whole, so orphans reparented to init are caught too.

Sampling cost matters more than it seems. psutil's ``children(recursive=True)`` scans every
process of the machine (about 5 ms) and ``memory_full_info()`` walks a process's page tables
through ``/proc/PID/smaps`` (about 10 ms for a 170 MB torch process). So a
:class:`TreeSampler` finds children through ``/proc/PID/task/TID/children`` on Linux
(``proc(5)``; psutil elsewhere), reads RSS from ``/proc/PID/statm`` (psutil's
``memory_info``), reads USS (private memory, psutil's ``memory_full_info``) when a process is
first seen, often while it is young, then less and less often (:meth:`TreeSampler._uss_due`),
and re-reads a process's command line only in its first seconds (when a spawn child execs).
It has no thread of its own: the thread that watches the cell calls :meth:`TreeSampler.sample`
every :meth:`TreeSampler.interval` seconds.

**Self-reported peaks** (Linux). Reading USS was still most of the harness's own CPU, so every
Python process of a cell now reports its own peak when it ends (``harness/child/cellsite/
_harness_cell_peaks.py``: ``VmHWM``, the kernel's exact high-water mark of its resident set,
and one USS reading), and :meth:`TreeSampler.absorb` merges the reports
(:func:`read_peak_reports`) into what was sampled.

A worker that dies by a signal cannot report. Its parent notes its ``ru_maxrss`` as it reaps
it (``reaped-PID``); a process of the cell that kills it through ``os.kill`` first reads its
USS (``uss-PID``); whatever is still alive when the cell ends or times out is read once more,
USS included, before the harness kills it (:meth:`TreeSampler.stop`). Only a worker that kills
itself (a crash, ``os.abort()``) is left without a USS. So with reports the sampler reads USS
only from processes that never armed (not Python, or not yet started).

With reports the sampler no longer has to catch short workers itself, so it samples every
:data:`REPORTED_INTERVAL_S` instead of :data:`UNREPORTED_INTERVAL_S`, and reads the kernel's high-water mark (``VmHWM``) rather than the current RSS: exact up to
the last sample, where an RSS reading could miss a peak between two samples. A worker killed
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

__all__ = ["PEAKS_ENV", "PeakReport", "TreeSampler", "USS_INTERVAL_S", "kill_tree",
           "linux_children", "peak_report_cpu_s", "read_peak_reports"]

# multiprocessing starts its helpers as ``python -c 'from multiprocessing.X import main; ...'``
# (``multiprocessing.util.spawnv_passfds``); a looser match would take any process whose
# arguments merely mention "forkserver" (a cell's own spec does) for a helper.
_HELPER_COMMAND = re.compile(r"from multiprocessing\.(?:resource_tracker|forkserver|semaphore_tracker) import main")

#: Seconds after start during which the cell process may turn out to be a launcher stub (its
#: only child runs the same arguments under another executable); after that it is the cell.
LAUNCHER_WAIT_S = 2.0
#: Seconds between two samples without self-reported peaks (macOS, Windows): the watcher's
#: cadence, which also checks the timeout.
UNREPORTED_INTERVAL_S = 0.05
#: Seconds after which a process counts as settled: its USS is then read every
#: :data:`USS_SETTLED_INTERVAL_S`.
SETTLED_S = 3.0
USS_SETTLED_INTERVAL_S = 2.0
#: Seconds between two USS readings of one process (each walks its page tables, about 4 ms for
#: a torch process; see :meth:`TreeSampler._uss_due`).
USS_INTERVAL_S = 0.25
USS_YOUNG_S = 0.5
FAST_USS_S = 0.04
#: Every this many samples, the children of every thread are read, not only the main thread's.
ALL_THREADS_EVERY = 5
#: Seconds after a process is first seen during which its command line is re-read (an exec).
EXEC_WINDOW_S = 2.0
#: Seconds a process that has not armed its report yet is left unread: a forked child arms at
#: once, a spawn child once its interpreter has started (tens of ms); before that it is a copy
#: of its parent or a bare interpreter, and reading it would be wasted.
ARM_GRACE_S = 0.1
#: With self-reported peaks: seconds between two samples. The reports and the reaping parents
#: give every Python process's exact peak; sampling finds the processes to kill and covers
#: what is not Python or dies by a signal with no parent left to reap it.
REPORTED_INTERVAL_S = 1.0
#: The environment variable naming the folder a cell's processes report their peaks to.
PEAKS_ENV = "HARNESS_CELL_PEAKS"


def _read_small(path: str) -> bytes:
    """One read of a small /proc file (one ``open``, ``read`` and ``close``: no buffering, no
    size probe). Raises OSError as ``open`` does."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def linux_children(pid: int, main_thread_only: bool = False) -> list[int] | None:
    """Direct children of ``pid`` from ``/proc/PID/task/*/children``; ``None`` if unavailable.

    The file lists the children each thread created (``proc(5)``, Linux 3.5+ with
    ``CONFIG_PROC_CHILDREN``); reading it costs microseconds, where psutil scans all of /proc.
    ``main_thread_only`` reads the main thread's file alone (one read instead of one per
    thread; torch processes run several): the children a process starts from other threads
    are then missed until the next full read.
    """
    try:
        tids = [str(pid)] if main_thread_only else os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []
    except OSError:
        return None
    out: list[int] = []
    for tid in tids:
        try:
            out.extend(int(x) for x in _read_small(f"/proc/{pid}/task/{tid}/children").split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended between listdir and open
            return None  # no CONFIG_PROC_CHILDREN: fall back to psutil
        except (OSError, ValueError):
            continue
    return out


_FAST_CHILDREN = sys.platform.startswith("linux") and linux_children(os.getpid()) is not None


class _Seen:
    """Peaks of one process, restarted when its command line changes (it exec'd)."""

    __slots__ = ("cmd", "rss", "uss", "uss_at", "born", "helper", "reported", "armed", "cell_like")

    def __init__(self, cmd: str, direct: bool, now: float) -> None:
        self.cmd = cmd
        self.armed = False  # it will report its own peaks at a clean exit
        self.reported = False  # it left a birth marker or a peak report
        self.rss = 0
        self.uss = 0
        self.uss_at = -1.0
        self.born = now
        # Only the cell's own children can be helpers: forkserver workers are forked by the
        # server and keep its command line.
        self.helper = direct and _HELPER_COMMAND.search(cmd) is not None
        # Shows the cell process's own command line: a forked child, or a child caught
        # between its fork and its exec (see TreeSampler._counts).
        self.cell_like = False


class TreeSampler:
    """Peak memory of a cell process and of its DataLoader workers.

    Workers are every descendant except multiprocessing's own helpers (the resource tracker
    and the forkserver server, recognised by their command line); forkserver workers are
    children of the server and count as workers. A process caught between ``fork`` and
    ``exec`` (spawn's start) still shows the cell's command line and the cell's pages; its
    peaks restart when its command line changes, so those samples do not count.

    The caller samples (:meth:`sample`, thread-safe) every :meth:`interval` seconds until
    the cell ends, then calls :meth:`stop`.

    Attributes:
        pid: the cell process.
        parent_peak_rss: peak RSS of the cell process, bytes.
        worker_peak_rss: peak RSS of the largest worker, bytes (0 when none was seen).
        worker_peak_uss: peak USS (private memory) of the largest worker, bytes (0 when none
            was seen or the platform cannot tell).
        workers_seen: pids of the workers seen with memory (not helpers, not zombies).
        procs: a snapshot of every process ever seen in the tree, ``{pid: psutil.Process}``
            (psutil objects refuse to signal a recycled pid).
    """

    def __init__(self, pid: int, peaks: Path | None = None, launcher: bool = True) -> None:
        """Start sampling ``pid``'s tree (without ``peaks``, its first sample is taken at once).

        Args:
            pid: the cell process.
            peaks: the folder the cell's processes report their own peaks to (see
                :meth:`absorb`): a process that left its ``armed-PID`` marker there is not
                read for USS while it runs; the reports also cover a cell too short for the
                caller's first sample.
            launcher: ``pid`` may be a launcher stub (see :meth:`_see_through_launcher`);
                false for a process the harness forked itself (a warm cell).
        """
        self.pid = pid
        self.peaks = peaks
        #: The process that runs the cell's Python: ``pid`` itself, or its only child when
        #: ``pid`` is a launcher stub (see :meth:`_see_through_launcher`).
        self.cell_pid = pid
        self._launcher_checked = not launcher
        self._started = time.monotonic()
        self.parent_peak_rss = 0
        self._lock = threading.Lock()
        self._procs: dict[int, psutil.Process] = {}
        self._seen: dict[int, _Seen] = {}
        self._last_pids: frozenset[int] = frozenset()
        self._samples = 0
        self._cell_cmd: str | None = None
        self._cell_reported = False  # the cell process left its own peak report
        try:
            self._proc: psutil.Process | None = psutil.Process(pid)
            self._procs[pid] = self._proc
        except psutil.Error:
            self._proc = None
        if peaks is None:
            self.sample()  # at once: a cell may be over before the first tick

    # -- results ---------------------------------------------------------------------------

    @property
    def procs(self) -> dict[int, psutil.Process]:
        with self._lock:
            return dict(self._procs)

    @property
    def current(self) -> dict[int, psutil.Process]:
        """The cell process and the descendants found by the last sample, ``{pid: psutil.Process}``."""
        with self._lock:
            return {pid: proc for pid, proc in self._procs.items() if pid == self.cell_pid or pid in self._last_pids}

    def _counts(self, seen: _Seen) -> bool:
        """Whether a process is a worker: not a helper, and seen with memory or reported.

        With reports, a process that showed only the cell's own command line and never left a
        marker, report or reaping note was a child caught between its fork and its exec (a
        helper or a spawn worker about to exec, which arms after it); every Python child of a
        cell arms at its start, so it is not counted on that glimpse alone.
        """
        if seen.helper:
            return False
        if seen.reported:
            return True
        return seen.rss > 0 and not (self.peaks is not None and seen.cell_like)

    def _workers(self) -> list[_Seen]:
        with self._lock:
            return [s for s in self._seen.values() if self._counts(s)]

    @property
    def worker_peak_rss(self) -> int:
        return max((s.rss for s in self._workers()), default=0)

    @property
    def worker_peak_uss(self) -> int:
        return max((s.uss for s in self._workers()), default=0)

    @property
    def workers_seen(self) -> set[int]:
        with self._lock:
            return {pid for pid, s in self._seen.items() if self._counts(s)}

    # -- sampling --------------------------------------------------------------------------

    def stop(self) -> None:
        """Read once more the peak (and, with reports, the USS) of every process of the tree
        still alive, which is about to be killed and will not report; the peaks stay
        readable. Idempotent."""
        self.sample()
        if self.peaks is None:
            return
        with self._lock:
            self._adopt_marked(self.peaks)
            now = time.monotonic()
            for pid, proc in list(self._procs.items()):
                if pid == self.cell_pid or not _any_exists(pid, ()) or not proc.is_running():
                    continue
                self._sample_one(pid, proc, False, now)
                seen = self._seen.get(pid)
                if seen is not None and not seen.helper:
                    self._read_uss(seen, proc, now)

    def _adopt_marked(self, peaks: Path) -> None:
        """Add to :attr:`procs` the processes of the tree that left a start marker, have not
        reported and were never sampled (a cell over before its first sample, workers
        orphaned by a cell that died), so that they are read and killed. A pid alive now but
        started after its marker was written is another process (a recycled pid).

        The folder's names alone decide whether any file must be read: at the usual end of a
        cell every process that left a marker was sampled or has reported."""
        try:
            names = os.listdir(peaks)
        except OSError:
            return
        marked = {name[6:] for name in names if name.startswith("armed-")}
        marked -= {name[5:] for name in names if name.startswith("peak-")}
        if not marked - {str(pid) for pid in self._procs}:
            return
        reports = read_peak_reports(peaks, count_cost=False)
        for pid in self._in_tree(reports):
            if pid in self._procs or reports[pid].peak_rss:
                continue
            try:
                marked_at = os.stat(peaks / f"armed-{pid}").st_mtime
                proc = psutil.Process(pid)
                if proc.create_time() > marked_at + 1.0:
                    continue
            except (OSError, psutil.Error):
                continue
            self._procs[pid] = proc

    def absorb_reaped_cell(self, maxrss: int) -> None:
        """Take ``maxrss`` (bytes, ``ru_maxrss`` of the cell process as its parent reaped it) as
        the cell's peak when the cell left no report of its own (it died by a signal).

        ``getrusage(2)``: it is the largest resident set of the cell and of the children it
        reaped itself, so an upper bound when a worker it reaped grew larger than the cell.
        Only for a cell forked without an exec (warm): ``exec`` carries the launcher's own
        peak into it.
        """
        with self._lock:
            if not self._cell_reported and maxrss > 0:
                self.parent_peak_rss = max(self.parent_peak_rss, maxrss)

    def _descendants(self) -> list[tuple[int, bool]] | None:
        """``(pid, is a direct child)`` for every descendant of the cell; ``None`` if it is gone."""
        if _FAST_CHILDREN:
            out: list[tuple[int, bool]] = []
            todo = [self.cell_pid]
            # Every thread's children on every ALL_THREADS_EVERY-th sample; the main thread's
            # (where multiprocessing starts workers and helpers) on the others.
            self._samples += 1
            main_only = self._samples % ALL_THREADS_EVERY != 0
            while todo:
                parent = todo.pop()
                kids = linux_children(parent, main_thread_only=main_only)
                if kids is None:
                    break
                out.extend((k, parent == self.cell_pid) for k in kids)
                todo.extend(kids)
            else:
                return out
        assert self._proc is not None
        try:
            direct = {p.pid for p in self._proc.children(recursive=False)}
            return [(p.pid, p.pid in direct) for p in self._proc.children(recursive=True)]
        except psutil.Error:
            return None

    def sample(self) -> bool:
        """Take one sample; missing or vanished processes are ignored.

        Returns:
            False once the cell process is gone (nothing more to sample), else True.
        """
        if self._proc is None:
            return False
        with self._lock:
            self._see_through_launcher()
            try:
                rss = self._peak_rss(self.cell_pid, self._proc)
            except psutil.Error:
                return False
            if rss:
                self.parent_peak_rss = max(self.parent_peak_rss, rss)
            pids = self._descendants()
            if pids is None:
                return False
            now = time.monotonic()
            current = frozenset(pid for pid, _ in pids)
            if current != self._last_pids:
                self._last_pids = current
            for pid, direct in pids:
                proc = self._procs.get(pid)
                if proc is None:
                    try:
                        proc = psutil.Process(pid)
                    except psutil.Error:
                        continue
                    self._procs[pid] = proc
                self._sample_one(pid, proc, direct, now)
        return True

    def interval(self) -> float:
        """Seconds to the next sample: :data:`REPORTED_INTERVAL_S` with self-reported peaks,
        else :data:`UNREPORTED_INTERVAL_S`."""
        return REPORTED_INTERVAL_S if self.peaks is not None else UNREPORTED_INTERVAL_S

    def _see_through_launcher(self) -> None:
        """Re-root the tree at the real interpreter when the cell process is a launcher stub.

        On Windows, a virtual environment's ``Scripts\\python.exe`` is a small launcher that
        starts the base interpreter with the same arguments and waits for it (``venv`` docs,
        "How venvs work"). Measured naively, the stub would be the "parent" (a few MB) and the
        real cell interpreter its first "worker". A stub is recognised, once its child exists,
        as a process with exactly one child, another executable, and the same arguments.
        """
        if self._launcher_checked or self._proc is None:
            return
        if time.monotonic() - self._started > LAUNCHER_WAIT_S:
            self._launcher_checked = True  # a launcher starts its interpreter at once
            return
        # The direct children, cheaply: this runs on every sample until decided.
        kid_pids = linux_children(self.pid, main_thread_only=True) if _FAST_CHILDREN else None
        try:
            if kid_pids is None:
                kids = self._proc.children(recursive=False)
            else:
                kids = [psutil.Process(k) for k in kid_pids]
            if not kids:
                return
            if len(kids) != 1:
                self._launcher_checked = True
                return
            child = kids[0]
            args = child.cmdline()
            if not args:
                return  # the child is in the middle of exec: look again
            if args[1:] != self._proc.cmdline()[1:]:
                self._launcher_checked = True
                return
            if child.exe() == self._proc.exe():
                return  # same program and arguments: a launcher between its fork and its exec
        except (psutil.Error, OSError):
            return
        self._launcher_checked = True
        self.cell_pid = child.pid
        self._procs[child.pid] = child
        self._seen.pop(child.pid, None)  # sampled as a child before it was known for the cell
        self._proc = child
        self.parent_peak_rss = 0

    def _peak_rss(self, pid: int, proc: psutil.Process) -> int:
        """Bytes: with reports the kernel's high-water mark (``VmHWM``, ``proc(5)``), else
        the current RSS; 0 for a zombie. Raises psutil.Error when the process is gone."""
        if self.peaks is None:
            return proc.memory_info().rss
        try:
            status = _read_small(f"/proc/{pid}/status")
            at = status.find(b"\nVmHWM:")
            if at >= 0:
                return int(status[at + 7:status.index(b"\n", at + 1)].split()[0]) * 1024
        except (FileNotFoundError, ProcessLookupError):
            raise psutil.NoSuchProcess(pid) from None
        except (OSError, ValueError):
            return proc.memory_info().rss
        return 0  # a zombie or a kernel thread has no memory of its own

    def _cell_command(self) -> str:
        """The cell process's command line, read once (a warm cell keeps its template's)."""
        if self._cell_cmd is None:
            try:
                self._cell_cmd = " ".join(self._proc.cmdline()) if self._proc is not None else ""
            except psutil.Error:
                self._cell_cmd = ""
        return self._cell_cmd

    def _sample_one(self, pid: int, proc: psutil.Process, direct: bool, now: float) -> None:
        seen = self._seen.get(pid)
        try:
            # A spawn child execs right after its fork: its command line is read while it is
            # young (with reports: while it still shows the cell's), then taken as settled.
            young = seen is None or (now - seen.born < EXEC_WINDOW_S and (self.peaks is None or seen.cell_like))
            cmd = " ".join(proc.cmdline()) if young or seen is None else seen.cmd
            rss = self._peak_rss(pid, proc)
        except psutil.Error:
            return
        if rss == 0:  # a zombie (already exited, not yet reaped) or a kernel thread
            return
        if seen is None or (seen.cmd != cmd and not seen.helper):
            seen = self._seen[pid] = _Seen(cmd, direct, now)
            seen.cell_like = self.peaks is not None and cmd == self._cell_command()
        if seen.helper:
            return
        seen.rss = max(seen.rss, rss)
        if not seen.armed and self.peaks is not None:
            seen.armed = os.path.exists(self.peaks / f"armed-{pid}")
        if self._uss_due(seen, now, seen.armed if self.peaks is not None else None):
            self._read_uss(seen, proc, now)

    @staticmethod
    def _read_uss(seen: _Seen, proc: psutil.Process, now: float) -> None:
        seen.uss_at = now
        try:
            seen.uss = max(seen.uss, getattr(proc.memory_full_info(), "uss", 0))
        except (psutil.Error, OSError):
            pass

    @staticmethod
    def _uss_due(seen: _Seen, now: float, armed: bool | None = None) -> bool:
        """Whether to read a process's USS now (each reading walks its page tables, about 4 ms
        for a torch process, the sampler's main cost).

        When a process is first seen, then every :data:`FAST_USS_S` while it is young
        (:data:`USS_YOUNG_S`: short fork workers), every :data:`USS_INTERVAL_S` until it is
        :data:`SETTLED_S` old, and every :data:`USS_SETTLED_INTERVAL_S` after that (a
        long-lived worker's private memory has settled by then). With self-reported peaks
        (``armed`` not ``None``): never for an armed process (see the module doc); for one
        not armed yet, as without reports but not in its first :data:`ARM_GRACE_S`.
        """
        age = now - seen.born
        if armed is not None and not armed and age < ARM_GRACE_S:
            return False
        if armed:
            return False  # it reports, or is measured as it is killed or at the cell's end
        if seen.uss_at < 0:
            return True
        every = FAST_USS_S if age < USS_YOUNG_S else USS_INTERVAL_S if age < SETTLED_S else USS_SETTLED_INTERVAL_S
        return now - seen.uss_at >= every

    def absorb(self, reports: dict[int, PeakReport]) -> None:
        """Merge what the cell's processes reported themselves (:func:`read_peak_reports`).

        The cell process's report raises :attr:`parent_peak_rss`; a direct child that says it
        is one of multiprocessing's helpers is not a worker, even where it was sampled before
        its exec showed it; every other process is a worker, counted even when it lived too
        briefly to be sampled, with its peak RSS (``VmHWM``, the exact high-water mark, or the
        ``ru_maxrss`` its parent noted as it reaped it) and USS taken as the larger of
        reported and sampled. A process that only left its birth marker (it died before it
        could report, and nothing reaped it) counts as seen, with what was sampled of it.
        """
        with self._lock:
            for pid, rep in self._in_tree(reports).items():
                if pid == self.cell_pid:
                    self.parent_peak_rss = max(self.parent_peak_rss, rep.peak_rss)
                    self._cell_reported = self._cell_reported or rep.peak_rss > 0
                    continue
                seen = self._seen.get(pid)
                if rep.helper and rep.ppid == self.cell_pid:
                    if seen is not None:
                        seen.helper = True
                    continue
                if seen is None:
                    seen = self._seen[pid] = _Seen("", False, self._started)
                elif seen.helper:
                    continue
                seen.rss = max(seen.rss, rep.peak_rss)
                seen.uss = max(seen.uss, rep.uss)
                seen.reported = True


    def _in_tree(self, reports: dict[int, PeakReport]) -> dict[int, PeakReport]:
        """The reports of the cell process and of its descendants (by their parents at
        start), never of another process that happened to inherit the cell's environment."""
        tree = {self.cell_pid, *self._seen}
        todo = dict(reports)
        while True:
            found = [pid for pid, rep in todo.items() if pid in tree or rep.ppid in tree]
            if not found:
                return {pid: reports[pid] for pid in tree if pid in reports}
            for pid in found:
                tree.add(pid)
                del todo[pid]


class PeakReport:
    """One process's own report at exit (``harness/child/cellsite/_harness_cell_peaks.py``).

    Attributes:
        ppid: its parent's pid (when it ended, or when it started for a birth marker alone).
        peak_rss: ``VmHWM``, its peak resident set, bytes; 0 when it left only its birth
            marker (it died before it could report).
        uss: its private memory (USS) when it ended, bytes; 0 for a helper, the cell process,
            or a birth marker alone.
        cost_s: CPU seconds the report itself took in that process.
        helper: it ran one of multiprocessing's helpers' command lines.
    """

    __slots__ = ("ppid", "peak_rss", "uss", "cost_s", "helper")

    def __init__(self, ppid: int, peak_rss: int, uss: int, cost_s: float, helper: bool) -> None:
        self.ppid, self.peak_rss, self.uss, self.cost_s, self.helper = ppid, peak_rss, uss, cost_s, helper


_REPORT_CPU = [0.0]
_REPORT_LOCK = threading.Lock()


def _fields(path: Path) -> list[bytes]:
    return _read_small(str(path))[:256].split()


def read_peak_reports(folder: Path, count_cost: bool = True) -> dict[int, PeakReport]:
    """What a cell's processes left in ``folder``, by pid: their exit reports (``peak-PID``);
    for those that never reported, what their parent noted as it reaped them
    (``reaped-PID``: ``ru_maxrss``, used only for a child forked without an exec, see
    ``_harness_cell_peaks``), the USS and peak a process of the cell read just before it
    killed them (``uss-PID``) and their start markers (``armed-PID``). Unreadable or malformed
    files (a process killed while writing) are skipped. With ``count_cost`` the reports'
    ``cost_s`` is added to :func:`peak_report_cpu_s` (once per cell)."""
    out: dict[int, PeakReport] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    cost = 0.0
    armed: dict[int, tuple[int, bool, bool]] = {}  # pid -> (parent at its start, helper, forked)
    reaped: dict[int, tuple[int, int]] = {}  # pid -> (ru_maxrss bytes, the parent that reaped it)
    killed: dict[int, tuple[int, int]] = {}  # pid -> (USS, VmHWM) read just before a process of the cell killed it
    for name in names:
        kind, _, pid_text = name.partition("-")
        try:
            pid = int(pid_text)
            if kind == "peak":
                _, ppid, hwm, uss, cost_s, helper = _fields(folder / name)
                out[pid] = PeakReport(int(ppid), int(hwm), int(uss), float(cost_s), helper == b"1")
                cost += out[pid].cost_s
            elif kind == "armed":
                parent, flag, *fork_flag = _fields(folder / name)
                armed[pid] = (int(parent), flag == b"1", fork_flag == [b"1"])
            elif kind == "reaped":
                rss_text, reaper_text = _fields(folder / name)
                reaped[pid] = (int(rss_text), int(reaper_text))
            elif kind == "uss":
                uss_text, hwm_text = _fields(folder / name)
                killed[pid] = (int(uss_text), int(hwm_text))
        except (OSError, ValueError):
            continue
    for pid, (born_of, is_helper, was_forked) in armed.items():
        rep = out.get(pid)
        if rep is None:
            rep = out[pid] = PeakReport(born_of, 0, 0, 0.0, is_helper)
            if was_forked:  # ru_maxrss of an exec'd child holds its parent's peak too
                rep.peak_rss = reaped.get(pid, (0, 0))[0]
            killed_uss, killed_hwm = killed.get(pid, (0, 0))
            rep.uss, rep.peak_rss = killed_uss, max(rep.peak_rss, killed_hwm)
        # The parent at its start: a process whose parent ended first is re-parented.
        rep.ppid, rep.helper = born_of, is_helper
    if count_cost:
        with _REPORT_LOCK:
            _REPORT_CPU[0] += cost
    return out


def peak_report_cpu_s() -> float:
    """CPU seconds this process's cells spent in their own peak reports so far (the harness's
    overhead inside the cells)."""
    with _REPORT_LOCK:
        return _REPORT_CPU[0]


def _any_exists(pid: int, known: Iterable[psutil.Process]) -> bool:
    """Whether ``pid`` or any of ``known`` may still exist, zombies included (POSIX
    ``kill(pid, 0)``, one system call each; a recycled pid answers yes, and is then checked
    properly). Not on Windows, where ``os.kill`` with 0 terminates the process."""
    for p in (pid, *(k.pid for k in known)):
        try:
            os.kill(p, 0)
        except ProcessLookupError:
            continue
        except OSError:
            return True  # exists, another user's: let psutil decide
        return True
    return False


def kill_tree(pid: int, known: Iterable[psutil.Process] = (), timeout: float = 5.0) -> list[int]:
    """Kill ``pid``, its process group (POSIX) and every known or current descendant.

    Args:
        pid: the cell process, which leads its own process group on POSIX.
        known: processes seen earlier in the tree (catches orphans of a dead parent).
        timeout: seconds to wait for them to go.

    Returns:
        pids still alive after ``timeout`` (normally empty).
    """
    known = list(known)
    if sys.platform != "win32" and not _any_exists(pid, known):
        return []  # everything already ended and was reaped (the usual end of a cell)
    victims: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        victims[pid] = root
        for child in root.children(recursive=True):
            victims[child.pid] = child
    except psutil.Error:
        pass
    for other in known:
        victims.setdefault(other.pid, other)
    if sys.platform != "win32":
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass
    for proc in victims.values():
        try:
            proc.kill()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(list(victims.values()), timeout=timeout)
    deadline = time.monotonic() + timeout
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    return [p.pid for p in alive]
