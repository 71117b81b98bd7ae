"""The warm template's own process: import torch once, then fork one cell per request (Linux).

Started by :class:`harness.run.warm.Template` as ``python -m harness.child.warm_server --serve
FD``; the module docstring of :mod:`harness.run.warm` tells the whole design. Like all of
:mod:`harness.child`, it imports nothing else of ``harness`` (the cell module it forks into,
:mod:`harness.child.cell`, is loaded by name).

Protocol (:mod:`harness.child.warm_protocol`): JSON lines over the socketpair ``FD``. The
harness sends a :class:`~harness.child.warm_protocol.ForkRequest` per cell; the template
answers :class:`~harness.child.warm_protocol.Ready` once, then
:class:`~harness.child.warm_protocol.Forked` right after each fork (or
:class:`~harness.child.warm_protocol.ForkFailed`) and
:class:`~harness.child.warm_protocol.Exited` once the child is reaped. ``--probe`` prints the
``sys.path`` a fresh interpreter has here (:class:`~harness.child.warm_protocol.ProbedPath`).
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import signal
import socket
import sys
import threading
import time
import types
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from harness.child.warm_protocol import (
    CWD_PLACEHOLDER,
    Exited,
    Forked,
    ForkFailed,
    ForkRequest,
    ProbedPath,
    Ready,
    send,
)

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


def _main_module(name: str) -> tuple[types.ModuleType, types.CodeType]:
    """Install a new ``__main__`` for module ``name`` as ``python -m name`` has it when it runs;
    returns it with the module's code, to be executed in it.

    The fields are those :func:`runpy._run_module_as_main` sets; ``sys.argv[0]`` becomes the
    module's file, and ``__mp_main__`` aliases ``__main__`` as ``multiprocessing/__init__.py``
    does when it is first imported (the template imported it under its own ``__main__``).

    Raises:
        ImportError: ``name`` is not found, or has no source or code to run.
    """
    import builtins
    import importlib.abc
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not isinstance(spec.loader, importlib.abc.InspectLoader):
        raise ImportError(f"No module named {name}")
    code = spec.loader.get_code(name)
    if code is None:
        raise ImportError(f"No code for module {name}")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=spec.origin, __cached__=spec.cached, __doc__=None,
                         __loader__=spec.loader, __package__=spec.parent, __spec__=spec,
                         __builtins__=builtins)
    sys.modules["__main__"] = main
    sys.modules["__mp_main__"] = main
    sys.argv[0] = spec.origin
    return main, code


def _detach(req: ForkRequest) -> None:
    """Lead a new session and process group, take default signal dispositions, read stdin from
    ``/dev/null`` and write stdout and stderr to the cell's files, as the harness starts a
    fresh cell."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    out = os.open(req.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(req.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for fd, target in ((devnull, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)


def _take_place(req: ForkRequest) -> str:
    """Take the cell's working directory, environment, ``sys.path`` and ``sys.argv``; returns
    the working directory."""
    os.chdir(req.cwd)
    cwd = os.getcwd()
    os.environ.clear()
    os.environ.update(req.env)
    sys.path[:] = [cwd if p == CWD_PLACEHOLDER else p for p in req.sys_path]
    sys.argv = list(req.argv)
    sys.orig_argv = [sys.executable, "-m", "harness.child.cell", *req.argv[1:]]
    return cwd


def _fresh_process_state(cwd: str) -> None:
    """Reset what a fresh interpreter has of its own: import caches, the temp directory,
    multiprocessing's start directory and authkey, and the random state it seeds from the OS."""
    import importlib
    import multiprocessing.process
    import tempfile as _tempfile

    importlib.invalidate_caches()
    _tempfile.tempdir = None  # re-read TMPDIR, as a fresh interpreter would
    # multiprocessing.process sets ORIGINAL_DIR at import and passes it to spawn children.
    multiprocessing.process.ORIGINAL_DIR = cwd  # type: ignore[attr-defined]  # typeshed omits it
    multiprocessing.process.current_process().authkey = os.urandom(32)
    # Per-process random state a fresh interpreter seeds from the OS: torch's default
    # generator (DataLoader draws each loader's base_seed from it) and numpy's global
    # RandomState. Python's random module reseeds itself after fork (os.register_at_fork).
    import torch

    torch.default_generator.seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()


def _run_cell_module() -> int:
    """Run :mod:`harness.child.cell` as ``python -m`` runs it; returns the exit status."""
    main, code = _main_module("harness.child.cell")
    try:
        exec(code, main.__dict__)
    except SystemExit as exc:
        return _exit_code(exc)
    return 0


def _exit_as_interpreter(inherited: Iterable[weakref.finalize[..., object]], code: int) -> NoReturn:
    """Exit with ``code`` after what ``Py_FinalizeEx`` does that a cell can observe: join
    non-daemon threads, run ``atexit`` callbacks (multiprocessing's ``_exit_function`` reaps
    leftover workers), flush stdio. The template's own finalizers (``inherited``) are dropped."""
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


def _become_cell(req: ForkRequest) -> NoReturn:
    """In the forked child: turn into ``python -m harness.child.cell ARGS``, run it, exit."""
    code = 1
    # weakref.finalize callbacks registered by the template's own imports (torch.library
    # unregisters ~130 operator libraries, about 50 ms) run at interpreter exit in a fresh
    # cell too, after the result is written and with no effect a case can see; skip them.
    inherited = list(getattr(weakref.finalize, "_registry", {}))
    try:
        _detach(req)
        _fresh_process_state(_take_place(req))
        code = _run_cell_module()
    except BaseException:  # noqa: BLE001 - as an uncaught exception in a fresh interpreter
        import traceback

        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    _exit_as_interpreter(inherited, code)


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


def _warm_up() -> None:
    """Import what every cell needs (:data:`WARM_IMPORTS`), install the peak reports, and run
    the ``pthread_atfork`` handlers once, so that no thread is left when cells are forked."""
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
    collapse_resident_memory()


#: Bytes of a transparent huge page on x86-64 and arm64 with 4 KiB pages (``PMD_SIZE``).
HUGE_PAGE_BYTES = 2 << 20
_PAGE_BYTES = 4096
_MADV_COLLAPSE = 25  # <linux/mman.h>, Linux 6.1
#: ``/proc/PID/pagemap`` bits (``Documentation/admin-guide/mm/pagemap.rst``).
_PM_PRESENT = 1 << 63
_PM_EXCLUSIVE = 1 << 56
#: Mappings larger than this are not scanned (8 bytes of ``pagemap`` per 4 KiB page).
_LARGEST_SCANNED_BYTES = 1 << 30


def _full_huge_ranges() -> list[int]:
    """Start addresses of the 2 MiB-aligned ranges of this process's private anonymous memory
    (the ``[heap]`` and unnamed ``rw-p`` mappings) whose 512 pages are all resident and mapped
    by this process alone (``pagemap``: present and exclusively mapped, so neither holes nor
    the shared zero page)."""
    pages = HUGE_PAGE_BYTES // _PAGE_BYTES
    starts: list[int] = []
    with open("/proc/self/maps", "rb") as maps, open("/proc/self/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if fields[1] != b"rw-p" or (len(fields) > 5 and fields[5] != b"[heap]"):
                continue
            low, high = (int(x, 16) for x in fields[0].split(b"-"))
            if high - low > _LARGEST_SCANNED_BYTES:
                continue  # an address-space reservation: reading its pagemap would cost more
            at = (low + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1)
            while at + HUGE_PAGE_BYTES <= high:
                pagemap.seek(at // _PAGE_BYTES * 8)
                entries = memoryview(pagemap.read(pages * 8)).cast("Q")
                if len(entries) == pages and all(e & _PM_PRESENT and e & _PM_EXCLUSIVE for e in entries):
                    starts.append(at)
                at += HUGE_PAGE_BYTES
    return starts


def collapse_resident_memory() -> int:
    """Back the template's fully resident anonymous memory by transparent huge pages; returns
    the bytes collapsed (0 off Linux, before Linux 6.1, or where the kernel refuses).

    Why: ``fork(2)`` copies one page-table entry per resident 4 KiB page of private memory,
    and the template forks once per cell with about 150 MB of it after ``import torch``: about
    3 ms of the template's CPU per cell. A 2 MiB range mapped by one huge page is one entry.
    ``madvise(MADV_COLLAPSE)`` (Linux 6.1, ``madvise(2)``) rebuilds a range synchronously as a
    huge page, whatever the system's THP settings, without marking the mapping for huge pages
    (so a cell's own later allocations are as a fresh process's).

    What a cell sees does not change: only ranges whose 512 pages are already resident and
    this process's own are collapsed (a range with a hole would be filled with zeros, adding
    resident memory), so every process's resident set and private memory keep their size. A
    cell that writes into such a range splits its mapping back into 4 KiB entries and copies
    the one page it wrote, as before (copy-on-write of huge pages splits the mapping, Linux
    5.8). Measured after ``import torch``: about 60 MB of 150 MB qualifies, collapsing it
    costs about 0.1 s once, and each fork then costs about 2 ms instead of 3 ms.
    """
    if not sys.platform.startswith("linux"):
        return 0
    try:
        if os.sysconf("SC_PAGE_SIZE") != _PAGE_BYTES:
            return 0  # 16 or 64 KiB pages (some arm64 kernels): another huge-page size
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise.restype = ctypes.c_int
        done = 0
        for start in _full_huge_ranges():
            # EINVAL before Linux 6.1 or for a mapping marked MADV_NOHUGEPAGE; EAGAIN or
            # ENOMEM when no huge page is free: that range stays as it is.
            if madvise(start, HUGE_PAGE_BYTES, _MADV_COLLAPSE) == 0:
                done += HUGE_PAGE_BYTES
        return done
    except (OSError, AttributeError, ValueError):
        return 0


class _Server:
    """The template's loop on its control socket: fork a cell per :class:`ForkRequest`,
    answer :class:`Forked` (or :class:`ForkFailed`), and :class:`Exited` once it is reaped.

    A child's exit wakes the loop through its pidfd (Linux 5.3+); without pidfds the loop polls
    every 5 ms. When the harness's end of the socket closes, every child is killed.
    """

    def __init__(self, ctl: socket.socket, use_pidfd: bool) -> None:
        self.ctl = ctl
        self.use_pidfd = use_pidfd
        self.sel = selectors.DefaultSelector()
        self.sel.register(ctl, selectors.EVENT_READ, None)
        self.live: dict[int, tuple[int, int | None]] = {}  # pid -> (request id, pidfd)
        self.buf = b""

    def run(self) -> None:
        """Serve until the harness's end closes; forked children never return from here."""
        while True:
            for key, _ in self.sel.select(timeout=None if self.use_pidfd else 0.005):
                if key.data is not None:
                    self._reap_now(key.data)
                elif not self._read_requests():
                    _shutdown(self.live)
                    return
            self._poll_unwatched()

    def _read_requests(self) -> bool:
        """Fork a cell for each complete request line received; False once the socket closed."""
        chunk = self.ctl.recv(1 << 16)
        if not chunk:
            return False
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self._fork(ForkRequest.from_json(json.loads(line)))
        return True

    def _fork(self, req: ForkRequest) -> None:
        try:
            pid = os.fork()
        except OSError as exc:
            send(self.ctl, ForkFailed(id=req.id, error=f"fork failed: {exc}"))
            return
        if pid == 0:
            self._close_in_child()
            _become_cell(req)
        self.live[pid] = (req.id, self._watch(pid))
        send(self.ctl, Forked(id=req.id, pid=pid))

    def _close_in_child(self) -> None:
        """In a forked child: close every descriptor of the template (a fresh cell inherits 0-2 only)."""
        self.sel.close()
        for _, pfd in self.live.values():
            if pfd is not None:
                os.close(pfd)
        self.ctl.close()
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))

    def _watch(self, pid: int) -> int | None:
        """A pidfd for ``pid``, registered with the selector; ``None`` where there is none."""
        if not self.use_pidfd:
            return None
        try:
            pfd = os.pidfd_open(pid)
        except OSError:
            return None
        self.sel.register(pfd, selectors.EVENT_READ, pid)
        return pfd

    def _reap_now(self, pid: int) -> None:
        try:
            _, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            status, usage = 255 << 8, None
        self._reap(pid, status, usage)

    def _poll_unwatched(self) -> None:
        for pid in [p for p, (_, pfd) in self.live.items() if pfd is None]:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                self._reap(pid, status, usage)

    def _reap(self, pid: int, status: int, usage: resource.struct_rusage | None) -> None:
        req_id, pfd = self.live.pop(pid)
        if pfd is not None:
            self.sel.unregister(pfd)
            os.close(pfd)
        maxrss = usage.ru_maxrss * 1024 if usage is not None else 0  # KiB on Linux (getrusage(2))
        send(self.ctl, Exited(id=req_id, returncode=os.waitstatus_to_exitcode(status), maxrss_bytes=maxrss))


def _serve(fd: int) -> None:
    """The template's life on control socket ``fd``: warm up, say :class:`Ready`, serve."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness decides when the template ends
    ctl = socket.socket(fileno=fd)
    t0 = time.perf_counter()
    _warm_up()
    use_pidfd = hasattr(os, "pidfd_open")
    send(ctl, Ready(pid=os.getpid(), threads=_thread_count(), import_s=round(time.perf_counter() - t0, 3),
                    pidfd=use_pidfd))
    _Server(ctl, use_pidfd).run()


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
    print(json.dumps(ProbedPath(path=tuple(sys.path), cwd=os.getcwd()).as_json()))


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
