"""Warm cell starts: a template interpreter that forks one isolated process per cell (Linux).

A fresh cell (``python -m harness.child.cell``) pays an interpreter start plus ``import torch``,
about 1.5 s, before the case does anything. The template pays that once per ``harness run``:
it imports torch, ``torch.multiprocessing``, ``torch.utils.data``, multiprocessing's
start-method modules and :mod:`harness.child.cell` (never case code), makes sure no thread is left
running, then forks one child per cell on request. The child makes itself look like
``python -m harness.child.cell SPEC RESULT`` started by the harness, then runs that module:

* its own session and process group (``os.setsid``), so the watchdog can kill its tree;
* stdin from ``/dev/null``, stdout and stderr onto the cell's files, the cell's working
  directory and environment (``HARNESS_CELL_METHOD``, ``TMPDIR``, ``PYTHONPATH`` ...);
* ``sys.path`` exactly as a fresh ``python -m`` in that directory with that environment
  builds it (probed once per catalogue root with a real fresh interpreter), ``sys.argv``,
  ``multiprocessing.process.ORIGINAL_DIR`` (which spawn passes to its children), a new
  multiprocessing authkey, and default signal dispositions;
* a new ``__main__`` module for ``harness.child.cell``, with the fields ``python -m`` gives it
  (``runpy._run_module_as_main``), aliased as ``__mp_main__`` as ``multiprocessing``
  does. Spawn and forkserver workers of a module case therefore re-import
  ``harness.child.cell`` as ``__mp_main__`` (harmless, as in a fresh cell), never the template;
  a script case still runs through :func:`runpy.run_path` as ``__main__``, so its workers
  re-import the real script (``multiprocessing.spawn.get_preparation_data`` reads
  ``sys.modules['__main__']``);
* per-process random state reseeded from the OS, as a fresh interpreter has it: torch's
  default generator and numpy's global ``RandomState`` (Python's ``random`` reseeds itself
  after a fork).

On exit the child does what interpreter shutdown does that a case can observe: it joins
non-daemon threads (``threading._shutdown``), runs ``atexit`` callbacks (multiprocessing's
``_exit_function`` terminates and joins leftover daemonic workers) and flushes stdio, then
calls ``os._exit``. It skips the teardown of every imported module (about 0.3 s with torch
loaded) and the ``weakref.finalize`` callbacks the template's imports registered (torch
unregistering its operator libraries, about 50 ms): neither runs case code, and the result
file is written before.

Before it reports ready, the template rebuilds the 2 MiB ranges of its private memory that are
fully resident as transparent huge pages
(:func:`harness.child.warm_server.collapse_resident_memory`): each fork then copies about a
third fewer page-table entries. No page is added or removed, so every resident set and every
private-memory figure a cell or worker reports stays the same; a cell that writes into such a
range copies one 4 KiB page, as before.

Known differences from a fresh interpreter: the hash seed (``PYTHONHASHSEED``) is the
template's for every cell, and modules the template imported are already in
``sys.modules``. Outcomes and kinds are the same; ``tests/e2e/test_isolation.py`` checks it.

Why no threads: forking a multi-threaded process may deadlock the child (POSIX
``fork(2)``; CPython 3.12+ warns about it). numpy's OpenBLAS starts a thread pool at import
and stops it in its own ``pthread_atfork`` prepare handler, so the template forks once
after importing and checks ``/proc/self/task`` before it reports ready.

Protocol (:mod:`harness.child.warm_protocol`, one frozen class per message): JSON lines over
a socketpair. The harness sends a ``ForkRequest`` (``"op": "fork"``); the template answers
``Ready`` once, then ``Forked`` right after each fork (or ``ForkFailed``) and ``Exited`` once
it has reaped the child (``os.waitstatus_to_exitcode``: ``-N`` for signal N). When the
harness's end closes (it exited, or was killed), the template kills every child's process
group and exits.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from harness.child.warm_protocol import (
    CWD_PLACEHOLDER,
    Answer,
    Exited,
    Forked,
    ForkFailed,
    ForkRequest,
    ProbedPath,
    Ready,
    read_answer,
    send,
)
from harness.errors import TemplateError
from harness.run.containment import child_env, track, track_dir, untrack, untrack_dir

__all__ = ["Template", "TemplateError", "WarmChild", "warm_available"]

READY_TIMEOUT_S = 120.0


def warm_available() -> bool:
    """Whether warm starts exist here: Linux only (fork without exec is unsafe on macOS)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")




@dataclass
class WarmChild:
    """A cell process forked by the template.

    Attributes:
        pid: the cell's pid; it leads its own session and process group.
        returncode: exit status once reaped (``-N`` when killed by signal N), else ``None``.
        lost: the template died before it could report this child's exit.
        maxrss: its ``ru_maxrss`` as the template reaped it, bytes (:class:`~harness.child.
            warm_protocol.Exited`); 0 until then.
    """

    pid: int = 0
    returncode: int | None = None
    lost: bool = False
    maxrss: int = 0
    error: str | None = None
    _started: threading.Event = field(default_factory=threading.Event, repr=False)
    _exited: threading.Event = field(default_factory=threading.Event, repr=False)

    def wait(self, timeout: float | None) -> bool:
        """Block up to ``timeout`` seconds (``None``: forever); True once the child is reaped."""
        return self._exited.wait(timeout)


class Template:
    """Harness-side handle of one template process (see the module docstring).

    Start it with :meth:`start`, fork cells with :meth:`fork`, end it with :meth:`close`
    (also a context manager). Thread-safe: many cell threads may fork at once.

    Args:
        env: the template's environment; default ``os.environ`` plus ``PYTHONUNBUFFERED=1``
            and ``PYTHONFAULTHANDLER=1``, the interpreter-start settings fresh cells get.
    """

    def __init__(self, env: dict[str, str] | None = None) -> None:
        if env is None:
            env = dict(os.environ)
            env["PYTHONUNBUFFERED"] = "1"
            env["PYTHONFAULTHANDLER"] = "1"
        # The containment token: every cell forked from the template carries it in its
        # process environment, so the watchdog finds their leftovers (harness.run.containment).
        self._env = child_env(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._children: dict[int, WarmChild] = {}
        self._next_id = 0
        self._ready = threading.Event()
        self._dead = threading.Event()
        self._info: Ready | None = None
        self._paths: dict[str, list[str]] = {}
        self._logdir = Path(tempfile.mkdtemp(prefix="harness-template-"))
        track_dir(self._logdir)
        self._reader: threading.Thread | None = None
        self.failed = False  # set by the runner once a fork failed; later cells start fresh

    @property
    def pid(self) -> int | None:
        """The template process's pid, once started."""
        return self._proc.pid if self._proc else None

    @property
    def info(self) -> Ready | None:
        """The template's :class:`~harness.child.warm_protocol.Ready` message (``pid``,
        ``threads``, ``import_s`` in seconds, ``pidfd``); ``None`` until it came."""
        return self._info

    def start(self) -> Template:
        """Launch the template interpreter (it imports torch in the background) and return self."""
        parent, child = socket.socketpair()
        log = open(self._logdir / "template.log", "wb")  # noqa: SIM115 - handed to the child
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "harness.child.warm_server", "--serve", str(child.fileno())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(child.fileno(),),
                env=self._env, cwd=self._logdir, start_new_session=True,
            )
        finally:
            child.close()
            log.close()
        self._sock = parent
        track(self._proc.pid)
        self._reader = threading.Thread(target=self._read, name="harness-template", daemon=True)
        self._reader.start()
        return self

    def __enter__(self) -> Template:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> Ready:
        """Block until the template has imported everything; return its ready message.

        Raises:
            TemplateError: it died, timed out, or still runs more than one thread.
        """
        if not self._ready.wait(timeout):
            raise TemplateError(f"template did not become ready within {timeout:.0f} s{self._log_tail()}")
        info = self._info
        if info is None:  # the reader set _ready as it saw the template die
            raise TemplateError(f"template exited during start-up{self._log_tail()}")
        if info.threads != 1:
            raise TemplateError(f"template runs {info.threads} threads after its imports; "
                                "forking it would not be safe")
        return info

    def _log_tail(self) -> str:
        try:
            text = (self._logdir / "template.log").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1]}" if text else ""

    def _read(self) -> None:
        """The reader thread: apply each answer of the template until its socket closes; then
        every child still waiting is lost (the template died, or was closed)."""
        assert self._sock is not None
        fh = self._sock.makefile("rb")
        try:
            for line in fh:
                self._apply(read_answer(json.loads(line)))
        except (OSError, ValueError):  # ValueError: not JSON, or not a template message
            pass
        finally:
            self._dead.set()
            self._ready.set()
            with self._lock:
                orphans = list(self._children.values())
                self._children.clear()
            for child in orphans:
                child.lost = True
                if not child.pid:
                    child.error = child.error or "template died before forking the cell"
                child._started.set()
                child._exited.set()

    def _apply(self, answer: Answer) -> None:
        """Record one answer: the template is ready, or a child was forked, failed or exited."""
        if isinstance(answer, Ready):
            self._info = answer
            self._ready.set()
            return
        with self._lock:
            child = self._children.get(answer.id)
        if child is None:
            return
        if isinstance(answer, Forked):
            child.pid = answer.pid
            child._started.set()
        elif isinstance(answer, ForkFailed):
            child.error = answer.error
            child._started.set()
            child._exited.set()
        elif isinstance(answer, Exited):
            child.returncode = answer.returncode
            child.maxrss = answer.maxrss_bytes
            child._exited.set()
            with self._lock:
                self._children.pop(answer.id, None)

    def sys_path_for(self, env: dict[str, str]) -> list[str]:
        """``sys.path`` of a fresh ``python -m`` with ``env`` (cwd left as a placeholder).

        Probed once per ``PYTHONPATH`` with a real fresh interpreter, which applies ``site``
        and ``.pth`` files exactly as a fresh cell's interpreter does.

        Raises:
            TemplateError: the probe failed.
        """
        key = env.get("PYTHONPATH", "")
        with self._lock:
            cached = self._paths.get(key)
        if cached is not None:
            return cached
        probe_dir = tempfile.mkdtemp(prefix="harness-probe-")
        try:
            # Not one of the cell's processes: it must not report into the cell's peaks.
            probe_env = {k: v for k, v in env.items() if k != "HARNESS_CELL_PEAKS"}
            out = subprocess.run([sys.executable, "-m", "harness.child.warm_server", "--probe"], env=probe_env,
                                 cwd=probe_dir, capture_output=True, text=True, timeout=60, check=True)
            data = ProbedPath.from_json(json.loads(out.stdout))
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise TemplateError(f"cannot probe a fresh interpreter's sys.path: {exc}") from None
        finally:
            os.rmdir(probe_dir)
        path = [CWD_PLACEHOLDER if p == data.cwd else p for p in data.path]
        with self._lock:
            self._paths[key] = path
        return path

    def fork(self, *, argv: list[str], env: dict[str, str], cwd: str, stdout: str, stderr: str,
             timeout: float = 30.0) -> WarmChild:
        """Fork one cell from the template; returns once its pid is known.

        Args:
            argv: ``sys.argv`` of the cell as ``python -m harness.child.cell`` would see it;
                ``argv[0]`` is replaced by ``harness/child/cell.py``'s path.
            env: the cell's complete environment.
            cwd: the cell's working directory.
            stdout, stderr: files the cell's fd 1 and 2 are opened on (truncated).
            timeout: seconds to wait for the template to be ready and to fork.

        Raises:
            TemplateError: the template is not running, or could not fork.
        """
        if self._proc is None:
            self.start()
        self.wait_ready(max(timeout, READY_TIMEOUT_S))
        if self._dead.is_set():
            raise TemplateError(f"template is not running{self._log_tail()}")
        sys_path = self.sys_path_for(env)
        child = WarmChild()
        with self._lock:
            self._next_id += 1
            req_id = self._next_id
            self._children[req_id] = child
        req = ForkRequest(id=req_id, argv=tuple(argv), env=dict(env), cwd=cwd, stdout=stdout, stderr=stderr,
                          sys_path=tuple(sys_path))
        try:
            with self._send_lock:
                assert self._sock is not None
                send(self._sock, req)
        except OSError as exc:
            with self._lock:
                self._children.pop(req_id, None)
            raise TemplateError(f"template is not running: {exc}") from None
        if not child._started.wait(timeout) or child.error:
            raise TemplateError(child.error or f"template did not fork within {timeout:.0f} s")
        return child

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the template process itself has used so far, not counting
        the cells it forked; 0 when it is not running."""
        if self._proc is None or self._proc.poll() is not None:
            return 0.0
        try:
            import psutil

            t = psutil.Process(self._proc.pid).cpu_times()
        except Exception:  # noqa: BLE001 - psutil.Error, or the template just ended
            return 0.0
        return t.user + t.system

    def close(self, timeout: float = 10.0) -> None:
        """End the template: it kills the process group of every cell still running, then exits."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout)
            self._reader = None
        try:
            for p in self._logdir.iterdir():
                p.unlink()
            self._logdir.rmdir()
        except OSError:
            pass
        untrack_dir(self._logdir)
        if self._proc is not None:
            untrack(self._proc.pid)
