"""A cell's record: its verdict matched against the case's expectation, as the shard stores it.

:func:`run_one` runs a cell (or marks a start method this platform lacks ``unsupported``),
classifies what its process did (:func:`harness.classify.classifier.classify`) and builds the
record (:func:`record_for`); :func:`mark_broken` flags every cell of a case whose in-process
control failed or whose module did not import.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import threading
from typing import Any

from harness._policy import available_methods, profile
from harness.catalogue.discover import Case
from harness.classify.classifier import (
    CLASSIFIER_VERSION,
    EVIDENCE_CHARS,
    MESSAGE_CHARS,
    Verdict,
    classify,
    clip,
    evidence_of,
)
from harness.classify.outcomes import IN_PROCESS, matches_expectation
from harness.run.launch import CellRun, Slot, launch_cell
from harness.run.plan import CellSpec
from harness.run.warm import Template

__all__ = ["WARNINGS_KEPT", "mark_broken", "missing_module", "record_for", "run_one"]

WARNINGS_KEPT = 20  # distinct warnings a record keeps


def _seconds(value: object) -> float | None:
    """A duration the cell reported, rounded to 0.1 ms; ``None`` unless a finite number >= 0
    (a case sets ``cell.first_batch_s`` itself, and may set anything)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return round(float(value), 4)


def record_for(spec: CellSpec, runner_id: str, verdict: Verdict, run: CellRun | None) -> dict[str, Any]:
    """The shard result record for one cell (see ``shard.schema.json``)."""
    res = run.observation.result if run else None
    expected, expected_kind = spec.expected()
    rec: dict[str, Any] = {
        "runner": runner_id,
        "case": spec.case.id,
        "family": spec.case.family,
        "method": spec.method,
        "outcome": verdict.outcome,
        "kind": verdict.kind,
        "message": clip(verdict.message, MESSAGE_CHARS),
        "root_cause": clip(verdict.root_cause, MESSAGE_CHARS),
        "duration_s": _seconds(res.get("duration_s")) if res else None,
        "first_batch_s": _seconds(res.get("first_batch_s")) if res else None,
        "wall_s": round(run.wall_s, 4) if run else None,
        "parent_peak_rss_bytes": run.parent_peak_rss if run else None,
        "worker_peak_rss_bytes": run.worker_peak_rss if run else None,
        "worker_peak_uss_bytes": run.worker_peak_uss if run else None,
        "workers_seen": run.workers_seen if run else None,
        "warnings": [clip(w, 500) for w in res.get("warnings", [])][:WARNINGS_KEPT] if res else [],
        "expected": expected,
        "expected_kind": expected_kind,
        "matches": matches_expectation(verdict.outcome, verdict.kind, expected, expected_kind),
        "broken": False,
        "exit_code": run.observation.returncode if run else None,
        "classifier": CLASSIFIER_VERSION,
    }
    if run:
        rec["isolation"] = run.isolation
        rec["evidence"] = evidence_of(run.observation)
        if verdict.outcome not in ("pass", "unsupported", "skipped"):
            rec["stderr_tail"] = clip(run.observation.stderr, EVIDENCE_CHARS, keep="tail")
    return rec


@functools.cache
def missing_module(name: str) -> str | None:
    """Why ``name`` does not import with this interpreter, in one line, or ``None`` when it does.

    The import runs in a child interpreter (never in the harness process, which imports no
    case library and no torch), once per module and process: a library that is installed but
    built for another torch fails here as it would in the cell.
    """
    try:
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"importing {name} failed: {exc}"
    if proc.returncode == 0:
        return None
    last = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    return clip(last[-1] if last else f"exit status {proc.returncode}", 300)


def _unmet(case: Case) -> str | None:
    """The first ``module:NAME`` precondition of ``case`` that does not hold, as a reason."""
    for need in case.requires:
        if need.startswith("module:"):
            name = need.removeprefix("module:")
            why = missing_module(name)
            if why is not None:
                return f"the case needs module {name}, which does not import here ({why})"
    return None


def run_one(spec: CellSpec, runner_id: str, *, template: Template | None = None,
            stop: threading.Event | None = None, slot: Slot | None = None) -> dict[str, Any]:
    """Run (or mark ``unsupported``, or ``skipped`` for a ``module:NAME`` precondition that
    does not import) one cell and return its record.

    Keyword arguments are those of :func:`launch_cell`.
    """
    emulating = profile(spec.profile) if spec.profile else None
    if spec.method != IN_PROCESS and spec.method not in available_methods(emulating):
        where = f"on {emulating.id}" if emulating else "on this platform"
        verdict = Verdict("unsupported", None, f"start method {spec.method!r} does not exist {where}", "")
        return record_for(spec, runner_id, verdict, None)
    unmet = _unmet(spec.case)
    if unmet:
        return record_for(spec, runner_id, Verdict("skipped", None, unmet, ""), None)
    run = launch_cell(spec, template=template, stop=stop, slot=slot)
    return record_for(spec, runner_id, classify(run.observation), run)


def mark_broken(records: list[dict[str, Any]], cases: dict[str, Case]) -> list[str]:
    """Flag every record of a case whose in-process control did not pass, or whose module
    failed to import in any cell.

    Returns one line per broken case, naming its file and its control's (or import) error.
    """
    lines = []
    done: set[str] = set()
    for rec in records:
        # A module that fails to import is broken whichever methods were selected.
        failed_import = rec["outcome"] == "error" and rec["kind"] == "import"
        if rec["case"] in done or not (failed_import or rec["method"] == IN_PROCESS):
            continue
        case = cases[rec["case"]]
        if not failed_import and (rec["outcome"] in ("pass", "skipped") or rec["expected"] != "pass"):
            continue
        done.add(case.id)
        for other in records:
            if other["case"] == rec["case"]:
                other["broken"] = True
                other["matches"] = False
        what = "the module failed to import" if failed_import else f"in-process control gave {rec['outcome']}"
        lines.append(f"{case.path}: broken case {case.id!r}: {what}: {rec['message'] or rec['root_cause']}")
    return lines
