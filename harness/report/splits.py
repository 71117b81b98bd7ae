"""Merging the split shards of one runner (``harness run --split K/N``) into one column.

The N parts of one split run become one shard, as if the runner had run unsplit: one runner
in the matrix, its results the union of the parts', ``complete`` only when every part is
there and complete. A runner's split shards are refused together (one line naming the
files), and so are left out of the matrix, when they:

* overlap: a cell (case and start method) is in two parts;
* conflict: another number of parts, another split round (the parts were dealt from
  different previous shards), or a runner field other than :data:`PER_PART_FIELDS` that
  differs (another harness, commit, Python, torch, isolation, timeout ...);
* stand beside the runner's whole shard (the same cells twice).

Missing parts are not an error of the shards that are there: one line says which parts are
missing, and the column is incomplete (``complete: false``, ``split_missing``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.classify.outcomes import METHODS
from harness.report import JSONObject

__all__ = ["PER_PART_FIELDS", "join_splits"]

#: Runner fields that each part of a split run has of its own (when and on which machine its
#: job ran, what the harness itself used): not compared between the parts. In the merged
#: column, ``started_utc`` is the earliest, ``overhead_cpu_s`` and ``isolation_fallback`` the
#: sums, ``cpu_count`` the first part's.
PER_PART_FIELDS = frozenset({"split", "started_utc", "cpu_count", "overhead_cpu_s", "isolation_fallback"})

_NAMED = 10  # files named in one line; the rest are counted


def _names(paths: Sequence[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[:_NAMED])
    return shown + (f" and {len(paths) - _NAMED} more" if len(paths) > _NAMED else "")


def _numbers(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values)


def _problem(rid: str, parts: list[tuple[Path, JSONObject]], whole: Path | None) -> str | None:
    """Why the split shards ``parts`` of runner ``rid`` cannot be merged, or ``None``."""
    if whole is not None:
        return f"split shards of runner {rid!r}, whose whole shard {whole.name} is there too; keep one or the other"
    counts = {p.name: s["runner"]["split"]["parts"] for p, s in parts}
    if len(set(counts.values())) > 1:
        return (f"split shards of runner {rid!r} disagree on the number of parts ("
                + ", ".join(f"{name}: {n}" for name, n in counts.items()) + ")")
    first_path, first = parts[0]
    rounds = {p.name: s["runner"]["split"]["round"] for p, s in parts}
    if len(set(rounds.values())) > 1:
        return (f"split shards of runner {rid!r} conflict: dealt from different previous shards (split round "
                + ", ".join(f"{r} in {name}" for name, r in rounds.items())
                + "); run every part again from the same shard directory")
    same = {k: v for k, v in first["runner"].items() if k not in PER_PART_FIELDS}
    for path, shard in parts[1:]:
        other = {k: v for k, v in shard["runner"].items() if k not in PER_PART_FIELDS}
        differ = sorted(k for k in same.keys() | other.keys() if same.get(k) != other.get(k))
        if differ:
            return (f"split shards of runner {rid!r} conflict: {first_path.name} and {path.name} differ in "
                    f"runner {', '.join(differ[:5])}")
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    for path, shard in parts:
        part = shard["runner"]["split"]["part"]
        for rec in shard["results"]:
            key = (rec["case"], rec["method"])
            if key in seen:
                where, name = seen[key]
                return (f"split shards of runner {rid!r} overlap: case {rec['case']!r} [{rec['method']}] is in "
                        f"part {where} ({name}) and part {part} ({path.name})")
            seen[key] = (part, path.name)
    return None


def _sum_numbers(objects: list[Any]) -> dict[str, Any]:
    """Key by key sums of the numeric fields of ``objects`` (dicts; others are skipped)."""
    total: dict[str, Any] = {}
    for obj in objects:
        for key, value in (obj.items() if isinstance(obj, dict) else ()):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in total.items()}


def _joined(rid: str, parts: list[tuple[Path, JSONObject]], notes: list[str] | None) -> JSONObject:
    """One shard from the (checked) split shards of one runner."""
    n = parts[0][1]["runner"]["split"]["parts"]
    have = sorted(s["runner"]["split"]["part"] for _, s in parts)
    missing = [k for k in range(1, n + 1) if k not in have]
    runners = [s["runner"] for _, s in parts]
    runner = {k: v for k, v in runners[0].items() if k != "split"}
    runner["started_utc"] = min(str(r.get("started_utc", "")) for r in runners)
    for key in ("overhead_cpu_s", "isolation_fallback"):
        present = [r[key] for r in runners if key in r]
        if present:
            runner[key] = _sum_numbers(present)
        else:
            runner.pop(key, None)
    runner["split_shards"] = [p.name for p, _ in parts]
    cases: dict[str, Any] = {}
    results: list[JSONObject] = []
    for _, shard in parts:
        cases.update(shard.get("cases", {}))
        results.extend(shard["results"])
    results.sort(key=lambda r: (r["case"], METHODS.index(r["method"]) if r["method"] in METHODS else len(METHODS)))
    planned = set(parts[0][1]["runner"]["split"]["weights_s"])
    unplaced = sorted(planned - set(cases)) if not missing else []
    if missing:
        runner["split_missing"] = missing
        if notes is not None:
            notes.append(f"runner {rid!r}: split part(s) {_numbers(missing)} of {n} missing (have "
                         f"{_names([p for p, _ in parts])}); its column is incomplete")
    elif unplaced and notes is not None:
        notes.append(f"runner {rid!r}: {len(unplaced)} case(s) of its split plan are in no part "
                     f"({', '.join(unplaced[:5])}); its column is incomplete")
    complete = not missing and not unplaced and all(s.get("complete", True) for _, s in parts)
    return {"schema_version": parts[0][1]["schema_version"], "complete": complete, "runner": runner,
            "cases": dict(sorted(cases.items())), "results": results}


def join_splits(shards: list[tuple[Path, JSONObject]],
                notes: list[str] | None = None) -> tuple[list[tuple[Path, JSONObject]], list[str]]:
    """Replace each runner's split shards in ``shards`` by one merged shard (see the module doc).

    Args:
        shards: valid ``(path, shard)`` pairs (:func:`harness.report.merge.load_shards`), at most
            one per runner and part.
        notes: when given, one line is appended per runner with missing parts, naming them.

    Returns:
        ``(shards, rejected)``: the whole shards as they were and one merged shard per runner
        with split shards, in the order of their first file (the merged one is named by its
        first part's path); one line per refused runner, naming its files and the reason.
    """
    whole = {s["runner"]["id"]: p for p, s in shards if not s["runner"].get("split")}
    groups: dict[str, list[tuple[Path, JSONObject]]] = {}
    for path, shard in shards:
        if shard["runner"].get("split"):
            groups.setdefault(shard["runner"]["id"], []).append((path, shard))
    out: list[tuple[Path, JSONObject]] = []
    rejected: list[str] = []
    done: set[str] = set()
    for path, shard in shards:
        rid = shard["runner"]["id"]
        if not shard["runner"].get("split"):
            out.append((path, shard))
            continue
        if rid in done:
            continue
        done.add(rid)
        parts = sorted(groups[rid], key=lambda ps: ps[1]["runner"]["split"]["part"])
        problem = _problem(rid, parts, whole.get(rid))
        if problem is not None:
            rejected.append(f"{_names([p for p, _ in parts])}: {problem}")
            continue
        out.append((parts[0][0], _joined(rid, parts, notes)))
    return out, rejected
