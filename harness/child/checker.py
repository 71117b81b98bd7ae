"""``python -I -m harness.child.checker``: the clean interpreter that loads what a worker start sends.

The pytest guard (``pytest --check-loaders``, :mod:`harness.guard`) pickles each ``DataLoader``'s
worker arguments in the test process, with ``ForkingPickler`` and torch's reducers, as a
``spawn`` or ``forkserver`` start does, and sends the bytes here. This process was started
once per test session (per xdist worker) and prepared as a spawned worker is prepared
(:func:`multiprocessing.spawn.prepare` with the test process's preparation data: its
``sys.path``, working directory and main module, run as ``__mp_main__``), so the test process's
own modules and ``__main__`` are importable here only as a spawned worker would find them. For
each request it:

1. loads the arguments (``pickle.loads``, as ``_bootstrap`` does in the worker), noting which
   global (``module``, ``name``) could not be found when that is what failed;
2. (after the test, on a second request: building the first batch runs the dataset's own
   code, whose side effects the test must not see) loads the loader's index sampler (sent on its own; the main process keeps it), draws the
   first indices as the main process would (:func:`harness.child.worker_loop.draw_indices`)
   and round-trips them, as they cross the index queue;
3. builds the first batch in the loaded copy, as ``_worker_loop`` does
   (:func:`harness.child.worker_loop.first_batch`), and round-trips it back with
   ``ForkingPickler`` (torch storages stand in for themselves: nothing is moved to shared
   memory).

Protocol: :mod:`harness.child.frames` messages on standard input and output. The first
message is ``{"preparation": {...}}``; it is answered with ``{"ready": true, "pid": N}`` once
torch is imported. Then each request ``{"id", "sys_path", "cwd", "sharing_strategy",
"buffers"}`` with blobs ``[arguments, sampler or b"", buffer...]`` is answered with ``{"id",
"load", "indices", "batch", "back"}``, each ``{"ok": true}``, ``{"note": text}`` (not checked,
and why) or ``{"error": "Type: message", "exc_type": name}``; ``load`` may add ``"global":
[module, name]``. What the user's code prints goes to standard error: the protocol keeps a
duplicate of standard output to itself. SIGINT is ignored (the terminal's Ctrl-C is the test
process's; it ends this one by closing the pipe or killing it).

A module of :mod:`harness.child`: it imports nothing of the harness outside that package.
"""

from __future__ import annotations

import io
import os
import pickle
import signal
import sys
from multiprocessing.reduction import ForkingPickler
from typing import Any, BinaryIO

from harness.child.ending import flush_and_exit
from harness.child.frames import read_message, write_message
from harness.child.worker_loop import NOTHING, draw_indices, first_batch

__all__ = ["forget_project_modules", "main", "rebuild_storage"]


def rebuild_storage(data: Any, nbytes: int) -> Any:
    """A CPU ``torch.UntypedStorage`` of ``nbytes`` bytes: a copy of ``data`` (a buffer), or
    uninitialized memory when the test process sent only the size (a large storage).

    The test process's pickler writes every torch storage as a call to this function
    (:mod:`harness.guard.payload`), so that pickling never moves the user's tensor to shared
    memory, as torch's own reducer would."""
    import torch

    if data is None:
        return torch.UntypedStorage(nbytes)
    return torch.UntypedStorage.from_buffer(bytes(data), dtype=torch.uint8) if nbytes else torch.UntypedStorage(0)


def _first_line(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line or "(raised with no message)"


def _error(exc: BaseException) -> dict[str, Any]:
    name = type(exc).__name__
    line = _first_line(exc)
    return {"error": name if line == "(raised with no message)" else f"{name}: {line}", "exc_type": name}


class _Loader(pickle.Unpickler):
    """``pickle.Unpickler`` that remembers the global it could not find."""

    failed: tuple[str, str] | None = None

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except BaseException:
            self.failed = (module, name)
            raise


class _BackPickler(ForkingPickler):
    """ForkingPickler for the batch's way back; torch storages stand in for themselves."""

    def __init__(self, file: io.BytesIO, stash: dict[int, Any]) -> None:
        super().__init__(file, pickle.DEFAULT_PROTOCOL)
        self.stash = stash
        torch = sys.modules.get("torch")
        self.storage_types: tuple[type, ...] = (torch.UntypedStorage,) if torch is not None else ()

    def persistent_id(self, obj: Any) -> Any:
        if self.storage_types and isinstance(obj, self.storage_types):
            self.stash[id(obj)] = obj
            return id(obj)
        return None


class _BackLoader(pickle.Unpickler):
    def __init__(self, data: bytes, stash: dict[int, Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.stash = stash

    def persistent_load(self, pid: Any) -> Any:
        return self.stash[pid]


def _round_trip_back(batch: Any) -> None:
    """Pickle ``batch`` as the worker's result queue does and load it as the main process does."""
    stash: dict[int, Any] = {}
    out = io.BytesIO()
    _BackPickler(out, stash).dump(batch)
    _BackLoader(out.getvalue(), stash).load()


def _buffers(specs: list[Any], blobs: list[bytes]) -> list[Any]:
    """The out-of-band buffers of the arguments' pickle: sent ones, or zeros of a size."""
    out: list[Any] = []
    it = iter(blobs)
    for kind, size in specs:
        out.append(bytearray(next(it)) if kind == "data" else bytearray(int(size)))
    return out


def _apply(request: dict[str, Any]) -> None:
    """The test process's ``sys.path``, working directory, environment (as a worker started
    now would inherit it; this process's containment token kept) and sharing strategy."""
    sys.path[:] = [str(p) for p in request.get("sys_path") or sys.path]
    _PROJECT_ROOT[0] = str(request.get("project_root") or "")
    env = request.get("environ")
    if isinstance(env, dict):
        keep = {k: v for k, v in os.environ.items() if k.startswith("HARNESS_CONTAINMENT")}
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        os.environ.update(keep)
    cwd = request.get("cwd")
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)
    strategy = request.get("sharing_strategy")
    if strategy:
        import torch.multiprocessing

        set_strategy: Any = torch.multiprocessing.set_sharing_strategy
        set_strategy(strategy)


#: Loaded arguments kept for the first batch, by request id (``{"batch": id}`` takes them).
_LOADED: dict[Any, tuple[Any, bytes, dict[str, Any]]] = {}
#: ``sys.modules`` once prepared, before any request (:func:`forget_project_modules`).
_BASELINE: set[str] = set()
#: The test process's project root, from the latest request.
_PROJECT_ROOT = [""]
_COMPILED = (".so", ".pyd", ".dylib")
_NOT_SOURCE = ("site-packages", "dist-packages", ".nox", ".tox", ".venv", "venv", "build")


def forget_project_modules(root: str) -> list[str]:
    """Drop from ``sys.modules`` the modules that checks imported from the project under
    ``root``, so that the next check starts as a fresh worker would, without module state
    that an earlier loader's code set. A module stays when it is not a plain ``.py`` file of
    the project (site-packages, a virtual environment, a build folder), or when its top-level
    package loaded a compiled extension (which cannot be imported twice). Called only when no
    loaded arguments are kept. Returns the names dropped."""
    if not root:
        return []
    prefix = os.path.join(os.path.abspath(root), "")
    groups: dict[str, list[str]] = {}
    compiled: set[str] = set()
    for name, module in list(sys.modules.items()):
        if name in _BASELINE or name == "__mp_main__":
            continue
        top = name.partition(".")[0]
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or file.endswith(_COMPILED):
            compiled.add(top)
            continue
        path = os.path.abspath(file)
        parts = path[len(prefix):].split(os.sep) if path.startswith(prefix) else None
        if parts is None or any(p in _NOT_SOURCE for p in parts):
            compiled.add(top)  # not the project's own source: kept, with its package
            continue
        groups.setdefault(top, []).append(name)
    dropped = [name for top, names in groups.items() if top not in compiled for name in names]
    for name in dropped:
        sys.modules.pop(name, None)
    return dropped


def check(request: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """A ``load`` request (the default): load the arguments and keep them; with ``"now":
    true`` go on to the first batch at once. A ``{"batch": id}`` request: the first batch of
    what request ``id`` loaded, drawn, built and sent back (module docstring)."""
    if "batch" in request:
        kept = _LOADED.pop(request["batch"], None)
        reply: dict[str, Any] = {"id": request.get("id")}
        if kept is None:
            reply["indices"] = {"note": "nothing was loaded for it"}
            return reply
        _apply(kept[2])
        return _first_batch(kept[0], kept[1], reply)
    _apply(request)
    reply = {"id": request.get("id")}
    loader = _Loader(io.BytesIO(blobs[0]), buffers=_buffers(request.get("buffers") or [], blobs[2:]))
    try:
        args = loader.load()
    except BaseException as exc:  # noqa: BLE001 - the worker's bootstrap would die of it
        reply["load"] = {**_error(exc), "global": list(loader.failed) if loader.failed else None}
        return reply
    reply["load"] = {"ok": True}
    if not request.get("now"):
        _LOADED[request.get("id")] = (args, blobs[1], request)
        return reply
    return _first_batch(args, blobs[1], reply)


def _first_batch(args: Any, sampler_blob: bytes, reply: dict[str, Any]) -> dict[str, Any]:
    indices = _indices(sampler_blob, reply)
    if indices is NOTHING:
        return reply
    raised: list[BaseException] = []
    try:
        batch = first_batch(args, indices, raised)
    except BaseException as exc:  # noqa: BLE001 - SystemExit... from the user's code ends the worker
        reply["batch"] = _error(exc)
        return reply
    if batch is NOTHING:
        if raised:
            reply["batch"] = {"note": "raised", **_error(raised[0])}
        else:
            reply["batch"] = {"note": "the dataset is exhausted: no first batch"}
        return reply
    reply["batch"] = {"ok": True}
    try:
        _round_trip_back(batch)
    except BaseException as exc:  # noqa: BLE001 - the worker's feeder thread drops the batch
        reply["back"] = _error(exc)
        return reply
    reply["back"] = {"ok": True}
    return reply


def _indices(sampler_blob: bytes, reply: dict[str, Any]) -> Any:
    """The first indices as the worker receives them, or NOTHING (``reply`` says why)."""
    if not sampler_blob:
        reply["indices"] = {"note": "the loader's sampler does not pickle, so its first indices were not drawn"}
        return NOTHING
    try:
        sampler = pickle.loads(sampler_blob)
    except BaseException as exc:  # noqa: BLE001 - the sampler's own loading code
        reply["indices"] = _error(exc)
        return NOTHING
    try:
        indices = draw_indices(sampler)
    except Exception as exc:  # noqa: BLE001 - the main process draws them; the test's own state may differ
        reply["indices"] = {"note": "raised", **_error(exc)}
        return NOTHING
    except BaseException as exc:  # noqa: BLE001 - SystemExit... from the sampler
        reply["indices"] = _error(exc)
        return NOTHING
    if indices is NOTHING:
        reply["indices"] = {"note": "the sampler gave no indices"}
        return NOTHING
    try:
        indices = pickle.loads(ForkingPickler.dumps(indices))
    except BaseException as exc:  # noqa: BLE001 - they cross the index queue under every method
        reply["indices"] = _error(exc)
        return NOTHING
    reply["indices"] = {"ok": True}
    return indices


def _prepare(data: dict[str, Any]) -> None:
    """Prepare this process as ``multiprocessing.spawn`` prepares a spawned worker."""
    import multiprocessing.spawn

    data = {k: v for k, v in data.items() if k in ("name", "sys_path", "sys_argv", "dir", "orig_dir",
                                                     "init_main_from_path", "init_main_from_name")}
    multiprocessing.spawn.prepare(data)


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer messages on ``inp`` until it ends."""
    first = read_message(inp)
    if first is None:
        return
    try:
        _prepare(first[0].get("preparation") or {})
        import torch  # noqa: F401 - as a worker's unpickling of a Dataset would
        import torch.multiprocessing  # noqa: F401 - registers torch's reducers

        _BASELINE.update(sys.modules)
        write_message(out, {"ready": True, "pid": os.getpid()})
    except BaseException as exc:  # noqa: BLE001 - the main module or torch cannot even be imported
        write_message(out, {"ready": False, **_error(exc)})
        return
    while True:
        message = read_message(inp)
        if message is None:
            return
        try:
            reply = check(*message)
            if not _LOADED:
                forget_project_modules(_PROJECT_ROOT[0])
        except BaseException as exc:  # noqa: BLE001 - never a traceback on the protocol stream
            reply = {"id": message[0].get("id"), "internal": _error(exc)}
        write_message(out, reply)


def main() -> None:
    """Keep the protocol streams to this process, point the user's prints at standard error,
    and serve; end at once with ``os._exit`` (no thread or ``atexit`` hook the user's code left
    can keep this process alive)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, sys.stdin.fileno())
    status = 0
    try:
        serve(inp, out)
    except BaseException:  # noqa: BLE001 - a broken pipe: the test process is gone
        status = 1
    flush_and_exit(status)


if __name__ == "__main__":
    main()
