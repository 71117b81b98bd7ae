"""The cell process: run one case under one start method and write what happened.

This module runs *inside* the isolated cell process (``python -m harness.child.cell REQUEST
RESULT``), never in the harness process. ``REQUEST`` is a :class:`~harness.child.request.CellRequest`
as JSON; ``RESULT`` the path the result file is written to. It forces the start method with
``multiprocessing.set_start_method(method, force=True)``, so a ``DataLoader`` without an
explicit ``multiprocessing_context`` uses it, exactly as the platform default would
(``torch.utils.data.dataloader`` falls back to ``torch.multiprocessing``, which is the
default context). Script cases run through :func:`runpy.run_path` with
``run_name="__main__"``, so spawn and forkserver workers re-import the real script as
``__mp_main__``.

A script case whose ``CASE`` sets ``"stdin"`` (the request's ``stdin``, read by the harness)
stands for code that arrives with no file of its own; its source is compiled as ``<stdin>`` and executed in a new ``__main__`` module with no
``__spec__``, replacing the cell's ``__main__`` while it runs:

* ``"stdin": "interactive"``: the interactive interpreter reading stdin (``python -i``, a REPL,
  a notebook kernel), whose ``__main__`` has no ``__file__``. Spawn and forkserver workers
  then have no main module to re-import (``multiprocessing.spawn.get_preparation_data``
  finds neither a name nor a path), so names defined there are missing in the worker.
* ``"stdin": "pipe"``: ``python -`` with the code piped in, where CPython's
  ``PyRun_SimpleFile`` sets ``__main__.__file__ = "<stdin>"`` while the code runs. Spawn
  and forkserver workers then try to run a main script named ``<stdin>``.

The result file is JSON (its shape: :class:`harness.child.status.CellResult`)::

    {"status": "returned" | "raised" | "wrong" | "skipped" | "import-failed",
     "exc_type", "message", "traceback", "notes", "warnings": [...],
     "duration_s", "first_batch_s", "batches"}

The statuses and what they mean are :mod:`harness.child.status`'s.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from harness.child.request import CellRequest
from harness.child.status import IMPORT_FAILED, RAISED, RETURNED, SKIPPED, WRONG

if TYPE_CHECKING:
    from harness.case import Cell
    from harness.child.status import CellResult

__all__ = ["main", "run_spec"]


def _write_json(path: str, data: Mapping[str, object]) -> None:
    from harness.child.fileio import write_atomic

    write_atomic(path, json.dumps(data).encode("utf-8"))


#: Characters of an exception message the result file keeps (the harness keeps far fewer).
MESSAGE_LIMIT = 100_000


def _text(obj: object, limit: int = MESSAGE_LIMIT) -> str:
    """``str(obj)`` cut to ``limit`` characters; a ``__str__`` that raises gives a placeholder."""
    try:
        text = str(obj)
    except BaseException as exc:  # noqa: BLE001 - user code: any failure is data
        return f"<str() failed: {type(exc).__name__}>"
    # The same note as harness.classify.classifier.clip, which adds what was cut here to its count.
    return text if len(text) <= limit else f"{text[:limit]} [… {len(text) - limit} characters cut]"


def _notes(exc: BaseException) -> list[str]:
    """The exception's ``__notes__`` as text (at most 50); ``[]`` when they are not a list of
    notes (user code may set anything there)."""
    try:
        notes = getattr(exc, "__notes__", None)
        return [_text(n) for n in list(notes)[:50]] if isinstance(notes, (list, tuple)) else []
    except BaseException:  # noqa: BLE001 - user code: any failure is data
        return []


def _failure(status: str, exc: BaseException) -> CellResult:
    """A result of ``status`` with the exception's fields (type, message, notes, traceback)."""
    try:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-20000:]
    except BaseException:  # noqa: BLE001 - a hostile __str__ or __repr__
        tb = ""
    return {
        "status": status,
        "exc_type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": _text(exc),
        "notes": _notes(exc),
        "traceback": tb,
    }


def _run_as_stdin(path: str, mode: str) -> None:
    """Execute the file's source in a fresh ``__main__`` that has no file (see the module doc)."""
    import builtins
    import importlib.machinery
    import types

    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), "<stdin>", "exec")
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __loader__=importlib.machinery.BuiltinImporter)
    if mode == "pipe":
        main.__dict__.update(__file__="<stdin>", __cached__=None)
    previous = sys.modules["__main__"]
    sys.modules["__main__"] = main
    sys.argv = ["-"] if mode == "pipe" else [""]
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = previous



def _run_script(path: str, argv: tuple[str, ...]) -> None:
    """Run the file as ``__main__``, as ``python PATH ARGV...`` would."""
    import runpy

    sys.argv = [path, *argv]
    runpy.run_path(path, run_name="__main__")


def _enter(request: CellRequest) -> None:
    """Put this process where the case expects to run: working directory, ``sys.path``, the
    cell's environment variables and the start method."""
    import multiprocessing

    if request.cwd:
        os.chdir(request.cwd)
    if request.root not in sys.path:
        sys.path.insert(0, request.root)
    os.environ["HARNESS_CELL_METHOD"] = request.method
    os.environ["HARNESS_CELL_WORKERS"] = str(request.num_workers)
    if request.method != "in-process":
        multiprocessing.set_start_method(request.method, force=True)


def _entry(request: CellRequest) -> Callable[[Cell], object]:
    """What runs the case: a module case's ``run``, or its script as ``__main__``.

    Raises:
        BaseException: whatever importing a module case (or reading its ``run``) raises.
    """
    if not request.script:
        import importlib

        run: Callable[[Cell], object] = importlib.import_module(request.module).run
        return run
    path, mode, argv = request.path, request.stdin, request.argv
    if mode is not None:
        return lambda _cell: _run_as_stdin(path, mode)
    return lambda _cell: _run_script(path, argv)


def _apply_sharing_strategy() -> None:
    """A platform profile's torch sharing strategy (``HARNESS_SHARING_STRATEGY``), for a warm
    cell, which imported torch before its start-up hook could set it."""
    strategy = os.environ.get("HARNESS_SHARING_STRATEGY")
    if strategy:
        import torch.multiprocessing

        torch.multiprocessing.set_sharing_strategy(strategy)


class _WarningLog:
    """Records each distinct warning shown from now until :meth:`close` (``Category: message``),
    while still showing it as usual; every warning is shown (``simplefilter("always")``)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._original = warnings.showwarning
        warnings.simplefilter("always")
        warnings.showwarning = self._show

    def _show(self, message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: TextIO | None = None, line: str | None = None) -> None:
        # The cell's own temp folder differs on every run; keep reports stable between runs.
        text = f"{category.__name__}: {message}".replace(tempfile.gettempdir(), "$TMPDIR")
        if text not in self.seen:
            self.seen.append(text)
        self._original(message, category, filename, lineno, file, line)

    def close(self) -> None:
        """Show warnings as before again (the ``always`` filter stays)."""
        warnings.showwarning = self._original


def _run_case(entry: Callable[[Cell], object], cell: Cell, locate: bool = False) -> CellResult:
    """Run the case and say how it ended: its status, and the exception's fields if it raised."""
    from harness.case import Skip, Wrong

    try:
        entry(cell)
    except Wrong as exc:
        return _failure(WRONG, exc)
    except Skip as exc:
        return _failure(SKIPPED, exc)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return _failure(RAISED, exc)
        return {"status": RETURNED, "system_exit": True}
    except BaseException as exc:  # noqa: BLE001 - every failure is data here
        failed = _failure(RAISED, exc)
        if locate:
            failed["problems"] = _culprits(exc)
        return failed
    return {"status": RETURNED}


def _culprits(exc: BaseException) -> list[dict[str, object]]:
    """The culprits of the loader in ``exc``'s traceback (``harness reproduce`` only), named
    after the case ended. The one import of the harness outside :mod:`harness.child` and
    :mod:`harness.case`: it runs when nothing is observed any more (tests/unit/test_child_imports.py)."""
    import importlib

    stderr = ""
    path = os.environ.get("HARNESS_CELL_STDERR")
    if path:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                stderr = f.read()[-200_000:]
        except OSError:
            pass
    try:
        post_mortem = importlib.import_module("harness.inspect.post_mortem")
        found: list[dict[str, object]] = post_mortem.culprits(exc, stderr)
        return found
    except Exception:  # noqa: BLE001 - naming the culprit never changes the result
        return []


def run_spec(request: CellRequest) -> CellResult:
    """Run the cell that ``request`` describes in this process and return its result.

    Steps: enter the case's directory, path, environment and start method; load the case (a
    module case that fails to import ends here, :data:`~harness.child.status.IMPORT_FAILED`);
    run it, timing it and recording its warnings; add what the case's ``cell`` measured.
    """
    # The harness's own imports (torch among them) come first, before the case's folder is on
    # sys.path: a user's queue.py there must not shadow the standard library for them.
    from harness.case import Skip, Wrong, current_cell  # noqa: F401 - imports torch: inside the cell only

    _enter(request)
    try:
        entry = _entry(request)
    except BaseException as exc:  # noqa: BLE001 - any import failure makes the case broken
        failed = _failure(IMPORT_FAILED, exc)
        failed["warnings"] = []
        failed["duration_s"] = 0.0
        return failed

    _apply_sharing_strategy()
    cell = current_cell()
    log = _WarningLog()
    t0 = time.perf_counter()
    result = _run_case(entry, cell, request.locate)
    result["duration_s"] = time.perf_counter() - t0
    log.close()
    result["warnings"] = log.seen
    result["first_batch_s"] = cell.first_batch_s
    result["batches"] = cell.batches
    if request.require_check:
        result["require_check"] = True
    return result


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m harness.child.cell REQUEST_JSON RESULT_PATH``; returns the exit
    status (2 for a request that cannot be read, with one line on stderr)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m harness.child.cell REQUEST_JSON RESULT_PATH", file=sys.stderr)
        return 2
    try:
        request = CellRequest.from_json(json.loads(argv[0]))
    except ValueError as exc:  # json.JSONDecodeError, MessageError
        print(f"harness.child.cell: {exc}", file=sys.stderr)
        return 2
    result = run_spec(request)
    _write_json(argv[1], result)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
