"""The test process's side of the clean checker process (:mod:`harness.child.checker`).

One :class:`Checker` per test session (per xdist worker), started on first use and reused
for every request. Requests are written by a thread of their own and replies read by
another, so :meth:`Checker.submit` never blocks the test while the checker imports torch or
works on an earlier request; :meth:`Checker.reply` waits for one answer, with a timeout.

The checker runs ``python -I`` (no user site, no ``PYTHONPATH``, no current directory on
``sys.path`` before it is prepared), so no module of the user's directory is imported before
the checker is prepared as a spawned worker, in its own session (POSIX) or process group
(Windows). A checker that dies, hangs past its timeout or breaks the protocol is killed with
its whole tree (:func:`harness.run.sampler.kill_tree`) and the next request starts a fresh one.
"""

from __future__ import annotations

import collections
import itertools
import os
import queue
import subprocess
import sys
import threading
from typing import Any, BinaryIO

from harness.child.frames import FrameError, read_message, write_message

__all__ = ["Checker", "CheckerGone"]

_HARNESS_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: ``-c`` program of the checker: the harness's own folder last on ``sys.path`` (where it is
#: not installed, as in a checkout), then :func:`harness.child.checker.main`.
_PROGRAM = (
    "import sys; sys.path.append({parent!r}); "
    "from harness.child.checker import main; main()"
)
#: Seconds to wait for a checker to import torch and answer that it is ready.
START_TIMEOUT_S = 120.0


class CheckerGone(Exception):
    """The checker process died, hung past its timeout, or broke the protocol while it worked
    on this request; ``str()`` says which."""


class CheckerRestarted(CheckerGone):
    """The checker died while it worked on an earlier request: this one never ran, and the
    next :meth:`Checker.submit` starts a fresh checker to send it again."""


def preparation_data() -> dict[str, Any]:
    """What ``multiprocessing.spawn`` gives a spawned worker to prepare itself with
    (``get_preparation_data``): ``sys.path``, ``sys.argv``, the working directory, the main
    module; the authentication key and logging settings left out."""
    import multiprocessing.spawn

    data = multiprocessing.spawn.get_preparation_data("harness-checker")
    keep = ("name", "sys_path", "sys_argv", "dir", "orig_dir", "init_main_from_path", "init_main_from_name")
    return {k: data[k] for k in keep if k in data}


class Checker:
    """A lazily started, reused checker process.

    Args:
        timeout_s: seconds one request may take (loading, the first batch and its way back).
    """

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._ids = itertools.count(1)
        self._outbox: queue.Queue[tuple[dict[str, Any], list[bytes]] | None] = queue.Queue()
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._ended: str | None = None
        self._ready = False
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._inflight: set[int] = set()
        self._culprit: int | None = None  # the request in progress when the checker ended
        self.started = 0  # checker processes started this session

    # -- lifetime ----------------------------------------------------------------------------

    def _start(self) -> None:
        from harness.run import containment

        self._stderr = collections.deque(maxlen=64)
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            kwargs["start_new_session"] = True
        # The containment token and watchdog: if this process is killed (a CI timeout killing
        # pytest's process group), the checker and what it started are killed too.
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _PROGRAM.format(parent=_HARNESS_PARENT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=containment.child_env(), **kwargs,
        )
        containment.track(self._proc.pid)
        self.started += 1
        self._inflight = set()
        self._culprit = None
        self._outbox = queue.Queue()
        self._replies = {}
        self._ended = None
        self._ready = False
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._outbox.put(({"preparation": preparation_data()}, []))
        for target, stream in ((self._write_loop, self._proc.stdin), (self._read_loop, self._proc.stdout),
                               (self._drain, self._proc.stderr)):
            threading.Thread(target=target, args=(stream,), name="harness-checker", daemon=True).start()

    def _drain(self, stream: BinaryIO) -> None:
        """Keep the end of what the checker writes to standard error (bounded: a dataset that
        floods it fills no disk)."""
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                self._stderr.append(chunk[-4096:])
        except (OSError, ValueError):
            pass

    def warm_up(self) -> None:
        """Start the checker now, if it is not running, without waiting for it."""
        if self._proc is None:
            self._start()

    def close(self) -> None:
        """End the checker and everything it started; nothing outlives this call."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        self._outbox.put(None)
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        from harness.run import containment
        from harness.run.sampler import kill_tree

        if sys.platform != "win32":
            try:  # its own session: everything it started, even after it was reaped
                os.killpg(proc.pid, 9)
            except OSError:
                pass
        kill_tree(proc.pid)
        containment.untrack(proc.pid)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - kill_tree waited already
            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    # -- the threads -------------------------------------------------------------------------

    def _write_loop(self, stream: BinaryIO) -> None:
        outbox = self._outbox
        while True:
            item = outbox.get()
            if item is None:
                break
            try:
                write_message(stream, *item)
            except (OSError, ValueError):
                break  # the checker is gone; the reader says why
        try:
            stream.close()
        except OSError:
            pass

    def _read_loop(self, stream: BinaryIO) -> None:
        reason = "the checker process ended"
        try:
            while True:
                message = read_message(stream)
                if message is None:
                    break
                header = message[0]
                with self._cond:
                    if "ready" in header:
                        if not header.get("ready"):
                            reason = f"the checker could not be prepared as a spawned worker: {header.get('error')}"
                            break
                        self._ready = True
                    elif isinstance(header.get("id"), int):
                        self._replies[header["id"]] = header
                        self._inflight.discard(header["id"])
                    self._cond.notify_all()
        except (OSError, ValueError, FrameError) as exc:
            reason = f"the checker broke the protocol: {exc}"
        with self._cond:
            self._ended = reason
            self._culprit = min(self._inflight) if self._inflight else None
            self._cond.notify_all()

    # -- requests ----------------------------------------------------------------------------

    def submit(self, header: dict[str, Any], blobs: list[bytes]) -> int:
        """Queue one request; returns its id for :meth:`reply`. Starts the checker if needed."""
        if self._proc is None:
            self._start()
        request_id = next(self._ids)
        with self._cond:
            self._inflight.add(request_id)
        self._outbox.put(({**header, "id": request_id}, blobs))
        return request_id

    def reply(self, request_id: int) -> dict[str, Any]:
        """The checker's answer to ``request_id``.

        Raises:
            CheckerGone: the checker ended, or did not answer within ``timeout_s`` (after it
                was ready); it is then killed, and the next :meth:`submit` starts another.
        """
        import time

        deadline: float | None = None
        with self._cond:
            while request_id not in self._replies:
                if self._ended is not None:
                    break
                now = time.monotonic()
                if deadline is None and self._ready:
                    deadline = now + self.timeout_s
                limit = deadline if deadline is not None else now + START_TIMEOUT_S
                if now >= limit:
                    break
                self._cond.wait(timeout=min(limit - now, 0.5))
                if deadline is None and not self._ready and time.monotonic() >= limit:
                    break
            reply = self._replies.pop(request_id, None)
            ended = self._ended
            culprit = self._culprit
        if reply is not None:
            return reply
        if ended is not None and culprit is not None and culprit != request_id:
            self.close()
            raise CheckerRestarted(f"the checker ended during request {culprit}, before this one")
        reason = ended or (f"no answer within {self.timeout_s:g} s (the first batch, or loading, hangs)"
                           if self._ready else f"the checker was not ready within {START_TIMEOUT_S:g} s")
        status = None
        if self._proc is not None:
            try:  # it closed its end: its exit status follows at once
                status = self._proc.wait(timeout=2) if ended else self._proc.poll()
            except subprocess.TimeoutExpired:
                status = None
        tail = self._stderr_tail()
        self.close()
        detail = f" (exit status {status})" if status not in (None, 0) else ""
        raise CheckerGone(reason + detail + (f"; its last output: {tail}" if tail else ""))

    def _stderr_tail(self, limit: int = 400) -> str:
        text = b"".join(list(self._stderr))[-limit:].decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""
