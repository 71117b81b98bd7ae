"""How a diagnosis is written: the human report, GitHub workflow commands and a job summary.

The JSON form is the data itself (:meth:`harness.inspect.diagnose.Diagnosis.to_json`). Names,
messages and paths come from the user's code: the text is passed through
:func:`harness._escape.terminal` by the command that prints it, and every workflow command is
escaped as GitHub's toolkit does, so each stays one line.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness._escape import code, markdown, visible
from harness.inspect import hints

if TYPE_CHECKING:  # pragma: no cover
    from harness.inspect.diagnose import Diagnosis, Finding

__all__ = [
    "SUMMARY_ROWS",
    "format_github",
    "format_text",
    "github_command",
    "github_commands",
    "plural",
    "render_summary",
]

#: At most this many problem and hazard rows in :func:`render_summary` (GitHub keeps at most
#: 1 MiB of one step's job summary); the annotations still carry every one.
SUMMARY_ROWS = 100
#: Characters of a message kept in a summary row.
_SUMMARY_MESSAGE = 300


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


def _clip(text: str, limit: int = _SUMMARY_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any) -> str:
    """A table cell for an identifier from the user's code (a path, a type, a case id)."""
    return code(str(value)) if value not in (None, "") else ""


def _where(problem: Mapping[str, Any]) -> str:
    file, line, cell = problem.get("file"), problem.get("line"), problem.get("cell")
    if not file:
        return ""
    if cell is not None:
        return code(f"{file}, cell {cell}, line {line}")
    return code(f"{file}:{line}" if line is not None else str(file))


def _verdict(entry: Mapping[str, Any]) -> str:
    if "error" in entry:
        return "⛔ not diagnosed"
    return "✅ safe" if entry.get("safe") else "❌ unsafe"


def render_summary(entries: Sequence[Mapping[str, Any]], method: str) -> str:
    """Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``) of one ``harness diagnose`` run.

    A heading with the counts, one row per target (its verdict, problems and hazards), then
    one row per problem and per hazard (the object's path and type, its definition site, the
    error, the matching case and its fix), at most :data:`SUMMARY_ROWS` of them, and the error
    of each target that gave no diagnosis. Everything from the user's code is escaped
    (:func:`harness._escape.code`, :func:`harness._escape.markdown`), so it renders as text.

    Args:
        entries: one per target, as ``harness diagnose --format json`` prints them: a
            :meth:`~harness.inspect.diagnose.Diagnosis.to_json` object, or ``{"target",
            "error"}`` for a target that gave no diagnosis.
        method: the start method checked (``spawn`` or ``forkserver``).

    Returns:
        The Markdown, ending with a blank line.
    """
    unsafe = sum("error" not in e and not e.get("safe") for e in entries)
    failed = sum("error" in e for e in entries)
    safe = len(entries) - unsafe - failed
    counts = [f"{n} {label}" for n, label in ((unsafe, "unsafe"), (safe, "safe"), (failed, "not diagnosed")) if n]
    lines = [
        f"### harness diagnose ({markdown(method)}): {', '.join(counts) or 'no target'}",
        "",
        "| Target | Verdict | Problems | Hazards |",
        "|---|---|---|---|",
    ]
    rows: list[str] = []
    for e in entries:
        target = _cell(e.get("target", ""))
        if "error" in e:
            lines.append(f"| {target} | {_verdict(e)} | | |")
            continue
        problems, hazards = list(e.get("problems") or []), list(e.get("hazards") or [])
        lines.append(f"| {target} | {_verdict(e)} | {len(problems)} | {len(hazards)} |")
        for kind, items in (("problem", problems), ("hazard", hazards)):
            for p in items:
                what = f"{_cell(p.get('path'))} ({markdown(str(p.get('type', '')))})"
                if kind == "hazard":
                    breaks = markdown(f"breaks on Python {p.get('breaks_on', '')}")
                    what = f"⚠ {breaks}: {what}"
                rows.append(f"| {target} | {what} | {_where(p)} | {markdown(_clip(str(p.get('message', ''))))} "
                            f"| {_cell(p.get('case'))} | {_cell(p.get('fix'))} |")
    lines.append("")
    if rows:
        lines += ["| Target | Object | Defined at | Error | Case | Fix |", "|---|---|---|---|---|---|"]
        lines += rows[:SUMMARY_ROWS]
        if len(rows) > SUMMARY_ROWS:
            lines.append(f"| … | {len(rows) - SUMMARY_ROWS} more (see the annotations) | | | | |")
        lines += ["", "`harness explain FIX` shows a fix and the diff to it.", ""]
    for e in entries:
        if "error" in e:
            error = str(e["error"]).removeprefix("harness diagnose: error: ")
            lines.append(f"- {_cell(e.get('target', ''))}: {markdown(_clip(error))}")
    if failed:
        lines.append("")
    return "\n".join(lines) + "\n"
