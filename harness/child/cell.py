"""The cell process: run one case under one start method and write what happened.

This module runs *inside* the isolated cell process (``python -m harness.child.cell SPEC``), never
in the harness process. It forces the start method with
``multiprocessing.set_start_method(method, force=True)``, so a ``DataLoader`` without an
explicit ``multiprocessing_context`` uses it, exactly as the platform default would
(``torch.utils.data.dataloader`` falls back to ``torch.multiprocessing``, which is the
default context). Script cases run through :func:`runpy.run_path` with
``run_name="__main__"``, so spawn and forkserver workers re-import the real script as
``__mp_main__``.

A script case whose ``CASE`` sets ``"stdin"`` stands for code that arrives with no file of its
own; its source is compiled as ``<stdin>`` and executed in a new ``__main__`` module with no
``__spec__``, replacing the cell's ``__main__`` while it runs:

* ``"stdin": "interactive"``: the interactive interpreter reading stdin (``python -i``, a REPL,
  a notebook kernel), whose ``__main__`` has no ``__file__``. Spawn and forkserver workers
  then have no main module to re-import (``multiprocessing.spawn.get_preparation_data``
  finds neither a name nor a path), so names defined there are missing in the worker.
* ``"stdin": "pipe"``: ``python -`` with the code piped in, where CPython's
  ``PyRun_SimpleFile`` sets ``__main__.__file__ = "<stdin>"`` while the code runs. Spawn
  and forkserver workers then try to run a main script named ``<stdin>``.

The result file is JSON::

    {"status": "returned" | "raised" | "wrong" | "skipped" | "import-failed",
     "exc_type", "message", "traceback", "notes", "warnings": [...],
     "duration_s", "first_batch_s", "batches"}
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
import warnings

__all__ = ["STDIN_MODES", "run_spec", "stdin_mode"]


def _write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    from harness.child.fileio import replace_file

    replace_file(tmp, path)


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


def _exc_fields(exc: BaseException) -> dict:
    try:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-20000:]
    except BaseException:  # noqa: BLE001 - a hostile __str__ or __repr__
        tb = ""
    return {
        "exc_type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": _text(exc),
        "notes": _notes(exc),
        "traceback": tb,
    }


STDIN_MODES = ("interactive", "pipe")


def stdin_mode(path: str) -> str | None:
    """The ``"stdin"`` mode a script case declares in its ``CASE`` literal, or ``None``."""
    import ast

    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASE" for t in stmt.targets):
            try:
                meta = ast.literal_eval(stmt.value)
            except ValueError:
                return None
            mode = meta.get("stdin") if isinstance(meta, dict) else None
            return mode if mode in STDIN_MODES else None
    return None


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


def run_spec(spec: dict) -> dict:
    """Run the cell described by ``spec`` in this process and return the result dict.

    Args:
        spec: ``{"module", "path", "root", "script", "method", "num_workers"}``; ``method`` is
            ``in-process``, ``fork``, ``spawn`` or ``forkserver``. Optional: ``argv``, the
            arguments a script case gets as ``sys.argv[1:]``, and ``cwd``, the directory to
            run in (both used by ``harness reproduce``); ``require_check``: a catalogue case,
            whose result then says so, so that one with no checked batch is never a pass.
    """
    import multiprocessing

    root = spec["root"]
    if spec.get("cwd"):
        os.chdir(spec["cwd"])
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ["HARNESS_CELL_METHOD"] = spec["method"]
    os.environ["HARNESS_CELL_WORKERS"] = str(spec["num_workers"])
    if spec["method"] != "in-process":
        multiprocessing.set_start_method(spec["method"], force=True)

    result: dict = {"status": "returned", "warnings": []}
    seen: list[str] = []
    original_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        # The cell's own temp folder differs on every run; keep reports stable between runs.
        text = f"{category.__name__}: {message}".replace(tempfile.gettempdir(), "$TMPDIR")
        if text not in seen:
            seen.append(text)
        original_show(message, category, filename, lineno, file, line)

    entry = None
    if not spec["script"]:
        import importlib

        try:
            entry = importlib.import_module(spec["module"]).run
        except BaseException as exc:  # noqa: BLE001 - any import failure makes the case broken
            result.update(status="import-failed", duration_s=0.0, **_exc_fields(exc))
            return result

    from harness import case as case_api  # imports torch: inside the cell only

    strategy = os.environ.get("HARNESS_SHARING_STRATEGY")
    if strategy:  # a platform profile's strategy (a warm cell imported torch before its hook ran)
        import torch.multiprocessing

        torch.multiprocessing.set_sharing_strategy(strategy)

    cell = case_api.current_cell()
    warnings.simplefilter("always")
    warnings.showwarning = show
    t0 = time.perf_counter()
    try:
        mode = stdin_mode(spec["path"]) if spec["script"] else None
        if mode:
            _run_as_stdin(spec["path"], mode)
        elif spec["script"]:
            import runpy

            sys.argv = [spec["path"], *spec.get("argv", ())]
            runpy.run_path(spec["path"], run_name="__main__")
        else:
            entry(cell)
    except case_api.Wrong as exc:
        result.update(status="wrong", **_exc_fields(exc))
    except case_api.Skip as exc:
        result.update(status="skipped", **_exc_fields(exc))
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.update(status="raised", **_exc_fields(exc))
        else:
            result["system_exit"] = True
    except BaseException as exc:  # noqa: BLE001 - every failure is data here
        result.update(status="raised", **_exc_fields(exc))
    result["duration_s"] = time.perf_counter() - t0
    warnings.showwarning = original_show
    result["warnings"] = seen
    result["first_batch_s"] = cell.first_batch_s
    result["batches"] = cell.batches
    if spec.get("require_check"):
        result["require_check"] = True
    return result


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m harness.child.cell SPEC_JSON RESULT_PATH``."""
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    result = run_spec(spec)
    _write_json(argv[1], result)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
