"""The compatibility view: what a user gets by default on each platform: observed, emulated or predicted.

For every case and every column of the policy table (:data:`harness._policy.PLATFORMS`:
``linux-py<=3.13``, ``linux-py>=3.14``, ``macos``, ``windows``) the view holds one cell: the
outcome under that platform's *default* start method.

* **observed**: a shard whose runner belongs to that column (same OS, Python in the column's
  range) has a result for the case under that method. When several such runners do, the one
  with the newest Python, then the newest torch, supplies the cell, and the runners that
  disagree with it are listed in ``disagree``.
* **emulated**: no runner of that column ran the case, but a runner that emulates that platform
  with its profile (``harness run --profile macos``: start methods, torch sharing strategy,
  temp-path length; :data:`harness._policy.PROFILES`) did. Newest Python, then newest torch,
  first.
* **predicted**: no runner of that column ran the case, and none emulated it, so the cell is
  taken from the same start method observed on another runner: a runner of the same OS first, then any, the one with the
  closest Python, then the newest torch. ``runner`` names it. A prediction is never shown as an
  observation; an ``unsupported`` result never predicts anything (the method exists on the
  target platform by construction, because it is that platform's default).

A case that no runner ran under a column's default method has no cell in that column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness._policy import (
    PLATFORMS,
    Platform,
    emulated_platform_of_runner,
    platform_of_runner,
    python_of,
)

__all__ = ["compatibility", "platform_summary"]


def _torch_key(version: str) -> tuple[int, ...]:
    """Numeric release of a torch version (``"2.13.0+cpu"`` → ``(2, 13, 0)``)."""
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


def _target_python(plat: Platform, own: list[dict], runners: list[dict]) -> tuple[int, int]:
    """The Python a column stands for, used to rank prediction sources by closeness."""
    if own:
        return python_of(own[0]["python"])
    if plat.python_min > (3, 0):
        return plat.python_min
    if plat.python_max < (3, 99):
        return plat.python_max
    return max((python_of(r["python"]) for r in runners), default=(3, 13))


def _py_distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs((a[0] * 100 + a[1]) - (b[0] * 100 + b[1]))


def _newest_first(runners: Iterable[dict], order: dict[str, int]) -> list[dict]:
    return sorted(runners, key=lambda r: (tuple(-x for x in python_of(r["python"])),
                                          tuple(-x for x in _torch_key(r["torch"])), order[r["id"]]))


def platform_summary(runners: list[dict]) -> list[dict]:
    """One entry per policy column: its default method and the runners observed there.

    Returns:
        ``[{"id", "os", "default_method", "methods", "sharing_strategy", "observed_runners",
        "emulated_runners"}, ...]`` in :data:`~harness._policy.PLATFORMS` order; runner lists
        are newest first.
    """
    order = {r["id"]: i for i, r in enumerate(runners)}
    out = []
    for plat in PLATFORMS:
        own = [r for r in runners if (p := platform_of_runner(r)) is not None and p.id == plat.id]
        emu = [r for r in runners if (p := emulated_platform_of_runner(r)) is not None and p.id == plat.id]
        out.append({
            "id": plat.id,
            "os": plat.os,
            "default_method": plat.default_method,
            "methods": list(plat.methods),
            "sharing_strategy": plat.sharing_strategy,
            "observed_runners": [r["id"] for r in _newest_first(own, order)],
            "emulated_runners": [r["id"] for r in _newest_first(emu, order)],
        })
    return out


def compatibility(runners: list[dict], results: list[dict]) -> list[dict]:
    """Build the compatibility view from merged runners and results.

    Args:
        runners: the shards' ``runner`` objects (``id``, ``os``, ``python``, ``torch``, ...).
        results: every result record of those shards.

    Returns:
        A list of ``{"case", "platform", "method", "outcome", "kind", "provenance", "runner"}``
        dicts, sorted by case then column order, where ``provenance`` is ``observed``,
        ``emulated`` or ``predicted``. Optional keys: ``broken`` (the source cell belongs to a broken case),
        ``matches`` (observed cells: whether the outcome agrees with the case's expectation),
        ``disagree`` (observed cells: other runners of the same column with another outcome, as
        ``{"runner", "outcome", "kind"}``).
    """
    order = {r["id"]: i for i, r in enumerate(runners)}
    by_id = {r["id"]: r for r in runners}
    index: dict[tuple[str, str, str], dict] = {}
    for rec in results:
        if rec["runner"] in by_id:
            index[(rec["case"], rec["runner"], rec["method"])] = rec
    cases = sorted({rec["case"] for rec in results})
    cells: list[dict] = []
    for plat in PLATFORMS:
        method = plat.default_method
        own = _newest_first((r for r in runners
                             if (p := platform_of_runner(r)) is not None and p.id == plat.id), order)
        own_ids = {r["id"] for r in own}
        emulating = _newest_first((r for r in runners if (p := emulated_platform_of_runner(r)) is not None
                                   and p.id == plat.id), order)
        target = _target_python(plat, own, runners)
        # Prediction sources: observed runners first; runners emulating another platform last.
        others = sorted(
            (r for r in runners if r["id"] not in own_ids and r not in emulating),
            key=lambda r: (bool(r.get("emulates")), r["os"] != plat.os,
                           _py_distance(python_of(r["python"]), target),
                           tuple(-x for x in _torch_key(r["torch"])), order[r["id"]]),
        )
        for cid in cases:
            observed = [index[(cid, r["id"], method)] for r in own if (cid, r["id"], method) in index]
            if observed:
                src = observed[0]
                cell = _cell(cid, plat.id, method, src, "observed")
                cell["matches"] = bool(src.get("matches", True))
                disagree = [{"runner": o["runner"], "outcome": o["outcome"], "kind": o["kind"]}
                            for o in observed[1:] if (o["outcome"], o["kind"]) != (src["outcome"], src["kind"])]
                if disagree:
                    cell["disagree"] = disagree
                cells.append(cell)
                continue
            emulated = [index[(cid, r["id"], method)] for r in emulating if (cid, r["id"], method) in index]
            if emulated:
                cell = _cell(cid, plat.id, method, emulated[0], "emulated")
                cell["matches"] = bool(emulated[0].get("matches", True))
                cells.append(cell)
                continue
            for r in others:
                src = index.get((cid, r["id"], method))
                if src is not None and src["outcome"] != "unsupported":
                    cells.append(_cell(cid, plat.id, method, src, "predicted"))
                    break
    rank = {p.id: i for i, p in enumerate(PLATFORMS)}
    cells.sort(key=lambda c: (c["case"], rank[c["platform"]]))
    return cells


def _cell(case: str, platform: str, method: str, src: dict, provenance: str) -> dict:
    cell = {
        "case": case,
        "platform": platform,
        "method": method,
        "outcome": src["outcome"],
        "kind": src["kind"],
        "provenance": provenance,
        "runner": src["runner"],
    }
    if src.get("broken"):
        cell["broken"] = True
    return cell
