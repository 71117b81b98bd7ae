"""How the guard's findings are written: per test, in the session summary, and as GitHub annotations.

A verdict travels as a JSON record (:func:`record`), so the findings of every xdist worker
reach the controller (``workeroutput``) and are merged there once per construction site
(:func:`merge_records`). Paths are relative to the project root (pytest's ``rootdir``; an
installed copy of the project's own module is shown as the project's file, see
:func:`harness.inspect.sites.project_file`), with ``/`` separators, as GitHub attaches
annotations to them. Every piece of text that comes from the user's code is untrusted: the
terminal lines go through :func:`harness._escape.terminal`, the workflow commands through
:func:`harness.inspect.output.github_command`'s escaping.
"""

from __future__ import annotations

import re
from typing import Any

from harness._escape import terminal
from harness.guard.check import Verdict
from harness.inspect import hints, sites
from harness.inspect.output import github_command, plural
from harness.report.breaks import describe_breaks

__all__ = ["failure_text", "github_lines", "merge_records", "record", "summary_lines"]

_PREFIX = "harness --check-loaders"
#: ``<function <lambda> at 0x7f...>``: an address, which differs between xdist workers.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _finding(f: Any, method: str) -> dict[str, Any]:
    out: dict[str, Any] = f.to_json()
    out["exc_type"] = f.problem.exc_type
    out["stage"] = f.stage
    out["title"] = f.title(method)
    out["why"] = f.why
    out["fix_title"] = hints.fix_description(f.fix) if f.fix else ""
    out["breaks"] = describe_breaks(f.case) if f.case else ""
    out["located"] = f.problem.located
    return out


#: How a finding's line reads, by :attr:`harness.inspect.walker.Problem.located`.
_LOCATED = {"stored": "stored at", "inside": "inside an object defined at"}


def record(verdict: Verdict) -> dict[str, Any]:
    """The JSON form of a resolved verdict (what an xdist worker sends its controller)."""
    site_file = sites.display_path(verdict.site[0]) if verdict.site else None
    return {
        "kind": verdict.kind,
        "type": verdict.type_name,
        "site_file": site_file,
        "site_line": verdict.site[1] if verdict.site else None,
        "num_workers": verdict.num_workers,
        "method": verdict.method,
        "what": verdict.what(),
        "findings": [_finding(f, verdict.method) for f in verdict.findings],
        "hazards": [_finding(f, verdict.method) for f in verdict.hazards],
        "note": verdict.note,
        "warning": verdict.warning,
        "tests": list(verdict.tests),
    }


def _key(rec: dict[str, Any]) -> tuple[Any, ...]:
    findings = tuple((f["path"], _ADDRESS.sub("", f["message"])) for f in rec["findings"] + rec["hazards"])
    return (rec["kind"], rec["site_file"], rec["site_line"], rec["type"], findings, rec.get("warning", ""))


def merge_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per construction site (kind, file, line, class) and verdict (its findings),
    the tests of all merged, in the order first seen: a parametrized site whose parameters
    give two verdicts is listed with each."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in records:
        have = merged.get(_key(rec))
        if have is None:
            merged[_key(rec)] = {**rec, "tests": list(rec["tests"])}
        else:
            have["tests"] += [t for t in rec["tests"] if t not in have["tests"]]
            have["expected_failure"] = bool(have.get("expected_failure") and rec.get("expected_failure"))
    return list(merged.values())


def _site(rec: dict[str, Any]) -> str:
    return f"{rec['site_file']}:{rec['site_line']}" if rec["site_file"] else "an unknown site"


def _short_type(rec: dict[str, Any]) -> str:
    return str(rec["type"]).rsplit(".", 1)[-1]


def _finding_lines(i: int, f: dict[str, Any]) -> list[str]:
    short = str(f["exc_type"]).rsplit(".", 1)[-1]
    message = f["message"] if f"{short}:" in f["message"] or f["message"].endswith(short) else f"{f['exc_type']}: {f['message']}"
    lines = [f"  {i}. {f['path']} ({f['type'] or '?'}): {message}"]
    if f.get("file"):
        lines.append(f"     {_LOCATED.get(f.get('located') or '', 'defined at')} {f['file']}:{f['line']}")
    if f.get("breaks_on"):
        lines.append(f"     pickles here, but not on Python {f['breaks_on']} and later")
    if f.get("why"):
        lines.append(f"     why: {f['why']}")
    if f.get("case"):
        lines.append(f"     case {f['case']}" + (f"; fix: {f['fix_title']}" if f.get("fix_title") else ""))
        if f.get("breaks"):
            lines.append(f"     breaks by default on: {f['breaks']} (the committed matrix)")
    else:
        lines.append("     matches no catalogue case")
    return lines


def _headline(rec: dict[str, Any]) -> str:
    n = len(rec["findings"])
    stages = {f["stage"] for f in rec["findings"]}
    fails = (f"{plural(n, 'object')} cannot be sent to a worker" if stages <= {"send", "indices"}
             else f"{plural(n, 'object')} cannot make the round trip to a worker and back")
    what = "DataLoader" if rec["kind"] == "loader" else _short_type(rec)
    return f"{what} ({rec['type']}) constructed at {_site(rec)} {rec['what']}: {fails}"


def failure_text(records: list[dict[str, Any]]) -> str:
    """Why a test fails: every unsafe loader or dataset it constructed, each finding with its
    definition site, case, fix and where the committed matrix shows it breaking."""
    lines: list[str] = []
    for rec in records:
        if not rec["findings"]:
            continue
        lines.append(f"{_PREFIX}: {_headline(rec)}")
        for i, f in enumerate(rec["findings"], 1):
            lines += _finding_lines(i, f)
    return "\n".join(terminal(line, one_line=True) for line in lines)


def summary_lines(records: list[dict[str, Any]], mode: str) -> list[str]:
    """The end-of-session summary: every finding and hazard once, per construction site."""
    unsafe = [r for r in records if r["findings"]]
    hazardous = [r for r in records if r["hazards"]]
    lines = [f"{plural(len(records), 'construction site')} checked as a {_methods(records)} worker start would "
             f"receive them: {len(unsafe)} unsafe, {len(hazardous)} with hazards"
             + (" (warn mode: no test failed for them)" if mode == "warn" and unsafe else "")]
    for rec in unsafe:
        lines += ["", _headline(rec), f"  built by {_built_by(rec)}"]
        for i, f in enumerate(rec["findings"], 1):
            lines += _finding_lines(i, f)
    for rec in hazardous:
        what = "DataLoader" if rec["kind"] == "loader" else _short_type(rec)
        lines += ["", f"hazard: {what} ({rec['type']}) constructed at {_site(rec)}: "
                      f"{plural(len(rec['hazards']), 'object')} that a newer Python will not pickle"]
        for i, f in enumerate(rec["hazards"], 1):
            lines += _finding_lines(i, f)
    for rec in records:
        if rec.get("warning") and not rec["findings"]:
            lines.append(f"warning: {_site(rec)}: {rec['warning']}")
    notes = [r for r in records if r["note"] and not r["findings"]]
    for rec in notes:
        lines.append(f"note: {_site(rec)}: {rec['note']}")
    return [terminal(line, one_line=True) for line in lines]


def _built_by(rec: dict[str, Any]) -> str:
    if rec["tests"] == ["(outside any test)"]:
        return "no test: it was constructed outside any test (at import or collection)"
    return f"{plural(len(rec['tests']), 'test')}: {_tests(rec)}"


def _methods(records: list[dict[str, Any]]) -> str:
    return "/".join(sorted({r["method"] for r in records})) or "spawn"


def _tests(rec: dict[str, Any], shown: int = 3) -> str:
    tests = rec["tests"]
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return ", ".join(tests[:shown]) + more


def github_lines(records: list[dict[str, Any]], mode: str) -> list[str]:
    """One workflow command per finding (``::error``; ``::warning`` in warn mode, and for a site
    only ``xfail`` tests built) and per hazard (``::warning``), at the culprit's definition
    line, else at the construction site."""
    out = []
    for rec in records:
        if rec.get("warning") and not rec["findings"]:
            out.append(github_command("warning", f"{_site(rec)}: {rec['warning']}", "DataLoader worker start: check it",
                                      rec["site_file"], rec["site_line"]))
        level_of_findings = "warning" if mode == "warn" or rec.get("expected_failure") else "error"
        for level, findings in ((level_of_findings, rec["findings"]), ("warning", rec["hazards"])):
            for f in findings:
                file, line = (f["file"], f["line"]) if f.get("file") else (rec["site_file"], rec["site_line"])
                message = (f"{_headline(rec) if level != 'warning' or not f.get('breaks_on') else _site(rec)}: "
                           f"{f['path']} ({f['type']}): {f['exc_type']}: {f['message']}")
                if f.get("case"):
                    message += f"; case {f['case']}" + (f"; fix: {f['fix_title']}" if f.get("fix_title") else "")
                if f.get("breaks"):
                    message += f"; breaks by default on: {f['breaks']}"
                out.append(github_command(level, message, f["title"], file, line))
    return out
