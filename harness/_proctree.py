"""Process-tree helpers: sample memory of a cell's processes, and kill them all.

Uses psutil for portability; on POSIX the cell also leads its own process group, which
:func:`kill_tree` kills as a whole, so orphans reparented to init are caught too.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable

import psutil

__all__ = ["TreeSampler", "kill_tree"]

_HELPER_MARKERS = ("resource_tracker", "forkserver", "semaphore_tracker")


class TreeSampler:
    """Peak memory of a cell process and of its DataLoader workers.

    Workers are every descendant except multiprocessing's own helpers that are direct
    children of the cell (the resource tracker and the forkserver server); forkserver
    workers are children of the server and count as workers.

    Attributes:
        parent_peak_rss: peak RSS of the cell process, bytes.
        worker_peak_rss: peak RSS of the largest worker, bytes (0 when none was seen).
        worker_peak_uss: peak USS (private memory) of the largest worker, bytes.
        procs: every process ever seen in the tree (psutil objects, which refuse to signal a
            recycled pid).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.parent_peak_rss = 0
        self.worker_peak_rss = 0
        self.worker_peak_uss = 0
        self.workers_seen: set[int] = set()
        self.procs: dict[int, psutil.Process] = {}
        self._helpers: set[int] = set()
        try:
            self._proc = psutil.Process(pid)
            self.procs[pid] = self._proc
        except psutil.Error:
            self._proc = None

    def sample(self) -> None:
        """Take one sample; missing or vanished processes are ignored."""
        if self._proc is None:
            return
        try:
            self.parent_peak_rss = max(self.parent_peak_rss, self._proc.memory_info().rss)
            direct = self._proc.children(recursive=False)
            every = self._proc.children(recursive=True)
        except psutil.Error:
            return
        for child in direct:
            if child.pid in self._helpers or child.pid in self.workers_seen:
                continue
            try:
                cmd = " ".join(child.cmdline())
            except psutil.Error:
                continue
            if any(m in cmd for m in _HELPER_MARKERS):
                self._helpers.add(child.pid)
        for proc in every:
            self.procs.setdefault(proc.pid, proc)
            if proc.pid in self._helpers:
                continue
            try:
                info = proc.memory_full_info()
            except psutil.Error:
                continue
            self.workers_seen.add(proc.pid)
            self.worker_peak_rss = max(self.worker_peak_rss, info.rss)
            self.worker_peak_uss = max(self.worker_peak_uss, getattr(info, "uss", 0))


def kill_tree(pid: int, known: Iterable[psutil.Process] = (), timeout: float = 5.0) -> list[int]:
    """Kill ``pid``, its process group (POSIX) and every known or current descendant.

    Args:
        pid: the cell process, which leads its own process group on POSIX.
        known: processes seen earlier in the tree (catches orphans of a dead parent).
        timeout: seconds to wait for them to go.

    Returns:
        pids still alive after ``timeout`` (normally empty).
    """
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
