"""How ``harness lint`` prints its findings: ``text``, ``json``, ``github`` and ``sarif``.

* ``text``: ``PATH:LINE:COL: CODE message`` (a notebook: ``PATH:cell N:LINE:COL``), then the
  case, its fix and where it breaks, indented.
* ``json``: ``{"findings": [{"path", "line", "column", "cell", "rule", "level", "case", "fix",
  "breaks", "message"}], "files": N, "errors": [...]}``.
* ``github``: one workflow command per finding, ``::error file=PATH,line=N,col=C,title=...::...``
  (``::warning`` for a warning), as GitHub Actions documents them
  (https://docs.github.com/actions/reference/workflow-commands-for-github-actions); a notebook's
  finding is attached to the file, its cell and line in the message.
* ``sarif``: SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), one run, the rules
  in the tool's driver, for GitHub code scanning.

:func:`render_summary` is the Markdown table ``--summary`` appends to a CI job summary, beside
any of these.

Paths are printed relative to the current directory when they are under it, with ``/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness import __version__
from harness.lint.engine import Finding, LintResult
from harness.lint.rules import RULES

__all__ = ["FORMATS", "SUMMARY_ROWS", "render", "render_summary"]

FORMATS = ("text", "json", "github", "sarif")
_SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_HELP = "https://docs.pytorch.org/docs/stable/data.html#platform-specific-behaviors"
#: At most this many finding rows in :func:`render_summary` (GitHub keeps at most 1 MiB of one
#: step's job summary); the annotations and SARIF still carry every finding.
SUMMARY_ROWS = 100


def _rel(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path.as_posix()
    return Path(rel).as_posix() if not rel.startswith("..") else Path(os.path.abspath(path)).as_posix()


def _where(f: Finding) -> str:
    return f"{_rel(f.path)}:cell {f.cell}:{f.line}:{f.column}" if f.cell else f"{_rel(f.path)}:{f.line}:{f.column}"


def _evidence(f: Finding) -> str:
    if not f.case:
        return "no catalogue case matches"
    fix = f"; fix: {f.fix} (harness explain {f.fix})" if f.fix else ""
    breaks = f"; breaks by default on {f.breaks} (the committed matrix)" if f.breaks else ""
    return f"case {f.case}{fix}{breaks}"


def _text(result: LintResult) -> str:
    from harness._escape import terminal

    lines = []
    for f in result.findings:
        tag = "" if f.level == "error" else " (warning)"
        # a file name may hold control characters or escape sequences: shown escaped
        lines.append(terminal(f"{_where(f)}: {f.rule}{tag} {f.message}", one_line=True))
        lines.append(f"    {_evidence(f)}")
    errors = sum(f.level == "error" for f in result.findings)
    warnings = len(result.findings) - errors
    lines.append(f"{len(result.findings)} finding(s) ({errors} error(s), {warnings} warning(s)) "
                 f"in {result.files} file(s)" + (f"; {len(result.errors)} file(s) not checked" if result.errors else ""))
    return "\n".join(lines) + "\n"


def _json(result: LintResult) -> str:
    doc = {
        "findings": [{"path": _rel(f.path), "line": f.line, "column": f.column, "cell": f.cell,
                      "rule": f.rule, "level": f.level, "case": f.case or None, "fix": f.fix or None,
                      "breaks": f.breaks or None, "message": f.message} for f in result.findings],
        "files": result.files,
        "errors": result.errors,
    }
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(result: LintResult) -> str:
    lines = [f"::error title=harness lint::{_escape_data(line)}" for line in result.errors]
    for f in result.findings:
        where = f"file={_escape_property(_rel(f.path))}"
        if f.cell is None:
            where += f",line={f.line},col={f.column}"
        title = f"{f.rule} {f.case}" if f.case else f.rule
        cell = f"cell {f.cell}, line {f.line}: " if f.cell else ""
        lines.append(f"::{f.level} {where},title={_escape_property(title)}::"
                     f"{_escape_data(cell + f.message + '. ' + _evidence(f))}")
    return "\n".join(lines) + ("\n" if lines else "")


def _artifact(path: Path) -> dict[str, str]:
    """A SARIF artifact location: a percent-encoded URI relative to ``%SRCROOT%`` (the current
    directory) for a file under it, an absolute ``file:`` URI for any other."""
    from urllib.parse import quote

    rel = _rel(path)
    if Path(rel).is_absolute():
        return {"uri": Path(rel).resolve().as_uri()}
    return {"uri": quote(rel, safe="/"), "uriBaseId": "%SRCROOT%"}


def _sarif(result: LintResult) -> str:
    codes = list(RULES)
    rules = [{
        "id": r.code, "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.summary},
        "helpUri": _HELP,
        "defaultConfiguration": {"level": r.level},
    } for r in RULES.values()]
    results: list[dict[str, Any]] = []
    for f in result.findings:
        location: dict[str, Any] = {"artifactLocation": _artifact(f.path)}
        if f.cell is None:
            location["region"] = {"startLine": f.line, "startColumn": f.column}
        text = (f"cell {f.cell}, line {f.line}: " if f.cell else "") + f"{f.message}. {_evidence(f)}"
        entry: dict[str, Any] = {
            "ruleId": f.rule, "ruleIndex": codes.index(f.rule), "level": f.level,
            "message": {"text": text},
            "locations": [{"physicalLocation": location}],
        }
        if f.case:
            entry["properties"] = {"case": f.case, "fix": f.fix, "breaks": f.breaks}
        results.append(entry)
    notifications = [{"level": "error", "message": {"text": line}} for line in result.errors]
    doc = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "harness-lint", "version": __version__,
                                "informationUri": _HELP, "rules": rules}},
            "invocations": [{"executionSuccessful": not result.errors,
                             "toolExecutionNotifications": notifications}],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",  # columns count characters, not UTF-16 units
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


def render(result: LintResult, fmt: str) -> str:
    """``result`` in format ``fmt`` (one of :data:`FORMATS`)."""
    return {"text": _text, "json": _json, "github": _github, "sarif": _sarif}[fmt](result)


def render_summary(result: LintResult) -> str:
    """Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``): a heading with the counts,
    one row per finding (where, rule, level, message, case, fix), at most :data:`SUMMARY_ROWS`,
    and one item per file that could not be checked. Paths and messages are escaped
    (:func:`harness._escape.code`, :func:`harness._escape.markdown`), so they render as text.
    The result ends with a blank line."""
    from harness._escape import code, markdown

    errors = sum(f.level == "error" for f in result.findings)
    warnings = len(result.findings) - errors
    n = len(result.findings)
    head = (f"{n} finding{'' if n == 1 else 's'} ({errors} error(s), {warnings} warning(s))" if n
            else "no finding")
    lines = [f"### harness lint: {head} in {result.files} file(s)", ""]
    if result.findings:
        lines += ["| Where | Rule | Message | Case | Fix |", "|---|---|---|---|---|"]
        for f in result.findings[:SUMMARY_ROWS]:
            rule = f.rule if f.level == "error" else f"{f.rule} (warning)"
            message = f.message if len(f.message) <= 300 else f.message[:299] + "…"
            lines.append(f"| {code(_where(f))} | {code(rule)} | {markdown(message)} | "
                         f"{code(f.case) if f.case else ''} | {code(f.fix) if f.fix else ''} |")
        if n > SUMMARY_ROWS:
            lines.append(f"| … | {n - SUMMARY_ROWS} more (see the annotations) | | | |")
        lines += ["", "`harness explain FIX` shows a fix and the diff to it; `harness lint --fix` "
                  "applies the proven ones.", ""]
    if result.errors:
        lines += [f"**{len(result.errors)} file(s) not checked:**", ""]
        lines += [f"- {markdown(line)}" for line in result.errors] + [""]
    return "\n".join(lines) + "\n"
