"""What the harness asks of one cell process: :class:`CellRequest`, and its JSON form.

The harness builds the request (:meth:`harness.run.plan.CellSpec.to_child`), passes its JSON
as the cell's first argument (``python -m harness.child.cell REQUEST RESULT``, or the same
``argv`` in a cell forked from the warm template), and the cell rebuilds it with
:meth:`CellRequest.from_json`. One frozen class on both sides of the process boundary, as
regrtest's ``RunTests`` is between its main process and its workers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from harness.child.jsonfields import MessageError, as_object, optional, required, strings

__all__ = ["STDIN_MODES", "CellRequest", "MessageError"]

#: How a script case that stands for code without a file of its own is run (the ``"stdin"`` of
#: its ``CASE``; :mod:`harness.child.cell` tells what each means).
STDIN_MODES = ("interactive", "pipe")


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
        locate: when the case raises, name the culprits of the loader in its traceback
            (``harness reproduce``; :mod:`harness.inspect.post_mortem`, after the case ended).
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
    locate: bool = False

    def __post_init__(self) -> None:
        if self.stdin is not None and self.stdin not in STDIN_MODES:
            raise MessageError(
                f"cell request: field 'stdin' must be one of {', '.join(STDIN_MODES)} "
                f"or null, got {self.stdin!r}"
            )

    def as_json(self) -> dict[str, object]:
        """The request as a JSON object (``argv`` as a list); :meth:`from_json` reads it back."""
        data = asdict(self)
        data["argv"] = list(self.argv)
        return data

    @classmethod
    def from_json(cls, data: object) -> CellRequest:
        """The request that :meth:`as_json` wrote (a decoded JSON object).

        Raises:
            MessageError: ``data`` is not an object, lacks a required field, has a field this
                class does not know, or a field of the wrong type; the message names it.
        """
        what = "cell request"
        obj = as_object(data, what, [f.name for f in fields(cls)])
        return cls(
            module=required(obj, "module", str, what),
            path=required(obj, "path", str, what),
            root=required(obj, "root", str, what),
            script=required(obj, "script", bool, what),
            method=required(obj, "method", str, what),
            num_workers=required(obj, "num_workers", int, what),
            require_check=optional(obj, "require_check", bool, False, what),
            argv=strings(obj, "argv", what, default=()),
            cwd=optional(obj, "cwd", str, "", what),
            stdin=None if obj.get("stdin") is None else required(obj, "stdin", str, what),
            locate=optional(obj, "locate", bool, False, what),
        )
