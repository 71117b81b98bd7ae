"""What the harness asks of one cell process: :class:`CellRequest`, and its JSON form.

The harness builds the request (:meth:`harness.run.cells.CellSpec.to_child`), passes its JSON
as the cell's first argument (``python -m harness.child.cell REQUEST RESULT``, or the same
``argv`` in a cell forked from the warm template), and the cell rebuilds it with
:meth:`CellRequest.from_json`. One frozen class on both sides of the process boundary, as
regrtest's ``RunTests`` is between its main process and its workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TypeVar

__all__ = ["STDIN_MODES", "CellRequest", "RequestError"]

_T = TypeVar("_T")

#: How a script case that stands for code without a file of its own is run (the ``"stdin"`` of
#: its ``CASE``; :mod:`harness.child.cell` tells what each means).
STDIN_MODES = ("interactive", "pipe")


class RequestError(ValueError):
    """A cell request that cannot be read: a missing, unknown or mistyped field (one line)."""


@dataclass(frozen=True, slots=True)
class CellRequest:
    """One case under one start method, as the cell process runs it.

    Attributes:
        module: the case's dotted module name (imported for a module case).
        path: the case's file (run as ``__main__`` for a script case).
        root: the directory put first on ``sys.path`` so that ``module`` imports.
        script: run the file as ``__main__`` (:func:`runpy.run_path`) instead of calling
            ``run(cell)`` of the imported module.
        method: ``in-process``, ``fork``, ``spawn`` or ``forkserver``.
        num_workers: the ``DataLoader`` worker count the case is asked to use.
        require_check: a catalogue case: its result says so, so that one that never checked
            a batch is not a pass.
        argv: ``sys.argv[1:]`` of a script case (``harness reproduce``).
        cwd: the directory to run in; ``""``: stay where the process started.
        stdin: for a script case, one of :data:`STDIN_MODES` (its code then runs with no file
            of its own), or ``None``.
    """

    module: str
    path: str
    root: str
    script: bool
    method: str
    num_workers: int
    require_check: bool = False
    argv: tuple[str, ...] = ()
    cwd: str = ""
    stdin: str | None = None

    def __post_init__(self) -> None:
        if self.stdin is not None and self.stdin not in STDIN_MODES:
            raise RequestError(f"cell request: field 'stdin' must be one of {', '.join(STDIN_MODES)} "
                               f"or null, got {self.stdin!r}")

    def as_json(self) -> dict[str, object]:
        """The request as a JSON object (``argv`` as a list); :meth:`from_json` reads it back."""
        data = asdict(self)
        data["argv"] = list(self.argv)
        return data

    @classmethod
    def from_json(cls, data: object) -> CellRequest:
        """The request that :meth:`as_json` wrote (a decoded JSON object).

        Raises:
            RequestError: ``data`` is not an object, lacks a required field, has a field this
                class does not know, or a field of the wrong type; the message names it.
        """
        if not isinstance(data, Mapping):
            raise RequestError(f"cell request: expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise RequestError(f"cell request: unknown field {unknown[0]!r}")
        return cls(
            module=_required(data, "module", str),
            path=_required(data, "path", str),
            root=_required(data, "root", str),
            script=_required(data, "script", bool),
            method=_required(data, "method", str),
            num_workers=_required(data, "num_workers", int),
            require_check=_optional(data, "require_check", bool, False),
            argv=_strings(_optional(data, "argv", list, []), "argv"),
            cwd=_optional(data, "cwd", str, ""),
            stdin=None if data.get("stdin") is None else _required(data, "stdin", str),
        )


def _typed(data: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    """``data[name]``, which must be a ``kind`` (a ``bool`` is not an ``int`` here)."""
    value = data[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise RequestError(f"cell request: field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _required(data: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    """``data[name]`` as a ``kind``.

    Raises:
        RequestError: it is missing, or not a ``kind``.
    """
    if name not in data:
        raise RequestError(f"cell request: missing field {name!r}")
    return _typed(data, name, kind)


def _optional(data: Mapping[str, object], name: str, kind: type[_T], default: _T) -> _T:
    """``data[name]`` as a ``kind``, or ``default`` when absent."""
    return _typed(data, name, kind) if name in data else default


def _strings(values: list[object], name: str) -> tuple[str, ...]:
    """``values`` as a tuple; each must be a ``str``."""
    out = tuple(v for v in values if isinstance(v, str))
    if len(out) != len(values):
        raise RequestError(f"cell request: field {name!r} must hold only strings")
    return out
