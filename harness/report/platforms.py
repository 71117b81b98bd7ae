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
from typing import NamedTuple

from harness._policy import (
    PLATFORMS,
    Platform,
    emulated_platform_of_runner,
    platform_of_runner,
    python_of,
)
from harness.report import JSONObject

__all__ = ["compatibility", "platform_summary"]


def _torch_key(version: str) -> tuple[int, ...]:
    """Numeric release of a torch version (``"2.13.0+cpu"`` → ``(2, 13, 0)``)."""
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


def _target_python(plat: Platform, own: list[JSONObject], runners: list[JSONObject]) -> tuple[int, int]:
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


def _newest_first(runners: Iterable[JSONObject], order: dict[str, int]) -> list[JSONObject]:
    return sorted(runners, key=lambda r: (tuple(-x for x in python_of(r["python"])),
                                          tuple(-x for x in _torch_key(r["torch"])), order[r["id"]]))


class _Sources(NamedTuple):
    """The runners a column's cells may come from, best first within each kind."""

    own: list[JSONObject]  # runners of the platform itself (observed)
    emulating: list[JSONObject]  # Linux runners with the platform's profile (emulated)
    others: list[JSONObject]  # every other runner, closest first (predicted)


def _own_and_emulating(plat: Platform, runners: list[JSONObject],
                       order: dict[str, int]) -> tuple[list[JSONObject], list[JSONObject]]:
    """The runners of ``plat`` and the runners emulating it, each newest first."""
    own = [r for r in runners if (p := platform_of_runner(r)) is not None and p.id == plat.id]
    emu = [r for r in runners if (p := emulated_platform_of_runner(r)) is not None and p.id == plat.id]
    return _newest_first(own, order), _newest_first(emu, order)


def _sources(plat: Platform, runners: list[JSONObject], order: dict[str, int]) -> _Sources:
    own, emulating = _own_and_emulating(plat, runners, order)
    own_ids = {r["id"] for r in own}
    target = _target_python(plat, own, runners)
    # Prediction sources: observed runners first; runners emulating another platform last.
    others = sorted(
        (r for r in runners if r["id"] not in own_ids and r not in emulating),
        key=lambda r: (bool(r.get("emulates")), r["os"] != plat.os,
                       _py_distance(python_of(r["python"]), target),
                       tuple(-x for x in _torch_key(r["torch"])), order[r["id"]]),
    )
    return _Sources(own, emulating, others)


def platform_summary(runners: list[JSONObject]) -> list[JSONObject]:
    """One entry per policy column: its default method and the runners observed there.

    Returns:
        ``[{"id", "os", "default_method", "methods", "sharing_strategy", "observed_runners",
        "emulated_runners"}, ...]`` in :data:`~harness._policy.PLATFORMS` order; runner lists
        are newest first.
    """
    order = {r["id"]: i for i, r in enumerate(runners)}
    out = []
    for plat in PLATFORMS:
        own, emulating = _own_and_emulating(plat, runners, order)
        out.append({
            "id": plat.id,
            "os": plat.os,
            "default_method": plat.default_method,
            "methods": list(plat.methods),
            "sharing_strategy": plat.sharing_strategy,
            "observed_runners": [r["id"] for r in own],
            "emulated_runners": [r["id"] for r in emulating],
        })
    return out


def compatibility(runners: list[JSONObject], results: list[JSONObject]) -> list[JSONObject]:
    """Build the compatibility view from merged runners and results.

    Args:
        runners: the shards' ``runner`` objects (``id``, ``os``, ``python``, ``torch``, ...).
        results: every result record of those shards.

    Returns:
        A list of ``{"case", "platform", "method", "outcome", "kind", "provenance", "runner"}``
        dicts, sorted by case then column order, where ``provenance`` is ``observed``,
        ``emulated`` or ``predicted``. Optional keys: ``broken`` (the source cell belongs to a broken case),
        ``matches`` (observed and emulated cells: whether the outcome agrees with the case's
        expectation), ``disagree`` (observed cells: other runners of the same column with
        another outcome, as ``{"runner", "outcome", "kind"}``).
    """
    order = {r["id"]: i for i, r in enumerate(runners)}
    by_id = {r["id"]: r for r in runners}
    index = {(rec["case"], rec["runner"], rec["method"]): rec for rec in results if rec["runner"] in by_id}
    cases = sorted({rec["case"] for rec in results})
    cells: list[JSONObject] = []
    for plat in PLATFORMS:
        sources = _sources(plat, runners, order)
        for cid in cases:
            cell = _column_cell(cid, plat, sources, index)
            if cell is not None:
                cells.append(cell)
    rank = {p.id: i for i, p in enumerate(PLATFORMS)}
    cells.sort(key=lambda c: (c["case"], rank[c["platform"]]))
    return cells


def _column_cell(cid: str, plat: Platform, sources: _Sources,
                 index: dict[tuple[str, str, str], JSONObject]) -> JSONObject | None:
    """The cell of case ``cid`` in the column of ``plat``: observed, else emulated, else
    predicted; ``None`` when no runner ran the case under the column's default method."""
    method = plat.default_method
    observed = [index[(cid, r["id"], method)] for r in sources.own if (cid, r["id"], method) in index]
    if observed:
        src = observed[0]
        cell = _cell(cid, plat.id, method, src, "observed")
        cell["matches"] = bool(src.get("matches", True))
        disagree = [{"runner": o["runner"], "outcome": o["outcome"], "kind": o["kind"]}
                    for o in observed[1:] if (o["outcome"], o["kind"]) != (src["outcome"], src["kind"])]
        if disagree:
            cell["disagree"] = disagree
        return cell
    emulated = [index[(cid, r["id"], method)] for r in sources.emulating if (cid, r["id"], method) in index]
    if emulated:
        cell = _cell(cid, plat.id, method, emulated[0], "emulated")
        cell["matches"] = bool(emulated[0].get("matches", True))
        return cell
    for r in sources.others:
        rec = index.get((cid, r["id"], method))
        if rec is not None and rec["outcome"] != "unsupported":
            return _cell(cid, plat.id, method, rec, "predicted")
    return None


def _cell(case: str, platform: str, method: str, src: JSONObject, provenance: str) -> JSONObject:
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
