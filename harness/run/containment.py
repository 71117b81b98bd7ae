"""Containment: nothing the harness starts outlives it, even when it is killed with SIGKILL.

Every process tree the harness starts (fresh and warm cells, the warm template, a script under
``harness reproduce``, the child that ``harness diagnose`` runs user code in) is contained in
three layers:

1. **While the harness runs**, each cell's tree is killed when the cell ends
   (:func:`harness.run.sampler.kill_tree`: its process group and every descendant seen). On
   Linux the harness is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so a process
   whose parent died, a daemon that double-forked with ``setsid`` included, is re-parented to
   the harness instead of init; :func:`reap_orphans` kills those adopted orphans after every
   cell and at the end of the run.
2. **Whatever the harness's end**, a watchdog process (:mod:`harness.child.watchdog`), started once
   per harness process in its own session, holds the read end of a pipe. When the harness
   exits or dies (SIGKILL included) the pipe closes, and the watchdog kills every tracked
   process tree and process group, and every process whose environment carries this
   harness's token (:data:`TOKEN_ENV`, set by :func:`child_env` and inherited by everything a
   cell starts), then removes the tracked work folders.
3. The warm template also kills its cells' process groups when its control socket closes.

Limits (documented in docs/containment.md): a process that clears its environment *and* leaves the
process group *and* was never re-parented to the harness (its parent still alive when the
harness died) escapes layer 2; so does one running as another user. On macOS and Windows,
without a subreaper, layer 1 covers process trees only; the watchdog's environment scan
(psutil ``Process.environ``) still finds tagged daemons there. No Windows job object is used.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.child.watchdog import TOKEN_ENV
from harness.run.sampler import linux_children

__all__ = [
    "TOKEN_ENV",
    "child_env",
    "reap_orphans",
    "token",
    "track",
    "track_dir",
    "untrack",
    "untrack_dir",
    "watchdog_cpu_s",
]

_LOCK = threading.Lock()
_START_LOCK = threading.Lock()


@dataclass
class _State:
    """This harness process's containment state (under ``_LOCK``)."""

    token: str | None = None
    proc: subprocess.Popen[bytes] | None = None  # the watchdog
    broken: bool = False  # the watchdog could not be started or reached
    pids: set[int] = field(default_factory=set)


_STATE = _State()


def token() -> str:
    """This harness process's containment token (a random hex string, made once)."""
    with _LOCK:
        if _STATE.token is None:
            _STATE.token = uuid.uuid4().hex
        return _STATE.token


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default ``os.environ``) carrying this harness's token, for a child
    whose whole tree must not outlive the harness."""
    out = dict(os.environ if env is None else env)
    out[TOKEN_ENV] = token()
    return out


def _start_watchdog() -> subprocess.Popen[bytes] | None:
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP | getattr(subprocess, "DETACHED_PROCESS", 0)
    else:
        kwargs["start_new_session"] = True
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    # The watchdog must find this package even when the harness runs from a checkout.
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.child.watchdog", token()],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=True, env=env, **kwargs,
        )
    except OSError:
        return None


def _send(op: str, value: int | str) -> None:
    """Tell the watchdog about a process or folder, starting it on first use."""
    with _START_LOCK:  # one watchdog per harness process: a second one would sweep on close
        with _LOCK:
            if _STATE.broken:
                return
            proc = _STATE.proc
        if proc is None:
            proc = _start_watchdog()
            with _LOCK:
                _STATE.proc = proc
                if proc is None:
                    _STATE.broken = True
                    return
            atexit.register(_close)
    line = (json.dumps([op, value]) + "\n").encode()
    assert proc.stdin is not None  # started with stdin=PIPE
    with _LOCK:
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except (OSError, ValueError):
            _STATE.broken = True


def _close() -> None:
    """At exit: close the pipe, so the watchdog sweeps at once, and reap it (it ends quickly)."""
    with _LOCK:
        proc = _STATE.proc
        _STATE.proc = None
    if proc is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


def track(pid: int) -> None:
    """The watchdog kills ``pid``'s tree and process group if the harness ends first."""
    with _LOCK:
        _STATE.pids.add(pid)
    _send("+pid", pid)


def untrack(pid: int) -> None:
    """``pid`` ended and its tree was cleaned up."""
    with _LOCK:
        _STATE.pids.discard(pid)
    _send("-pid", pid)


def track_dir(path: str | os.PathLike[str]) -> None:
    """The watchdog removes ``path`` if the harness ends before it does."""
    _send("+dir", os.fspath(path))


def untrack_dir(path: str | os.PathLike[str]) -> None:
    """``path`` was removed."""
    _send("-dir", os.fspath(path))


def watchdog_cpu_s() -> float:
    """CPU seconds (user + system) the watchdog process has used so far; 0 when none runs."""
    proc = _STATE.proc
    if proc is None:
        return 0.0
    try:
        t = psutil.Process(proc.pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def _descendants(proc: psutil.Process) -> list[psutil.Process]:
    """Every descendant of ``proc``: from ``/proc/PID/task/*/children`` where the kernel has
    it (microseconds), else psutil's scan of every process on the machine."""
    found: list[psutil.Process] = []
    todo = [proc.pid]
    while todo:
        kids = linux_children(todo.pop())
        if kids is None:
            return list(proc.children(recursive=True))
        for kid in kids:
            with contextlib.suppress(psutil.Error):
                found.append(psutil.Process(kid))
                todo.append(kid)
    return found


def reap_orphans() -> list[int]:
    """Kill this process's adopted orphans: children that carry the token but were not
    started and tracked by it (Linux subreaper adoptions; see the module doc).

    Returns:
        the pids killed (normally empty).
    """
    with _LOCK:
        if _STATE.token is None:
            return []
        mine = set(_STATE.pids)
        tok = _STATE.token
    watchdog = _STATE.proc.pid if _STATE.proc is not None else None
    killed = []
    # This process's children from /proc/PID/task/PID/children where the kernel has it, not
    # psutil's scan of every process on the machine. An orphan is re-parented to the
    # subreaper's first live thread (kernel/exit.c, find_new_reaper), the main thread here.
    kids = linux_children(os.getpid(), main_thread_only=True)
    try:
        children = psutil.Process().children() if kids is None else [psutil.Process(k) for k in kids
                                                                    if k not in mine and k != watchdog]
    except psutil.Error:
        return []
    for child in children:
        if child.pid in mine or child.pid == watchdog:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE or child.environ().get(TOKEN_ENV) != tok:
                continue
            victims = [child, *_descendants(child)]
        except psutil.Error:
            continue
        for proc in victims:
            with contextlib.suppress(psutil.Error):
                proc.kill()
                killed.append(proc.pid)
        psutil.wait_procs(victims, timeout=2.0)
    return killed
