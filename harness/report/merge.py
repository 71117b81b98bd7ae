"""Merge shards into one matrix: read and validate each, drop bad ones, combine the rest.

``matrix.json`` shape (``harness/schemas/matrix.schema.json``)::

    {"schema_version": 1, "generated_utc": str, "runners": [runner, ...],
     "platforms": [platform, ...], "cases": {id: {...}}, "results": [result, ...],
     "compatibility": [cell, ...], "rejected": [line, ...]}

``compatibility`` is the default-method view of :mod:`harness.report.platforms`; ``platforms`` says, per
column of the policy table, its default method and which runners were observed there.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import jsonschema
import referencing

from harness.classify.classifier import CLASSIFIER_VERSION, reclassify
from harness.classify.outcomes import METHODS, matches_expectation
from harness.report import JSONObject
from harness.report.platforms import compatibility, platform_summary
from harness.report.splits import join_splits
from harness.shard.format import SCHEMA_VERSION, NotAShard, ShardError, read_shard, schema

__all__ = ["load_shards", "merge", "refresh_verdict", "validate_matrix"]


def refresh_verdict(record: JSONObject) -> JSONObject:
    """``record`` with its verdict re-derived by this classifier when an older one made it.

    A shard keeps each cell's evidence (exit status, the cell's result, the stderr tail), so
    a committed observation from another machine is re-read with today's rules without being
    run again. Records with no evidence, or made by this classifier or a newer one, are
    returned unchanged. ``matches`` follows the new verdict (a broken case stays unmatched).
    """
    if record.get("classifier", 1) >= CLASSIFIER_VERSION:
        return record
    verdict = reclassify(record)
    if verdict is None:
        return record
    new = dict(record, outcome=verdict.outcome, kind=verdict.kind, message=verdict.message,
               root_cause=verdict.root_cause, classifier=CLASSIFIER_VERSION)
    if not record.get("broken"):
        new["matches"] = matches_expectation(verdict.outcome, verdict.kind, record["expected"],
                                             record.get("expected_kind"))
    return new


def load_shards(shard_dir: Path, notes: list[str] | None = None) -> tuple[list[tuple[Path, JSONObject]], list[str]]:
    """Read every ``*.json`` shard in ``shard_dir`` (each as :func:`harness.shard.format.read_shard` does).

    Args:
        shard_dir: the directory.
        notes: when given, one line is appended per file skipped without being an error (a
            ``matrix.json`` that ``harness report`` wrote there itself, ``--out`` equal to
            ``--shards``), and per shard whose over-long free text was clipped.

    Returns:
        ``(valid, rejected)``: valid ``(path, shard)`` pairs, and one line per rejected file
        naming it and the reason (not a regular file, too large, invalid or non-strict JSON,
        foreign JSON, unknown schema_version, schema violation, a record of another runner, a
        duplicate cell, or a second shard for the same runner id, or the same part of its split
        run, with different content). The split shards of one runner (``harness run --split``)
        come back as one merged shard, or are refused together
        (:func:`harness.report.splits.join_splits`); a note names the parts that are missing.
    """
    shard_dir = Path(shard_dir)
    valid: list[tuple[Path, JSONObject]] = []
    rejected: list[str] = []
    if not shard_dir.is_dir():
        return valid, [f"{shard_dir}: shard directory does not exist"]
    by_runner: dict[tuple[str, int, int], tuple[Path, str]] = {}
    for path in sorted(shard_dir.glob("*.json")):
        try:
            shard = read_shard(path, notes)
        except NotAShard as exc:
            if notes is not None:
                notes.append(str(exc))
            continue
        except ShardError as exc:
            rejected.append(str(exc))
            continue
        rid = shard["runner"]["id"]
        split = shard["runner"].get("split")
        key = (rid, split["part"], split["parts"]) if split else (rid, 0, 0)
        canon = json.dumps(shard, sort_keys=True)
        if key in by_runner:
            first, first_canon = by_runner[key]
            if canon != first_canon:
                which = f" part {split['part']} of {split['parts']}" if split else ""
                rejected.append(f"{path}: runner id {rid!r}{which} already supplied by {first.name} with different content")
            continue
        by_runner[key] = (path, canon)
        valid.append((path, shard))
    valid, refused = join_splits(valid, notes)
    return valid, rejected + refused


def _carried(shard: JSONObject) -> JSONObject:
    """``carried_over`` (count) and ``oldest_observed_utc`` of a shard's results kept unchanged
    from earlier runs by ``harness run --changed``; ``{}`` when there are none."""
    carried = [r for r in shard["results"] if r.get("carried_over")]
    if not carried:
        return {}
    stamps = sorted(r["observed_utc"] for r in carried if r.get("observed_utc"))
    return {"carried_over": len(carried), "oldest_observed_utc": stamps[0] if stamps else None}


def merge(shards: list[tuple[Path, JSONObject]], rejected: list[str] | None = None) -> JSONObject:
    """Combine valid shards into the matrix document (results sorted by case, method, runner)."""
    runners = [s["runner"] | {"shard": p.name, "complete": s.get("complete", True), **_carried(s)} for p, s in shards]
    cases: dict[str, JSONObject] = {}
    results: list[JSONObject] = []
    for _, shard in shards:
        for cid, meta in shard.get("cases", {}).items():
            cases.setdefault(cid, meta)
        results.extend(refresh_verdict(r) for r in shard["results"])
    order = {r["id"]: i for i, r in enumerate(runners)}
    results.sort(key=lambda r: (r["case"], METHODS.index(r["method"]), order.get(r["runner"], 0)))
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runners": runners,
        "platforms": platform_summary(runners),
        "cases": dict(sorted(cases.items())),
        "results": results,
        "compatibility": compatibility(runners, results),
        "rejected": list(rejected or []),
    }


def validate_matrix(matrix: JSONObject) -> list[str]:
    """Check a matrix document against ``harness/schemas/matrix.schema.json``.

    The matrix schema refers to the shard schema's ``result`` definition, resolved locally
    (no network access).

    Returns:
        One line per violation (``path: message``); empty when the document is valid.
    """
    shard = schema("shard")
    registry = referencing.Registry().with_resource(
        shard["$id"], referencing.Resource.from_contents(shard))
    validator = jsonschema.Draft202012Validator(schema("matrix"), registry=registry)
    return [f"{'/'.join(str(p) for p in err.absolute_path) or '(top level)'}: {err.message}"
            for err in validator.iter_errors(matrix)]
