"""The watchdog process: when the harness that started it ends, however it ends, kill what it
left behind and remove its work folders.

``python -m harness.child.watchdog TOKEN`` reads JSON lines on stdin from the harness
(:mod:`harness.run.containment`)::

    ["+pid", 1234]   track a process (a cell, the warm template, a reproduced script)
    ["-pid", 1234]   it ended and was cleaned up by the harness
    ["+dir", "/tmp/hc-..."]   track a work folder
    ["-dir", "/tmp/hc-..."]   it was removed

End of file on stdin means the harness is gone: it exited, or was killed, SIGKILL included
(the kernel closes the pipe's write end with the process). The watchdog then kills, with
SIGKILL, every process that

* is a tracked process, its process group (a cell leads its own) or one of its descendants;
* carries ``HARNESS_CONTAINMENT_TOKEN=TOKEN`` in its environment: every process a cell
  starts inherits it, including a daemon that double-forked and left the process group
  (``setsid``), and so escaped both of the above;

repeats that until no such process is left (a process may fork while the others die), then
removes the tracked folders and exits.

This module runs in its own interpreter and imports nothing from the harness, only the
standard library and psutil, so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys

import psutil

TOKEN_ENV = "HARNESS_CONTAINMENT_TOKEN"
#: Sweeps after the first one, while processes are still found (a fork racing the kill).
SWEEP_ROUNDS = 5


def _tagged(token: str) -> list[psutil.Process]:
    """Every process whose environment carries ``TOKEN_ENV=token`` (own user's processes)."""
    me = os.getpid()
    found = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(TOKEN_ENV) == token:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def sweep(token: str, pids: set[int]) -> int:
    """Kill every tracked process tree and group and every tagged process; returns how many
    processes were sent SIGKILL (0 when nothing was left)."""
    victims: dict[int, psutil.Process] = {}
    for pid in pids:
        for proc in _tree(pid):
            victims[proc.pid] = proc
        if hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
    for proc in _tagged(token):
        victims[proc.pid] = proc
    victims = {pid: proc for pid, proc in victims.items() if _alive(proc)}
    for proc in victims.values():
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(list(victims.values()), timeout=2.0)
    return len(victims)


def main(argv: list[str] | None = None) -> int:
    """Read the harness's messages until end of file, then clean up (see the module doc)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not argv[0]:
        print("usage: python -m harness.child.watchdog TOKEN", file=sys.stderr)
        return 2
    token = argv[0]
    # The harness handles Ctrl-C itself; the watchdog must outlive it, so it ignores the
    # terminal's signals (it also runs in its own session).
    for name in ("SIGINT", "SIGHUP", "SIGTERM"):
        if hasattr(signal, name):
            with contextlib.suppress(OSError, ValueError):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
    pids: set[int] = set()
    dirs: set[str] = set()
    for raw in sys.stdin.buffer:
        try:
            op, value = json.loads(raw)
        except (ValueError, TypeError):
            continue
        if op == "+pid" and isinstance(value, int):
            pids.add(value)
        elif op == "-pid":
            pids.discard(value)
        elif op == "+dir" and isinstance(value, str):
            dirs.add(value)
        elif op == "-dir":
            dirs.discard(value)
    for _ in range(SWEEP_ROUNDS):
        if not sweep(token, pids):
            break
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
