"""How a diagnosis is written: the human report and GitHub workflow commands.

The JSON form is the data itself (:meth:`harness.inspect.diagnose.Diagnosis.to_json`). Names,
messages and paths come from the user's code: the text is passed through
:func:`harness._escape.terminal` by the command that prints it, and every workflow command is
escaped as GitHub's toolkit does, so each stays one line.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from harness._escape import visible
from harness.inspect import hints

if TYPE_CHECKING:  # pragma: no cover
    from harness.inspect.diagnose import Diagnosis, Finding

__all__ = ["format_github", "format_text", "github_command", "github_commands", "plural"]


def plural(n: int, word: str) -> str:
    """``1 object``, ``2 objects``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n:,} bytes ({n / scale:.2f} {unit})"
    return f"{n:,} bytes"


def _matches(f: Finding) -> str:
    """``matches case ID; fix: ID (title)``, or ``""`` when no case matches."""
    if not f.case:
        return ""
    fix = hints.fix_description(f.fix)
    return f"matches case {f.case}" + (f"; fix: {fix}" if fix else "")


def _finding_lines(i: int, f: Finding) -> list[str]:
    p = f.problem
    lines = [f"{i}. {p.path}"]
    if f.location:
        lines.append(f"   at:      {f.location}")
    short = p.exc_type.rsplit(".", 1)[-1]
    # "pickles, but unpickling in the worker fails: RecursionError: ..." names its exception already
    message = (
        p.message
        if f"{short}:" in p.message or p.message.endswith(short)
        else f"{p.exc_type}: {p.message}"
    )
    lines += [f"   type:    {p.type}", f"   message: {message}"]
    if p.breaks_on:
        lines.append(f"   breaks:  on Python {p.breaks_on} and later")
    if f.why:
        lines.append(f"   why:     {f.why}")
    lines.append(f"   {_matches(f) or 'matches no catalogue case'}")
    return lines


def _payload_lines(d: Diagnosis) -> list[str]:
    if d.payload is None:
        return ["payload: not measured (the worker arguments do not pickle)"]
    per = d.payload.total_bytes
    lines = [
        f"payload: {_size(per)} per worker x {plural(d.num_workers, 'worker')} = {_size(per * d.num_workers)}"
    ]
    if d.payload.buffer_bytes:
        lines.append(
            f"  of which {_size(d.payload.buffer_bytes)} per worker is array data (numpy and other buffers)"
        )
    if d.payload.storage_bytes:
        lines.append(
            f"  of which {_size(d.payload.storage_bytes)} per worker is torch tensor storage, moved once "
            "to shared memory rather than copied per worker"
        )
    return lines


def format_text(d: Diagnosis) -> str:
    """The human report: a verdict line, one block per problem, the hazards, then the payload."""
    lines = [f"{d.target}: {d.headline()}"]
    for i, f in enumerate(d.findings, 1):
        lines += ["", *_finding_lines(i, f)]
    if d.hazards:
        n = len(d.hazards)
        lines += [
            "",
            f"hazards: {plural(n, 'object')} {'pickles' if n == 1 else 'pickle'} on Python "
            f"{_python()} but not on a newer Python (not counted as unsafe here):",
        ]
        for i, f in enumerate(d.hazards, 1):
            lines += ["", *_finding_lines(i, f)]
    if d.batch_note:
        lines += ["", f"first batch: not checked: {d.batch_note}"]
    return "\n".join([*lines, "", *_payload_lines(d)])


def _github_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    """A workflow command property value, escaped as GitHub's toolkit does (``escapeProperty``)."""
    return visible(_github_escape(text).replace(":", "%3A").replace(",", "%2C"))


def _github_data(text: str) -> str:
    """A workflow command message, escaped as GitHub's toolkit does (``escapeData``)."""
    return visible(_github_escape(text))


def github_command(
    level: str, message: str, title: str, file: str | None = None, line: int | None = None
) -> str:
    """One GitHub workflow command: ``::error file=F,line=L,title=T::message`` (``level`` is
    ``error`` or ``warning``; no ``file``/``line`` when ``file`` is ``None``).

    Escaping follows ``@actions/core``'s ``command.ts``: in property values ``%``, ``\\r``,
    ``\\n``, ``:`` and ``,`` become ``%25``, ``%0D``, ``%0A``, ``%3A`` and ``%2C``; in the
    message ``%``, ``\\r`` and ``\\n``. Other control characters are written as Python escapes
    (:func:`harness._escape.visible`), so the line stays one line.
    """
    props = []
    if file:
        props.append(f"file={_github_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    props.append(f"title={_github_property(title)}")
    return f"::{level} {','.join(props)}::{_github_data(message)}"


def github_commands(d: Diagnosis) -> list[str]:
    """``::error`` per problem and ``::warning`` per hazard of ``d``: the title names what fails
    and the path, the message the target, type, exception, message and matching case."""
    out = []
    for level, findings in (("error", d.findings), ("warning", d.hazards)):
        for f in findings:
            p = f.problem
            message = f"{d.target}: {p.path} ({p.type}): {p.exc_type}: {p.message}"
            if f.why:
                message += f"; {f.why}"
            if f.case:
                message += f"; {_matches(f)}"
            out.append(github_command(level, message, f.title(d.method), p.file, p.line))
    return out


def format_github(d: Diagnosis) -> str:
    """GitHub workflow commands, one line per problem (``::error``) and per hazard
    (``::warning``), each with ``file`` and ``line`` where the culprit has a site; ``""`` for
    a safe loader with no hazard. See :func:`github_commands`."""
    return "\n".join(github_commands(d))
