"""The warm template's own process: import torch once, then fork one cell per request (Linux).

Started by :class:`harness.run.warm.Template` as ``python -m harness.child.warm_server --serve
FD``; the module docstring of :mod:`harness.run.warm` tells the whole design. Like all of
:mod:`harness.child`, it imports nothing else of ``harness`` (the cell module it forks into,
:mod:`harness.child.cell`, is loaded by name).

Protocol: JSON lines over the socketpair ``FD``. Requests ``{"op": "fork", "id", "argv", "env",
"cwd", "stdout", "stderr", "sys_path"}``; answers ``{"ready": true, "pid", "threads",
"import_s", "pidfd"}`` once, then ``{"id", "pid"}`` right after each fork (or ``{"id",
"error"}``) and ``{"id", "returncode"}`` once the child is reaped. ``--probe`` prints the
``sys.path`` a fresh interpreter has here, as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import types
import weakref
from pathlib import Path

WARM_IMPORTS = (
    "torch",
    "torch.multiprocessing",
    "torch.utils.data",
    "multiprocessing.connection",
    "multiprocessing.forkserver",
    "multiprocessing.popen_fork",
    "multiprocessing.popen_forkserver",
    "multiprocessing.popen_spawn_posix",
    "multiprocessing.queues",
    "multiprocessing.resource_tracker",
    "multiprocessing.spawn",
    "multiprocessing.synchronize",
    "runpy",
    "harness.child.cell",
)
CWD_PLACEHOLDER = "\0cwd"  # stands for the cell's working directory in a probed sys.path

def send_message(sock: socket.socket, msg: dict) -> None:
    sock.sendall(json.dumps(msg).encode() + b"\n")


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _exit_code(exc: SystemExit) -> int:
    """The status ``python`` exits with for an uncaught ``SystemExit`` (CPython ``handle_system_exit``)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:  # noqa: BLE001 - stderr may be gone
        pass
    return 1


def _main_module(name: str) -> types.ModuleType:
    """Install a new ``__main__`` for module ``name`` as ``python -m name`` has it when it runs.

    The fields are those :func:`runpy._run_module_as_main` sets; ``sys.argv[0]`` becomes the
    module's file, and ``__mp_main__`` aliases ``__main__`` as ``multiprocessing/__init__.py``
    does when it is first imported (the template imported it under its own ``__main__``).
    """
    import builtins
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"No module named {name}")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=spec.origin, __cached__=spec.cached, __doc__=None,
                         __loader__=spec.loader, __package__=spec.parent, __spec__=spec,
                         __builtins__=builtins)
    sys.modules["__main__"] = main
    sys.modules["__mp_main__"] = main
    sys.argv[0] = spec.origin
    return main


def _become_cell(req: dict) -> None:
    """In the forked child: turn into ``python -m harness.child.cell ARGS``, run it, exit. Never returns."""
    code = 1
    # weakref.finalize callbacks registered by the template's own imports (torch.library
    # unregisters ~130 operator libraries, about 50 ms) run at interpreter exit in a fresh
    # cell too, after the result is written and with no effect a case can see; skip them.
    inherited = list(getattr(weakref.finalize, "_registry", {}))
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd, target in ((devnull, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(req["cwd"])
        cwd = os.getcwd()
        os.environ.clear()
        os.environ.update(req["env"])
        sys.path[:] = [cwd if p == CWD_PLACEHOLDER else p for p in req["sys_path"]]
        sys.argv = list(req["argv"])
        sys.orig_argv = [sys.executable, "-m", "harness.child.cell", *req["argv"][1:]]
        import importlib
        import multiprocessing.process
        import tempfile as _tempfile

        importlib.invalidate_caches()
        _tempfile.tempdir = None  # re-read TMPDIR, as a fresh interpreter would
        multiprocessing.process.ORIGINAL_DIR = cwd
        multiprocessing.process.current_process().authkey = os.urandom(32)
        # Per-process random state a fresh interpreter seeds from the OS: torch's default
        # generator (DataLoader draws each loader's base_seed from it) and numpy's global
        # RandomState. Python's random module reseeds itself after fork (os.register_at_fork).
        import torch

        torch.default_generator.seed()
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        main = _main_module("harness.child.cell")
        try:
            exec(main.__spec__.loader.get_code(main.__spec__.name), main.__dict__)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - as an uncaught exception in a fresh interpreter
        import traceback

        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    # What Py_FinalizeEx does that a cell can observe: join non-daemon threads, run atexit
    # callbacks (multiprocessing's _exit_function reaps leftover workers), flush stdio.
    for fin in inherited:
        fin.detach()
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        import atexit

        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _install_peak_reports() -> None:
    """Load the start-up hook's peak reporter under its own top-level name, as a fresh cell's
    ``sitecustomize`` does, and install it: each cell forked from here, and its fork workers,
    then report their peaks at exit (``harness/child/cellsite/_harness_cell_peaks.py``)."""
    import importlib.util

    name = "_harness_cell_peaks"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cellsite") / f"{name}.py")
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    module.install()


def _serve(fd: int) -> None:
    """The template's main loop on control socket ``fd``; forked children never return from it."""
    import selectors

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness decides when the template ends
    ctl = socket.socket(fileno=fd)
    t0 = time.perf_counter()
    import importlib

    for name in WARM_IMPORTS:
        importlib.import_module(name)
    # Its imports stay warm, but the module itself leaves sys.modules: a fresh
    # ``python -m harness.child.cell`` has it only as __main__ (runpy warns otherwise).
    sys.modules.pop("harness.child.cell", None)
    import harness.child

    harness.child.__dict__.pop("cell", None)
    _install_peak_reports()
    # One throw-away fork runs every pthread_atfork prepare handler once, which stops pools
    # that libraries started at import (OpenBLAS); the template itself never uses them again.
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    use_pidfd = hasattr(os, "pidfd_open")
    send_message(ctl, {"ready": True, "pid": os.getpid(), "threads": _thread_count(),
                "import_s": round(time.perf_counter() - t0, 3), "pidfd": use_pidfd})

    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ, None)
    live: dict[int, tuple[int, int | None]] = {}  # pid -> (request id, pidfd)
    buf = b""

    def reap(pid: int, status: int) -> None:
        req_id, pfd = live.pop(pid)
        if pfd is not None:
            sel.unregister(pfd)
            os.close(pfd)
        send_message(ctl, {"id": req_id, "returncode": os.waitstatus_to_exitcode(status)})

    while True:
        events = sel.select(timeout=None if use_pidfd else 0.005)
        for key, _ in events:
            if key.data is not None:
                pid = key.data
                try:
                    _, status = os.waitpid(pid, 0)
                except ChildProcessError:
                    status = 255 << 8
                reap(pid, status)
                continue
            chunk = ctl.recv(1 << 16)
            if not chunk:
                _shutdown(live)
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                try:
                    pid = os.fork()
                except OSError as exc:
                    send_message(ctl, {"id": req["id"], "error": f"fork failed: {exc}"})
                    continue
                if pid == 0:
                    sel.close()
                    for _, pfd in live.values():
                        if pfd is not None:
                            os.close(pfd)
                    ctl.close()
                    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # a fresh cell inherits 0-2 only
                    _become_cell(req)
                pfd = None
                if use_pidfd:
                    try:
                        pfd = os.pidfd_open(pid)
                    except OSError:
                        pfd = None
                live[pid] = (req["id"], pfd)
                if pfd is not None:
                    sel.register(pfd, selectors.EVENT_READ, pid)
                send_message(ctl, {"id": req["id"], "pid": pid})
        for pid in [p for p, (_, pfd) in live.items() if pfd is None]:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reap(pid, status)


def _shutdown(live: dict[int, tuple[int, int | None]]) -> None:
    """Kill every live child's process group, reap them."""
    for pid in live:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for pid in live:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _probe() -> None:
    print(json.dumps({"path": sys.path, "cwd": os.getcwd()}))


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.child.warm_server --serve FD`` (the template) or ``--probe`` (print sys.path)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--probe"]:
        _probe()
        return 0
    if argv[:1] == ["--serve"] and len(argv) == 2:
        _serve(int(argv[1]))
        return 0
    print("usage: python -m harness.child.warm_server --serve FD | --probe", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
