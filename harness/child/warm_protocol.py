"""The warm template's protocol: one frozen class per message, each with its JSON form.

The harness (:class:`harness.run.warm.Template`) and the template process
(:mod:`harness.child.warm_server`) talk in JSON lines over a socketpair:

* harness → template: :class:`ForkRequest` (``"op": "fork"``), one per cell;
* template → harness: :class:`Ready` once its imports are done; then for each request
  :class:`Forked` right after the fork (or :class:`ForkFailed`), and :class:`Exited` once the
  child is reaped.

Every answer names what it is in its ``"kind"`` field, and a reader decodes it with
:func:`read_answer` (or :meth:`ForkRequest.from_json`): a field either side does not know, or
misses, is a :class:`~harness.child.jsonfields.MessageError`. ``python -m
harness.child.warm_server --probe`` prints one :class:`ProbedPath`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from harness.child.jsonfields import MessageError, as_object, required, string_map, strings

__all__ = [
    "CWD_PLACEHOLDER",
    "Answer",
    "Exited",
    "ForkFailed",
    "ForkRequest",
    "Forked",
    "MessageError",
    "ProbedPath",
    "Ready",
    "read_answer",
    "send",
]


#: Stands for the cell's working directory in :attr:`ForkRequest.sys_path` (a probed ``sys.path``
#: holds the probe's own directory there).
CWD_PLACEHOLDER = "\0cwd"


def _message(data: object, what: str, kind: str, fields: tuple[str, ...]) -> Mapping[str, object]:
    """``data`` as the JSON object of a message of ``kind`` with ``fields`` (``kind`` besides).

    Raises:
        MessageError: not an object, another ``kind``, or a field not in ``fields``.
    """
    obj = as_object(data, what, ("kind", *fields))
    if obj.get("kind") != kind:
        raise MessageError(f"{what}: field 'kind' must be {kind!r}, got {obj.get('kind')!r}")
    return obj


@dataclass(frozen=True, slots=True)
class ForkRequest:
    """Fork one cell (harness → template).

    Attributes:
        id: the request's number; the answers about this cell carry it.
        argv: the cell's ``sys.argv`` (``argv[0]`` is replaced by the cell module's file).
        env: the cell's complete environment.
        cwd: the cell's working directory.
        stdout, stderr: files the cell's descriptors 1 and 2 are opened on (truncated).
        sys_path: ``sys.path`` of a fresh ``python -m`` there, the working directory written as
            :data:`CWD_PLACEHOLDER`.
    """

    op: ClassVar[str] = "fork"
    id: int
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdout: str
    stderr: str
    sys_path: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        """The JSON object: ``{"op": "fork", "id", "argv", "env", "cwd", "stdout", "stderr", "sys_path"}``."""
        return {
            "op": self.op,
            "id": self.id,
            "argv": list(self.argv),
            "env": dict(self.env),
            "cwd": self.cwd,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "sys_path": list(self.sys_path),
        }

    @classmethod
    def from_json(cls, data: object) -> ForkRequest:
        """The request :meth:`as_json` wrote.

        Raises:
            MessageError: another ``op``, or a missing, unknown or mistyped field.
        """
        what = "template request"
        obj = as_object(
            data, what, ("op", "id", "argv", "env", "cwd", "stdout", "stderr", "sys_path")
        )
        if obj.get("op") != cls.op:
            raise MessageError(f"{what}: field 'op' must be {cls.op!r}, got {obj.get('op')!r}")
        return cls(
            id=required(obj, "id", int, what),
            argv=strings(obj, "argv", what),
            env=string_map(obj, "env", what),
            cwd=required(obj, "cwd", str, what),
            stdout=required(obj, "stdout", str, what),
            stderr=required(obj, "stderr", str, what),
            sys_path=strings(obj, "sys_path", what),
        )


@dataclass(frozen=True, slots=True)
class Ready:
    """The template imported everything and may fork (template → harness, once).

    Attributes:
        pid: the template's pid.
        threads: threads the template runs (it forks safely only with 1).
        import_s: seconds its imports took.
        pidfd: it watches its children with pidfds (``os.pidfd_open``), not by polling.
    """

    kind: ClassVar[str] = "ready"
    pid: int
    threads: int
    import_s: float
    pidfd: bool

    def as_json(self) -> dict[str, object]:
        """``{"kind": "ready", "pid", "threads", "import_s", "pidfd"}``."""
        return {
            "kind": self.kind,
            "pid": self.pid,
            "threads": self.threads,
            "import_s": self.import_s,
            "pidfd": self.pidfd,
        }

    @classmethod
    def from_json(cls, data: object) -> Ready:
        """The message :meth:`as_json` wrote; raises :class:`MessageError` as :func:`read_answer`."""
        what = f"template message {cls.kind!r}"
        obj = _message(data, what, cls.kind, ("pid", "threads", "import_s", "pidfd"))
        return cls(
            pid=required(obj, "pid", int, what),
            threads=required(obj, "threads", int, what),
            import_s=required(obj, "import_s", float, what),
            pidfd=required(obj, "pidfd", bool, what),
        )


@dataclass(frozen=True, slots=True)
class Forked:
    """Request ``id`` was forked as process ``pid`` (template → harness)."""

    kind: ClassVar[str] = "forked"
    id: int
    pid: int

    def as_json(self) -> dict[str, object]:
        """``{"kind": "forked", "id", "pid"}``."""
        return {"kind": self.kind, "id": self.id, "pid": self.pid}

    @classmethod
    def from_json(cls, data: object) -> Forked:
        """The message :meth:`as_json` wrote; raises :class:`MessageError` as :func:`read_answer`."""
        what = f"template message {cls.kind!r}"
        obj = _message(data, what, cls.kind, ("id", "pid"))
        return cls(id=required(obj, "id", int, what), pid=required(obj, "pid", int, what))


@dataclass(frozen=True, slots=True)
class ForkFailed:
    """Request ``id`` could not be forked; ``error`` says why (template → harness)."""

    kind: ClassVar[str] = "fork-failed"
    id: int
    error: str

    def as_json(self) -> dict[str, object]:
        """``{"kind": "fork-failed", "id", "error"}``."""
        return {"kind": self.kind, "id": self.id, "error": self.error}

    @classmethod
    def from_json(cls, data: object) -> ForkFailed:
        """The message :meth:`as_json` wrote; raises :class:`MessageError` as :func:`read_answer`."""
        what = f"template message {cls.kind!r}"
        obj = _message(data, what, cls.kind, ("id", "error"))
        return cls(id=required(obj, "id", int, what), error=required(obj, "error", str, what))


@dataclass(frozen=True, slots=True)
class Exited:
    """The cell of request ``id`` was reaped (template → harness).

    Attributes:
        returncode: its exit status as :func:`os.waitstatus_to_exitcode` gives it (``-N`` for
            signal N).
        maxrss_bytes: ``ru_maxrss`` from ``wait4(2)`` as the template reaped it: the largest
            resident set of the cell and of the children it reaped itself, bytes (the cell
            was forked without an exec, so nothing of its template's counts).
    """

    kind: ClassVar[str] = "exited"
    id: int
    returncode: int
    maxrss_bytes: int = 0

    def as_json(self) -> dict[str, object]:
        """``{"kind": "exited", "id", "returncode", "maxrss_bytes"}``."""
        return {"kind": self.kind, "id": self.id, "returncode": self.returncode, "maxrss_bytes": self.maxrss_bytes}

    @classmethod
    def from_json(cls, data: object) -> Exited:
        """The message :meth:`as_json` wrote; raises :class:`MessageError` as :func:`read_answer`."""
        what = f"template message {cls.kind!r}"
        obj = _message(data, what, cls.kind, ("id", "returncode", "maxrss_bytes"))
        return cls(
            id=required(obj, "id", int, what), returncode=required(obj, "returncode", int, what),
            maxrss_bytes=required(obj, "maxrss_bytes", int, what),
        )


#: What the template sends the harness.
Answer = Ready | Forked | ForkFailed | Exited
_ANSWERS: dict[str, type[Answer]] = {cls.kind: cls for cls in (Ready, Forked, ForkFailed, Exited)}


def read_answer(data: object) -> Answer:
    """The answer a decoded JSON line holds, by its ``"kind"``.

    Raises:
        MessageError: not an object, an unknown ``kind``, or a missing, unknown or mistyped field.
    """
    kind = data.get("kind") if isinstance(data, dict) else None
    cls = _ANSWERS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError(
            f"template message: unknown kind {kind!r} (known: {', '.join(_ANSWERS)})"
        )
    return cls.from_json(data)


def send(sock: socket.socket, msg: ForkRequest | Answer) -> None:
    """Write ``msg`` to ``sock`` as one JSON line."""
    sock.sendall(json.dumps(msg.as_json()).encode() + b"\n")


@dataclass(frozen=True, slots=True)
class ProbedPath:
    """What ``python -m harness.child.warm_server --probe`` prints: a fresh interpreter's
    ``sys.path`` and the working directory it ran in."""

    kind: ClassVar[str] = "probe"
    path: tuple[str, ...]
    cwd: str

    def as_json(self) -> dict[str, object]:
        """``{"kind": "probe", "path", "cwd"}``."""
        return {"kind": self.kind, "path": list(self.path), "cwd": self.cwd}

    @classmethod
    def from_json(cls, data: object) -> ProbedPath:
        """The message :meth:`as_json` wrote; raises :class:`MessageError` as :func:`read_answer`."""
        what = f"template message {cls.kind!r}"
        obj = _message(data, what, cls.kind, ("path", "cwd"))
        return cls(path=strings(obj, "path", what), cwd=required(obj, "cwd", str, what))
