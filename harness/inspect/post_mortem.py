"""What failed, named after the fact: the culprits of a worker start that a user's script raised.

``harness reproduce`` runs a whole script; when it raises, the error text alone often cannot tell
which object a worker could not receive (before Python 3.14 ``Can't pickle local object
'run.<locals>.<lambda>'`` does not say whether it was the ``collate_fn`` or a dataset's
attribute). The loader is still there, in the frames of the exception's traceback: torch's
``_MultiProcessingDataLoaderIter.__init__(self, loader)`` while the workers start, the iterator
``self`` in ``_next_data`` when a worker died. From it the same walk as ``harness diagnose``
finds the culprits at their paths (:func:`harness.inspect.walker.find_problems`), or, when a
worker could not find a global of ``__main__`` (``Can't get attribute 'X' on <module
'__mp_main__'>``), the objects that refer to it (:func:`harness.inspect.walker.find_references`).
So both tools name the same case for the same loader.

Run inside the cell process after the script has ended (it observes nothing while the script
runs), only for ``harness reproduce`` (the cell request's ``locate``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

from harness.inspect import sites
from harness.inspect.walker import (
    Problem,
    find_problems,
    find_references,
    reraise_if_interrupted,
    user_code_guard,
)

__all__ = ["culprits", "loader_roots"]

#: A worker that could not find a global of the main module (3.13 and 3.14 wordings).
_MISSING_MAIN = re.compile(r"Can't get attribute '([\w.]+)' on <module '__(?:mp_)?main__'|"
                           r"module '__(?:mp_)?main__' has no attribute '([\w.]+)'")
#: At most this many traceback frames are looked at (a deep recursion is not walked whole).
_MAX_FRAMES = 200


def _exceptions(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack += [c for c in (e.__cause__, e.__context__) if c is not None]


def _frames(exc: BaseException) -> Iterator[types.FrameType]:
    """The frames of every traceback in the chain, innermost first, at most :data:`_MAX_FRAMES`."""
    count = 0
    for e in _exceptions(exc):
        frames = []
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames):
            count += 1
            if count > _MAX_FRAMES:
                return
            yield frame


def loader_roots(exc: BaseException) -> dict[str, Any] | None:
    """``{"dataset", "collate_fn", "worker_init_fn"}`` of the loader whose iteration raised
    ``exc``, taken from a ``DataLoader`` or a DataLoader iterator in its traceback's frames, or
    ``None`` when no frame holds one."""
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    for frame in _frames(exc):
        for value in list(frame.f_locals.values()):
            if isinstance(value, DataLoader):
                return {"dataset": value.dataset, "collate_fn": value.collate_fn, "worker_init_fn": value.worker_init_fn}
            if isinstance(value, _BaseDataLoaderIter):
                return {"dataset": value._dataset, "collate_fn": value._collate_fn,
                        "worker_init_fn": getattr(value, "_worker_init_fn", None)}
    return None


def culprits(exc: BaseException, stderr: str = "") -> list[dict[str, Any]]:
    """The culprits of the worker start that raised ``exc``, each a
    :class:`~harness.inspect.walker.Problem` as a dict (JSON), or ``[]`` when the traceback
    holds no loader or nothing on its paths fails.

    Args:
        exc: what the script raised.
        stderr: the cell's standard error so far (the workers' own errors are there).

    Never raises but for a real Ctrl-C (whatever the user's objects raise while walked is
    contained by :func:`~harness.inspect.walker.user_code_guard`).
    """
    try:
        roots = loader_roots(exc)
        if roots is None:
            return []
        with user_code_guard(), _script_as_main(exc):
            missing = _MISSING_MAIN.search(stderr)
            if missing:
                name = missing.group(1) or missing.group(2)
                found = find_references(roots, "__main__", name.split(".")[0], RuntimeError(missing.group(0)))
            else:
                found = [p for p in find_problems(roots, hazards=False) if not p.breaks_on]
        return [_as_json(p) for p in found]
    except BaseException as err:  # noqa: BLE001 - naming the culprit must not change the outcome
        reraise_if_interrupted(err)
        return []


@contextlib.contextmanager
def _script_as_main(exc: BaseException) -> Iterator[None]:
    """The script's own globals as ``sys.modules["__main__"]`` again for the block.

    :func:`runpy.run_path` (how the cell runs a script) restores the previous ``__main__``
    when the script ends; while it ran, the script's module was ``__main__``, and its classes
    and functions pickled by reference to it, as a spawned worker (which imports the script
    as ``__mp_main__``) finds them. The frames of ``exc`` still hold the script's globals."""
    previous = sys.modules.get("__main__")
    script = next((f.f_globals for f in _frames(exc) if f.f_globals.get("__name__") == "__main__"
                   and (previous is None or f.f_globals is not vars(previous))), None)
    if script is None:
        yield
        return
    module = types.ModuleType("__main__")
    vars(module).update(script)
    sys.modules["__main__"] = module
    try:
        yield
    finally:
        if previous is not None:
            sys.modules["__main__"] = previous


def _as_json(problem: Problem) -> dict[str, Any]:
    out = dataclasses.asdict(problem)
    out["classes"] = list(problem.classes)
    out["holders"] = list(problem.holders)
    if out.get("file"):
        out["file"] = sites.display_path(out["file"]) if not str(out["file"]).startswith("<") else out["file"]
    return out
