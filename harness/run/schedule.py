"""Cell order for ``harness run``: longest first, from the previous shard's durations.

With ``--jobs`` cells running at once, the run ends when its last cell ends; starting the
long cells first leaves only short ones for the end, so no core idles while one long cell
finishes (the longest-processing-time-first rule of list scheduling). A cell's length is
its ``wall_s`` in the previous shard of the same runner when there is one; otherwise an
estimate: the median ``wall_s`` of that start method in the previous shard, else a default
per method measured on a 2-core Linux machine (a spawn or forkserver worker imports torch,
about 1.5 s; fork and in-process cells take a fraction of a second). A cell expected to hang
takes its timeout.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from harness.run.plan import CellSpec

__all__ = ["DEFAULT_ESTIMATE_S", "durations", "estimate", "longest_first"]

#: Seconds a cell of each method takes when no previous shard says otherwise.
DEFAULT_ESTIMATE_S = {"in-process": 0.1, "fork": 0.3, "spawn": 3.0, "forkserver": 3.0}


def durations(shard: Mapping[str, Any] | None) -> dict[tuple[str, str], float]:
    """``{(case, method): wall_s}`` of every timed cell in ``shard`` (empty for ``None``)."""
    if not shard:
        return {}
    return {
        (r["case"], r["method"]): float(r["wall_s"])
        for r in shard.get("results", ())
        if isinstance(r.get("wall_s"), (int, float))
    }


def estimate(spec: CellSpec, known: dict[tuple[str, str], float]) -> float:
    """Expected wall time of ``spec`` in seconds (see the module docstring for the rules)."""
    if spec.key in known:
        return known[spec.key]
    if spec.case.expect.get(spec.method) == "hang":
        return spec.timeout_s
    same = [v for (_, m), v in known.items() if m == spec.method]
    if same:
        return statistics.median(same)
    return DEFAULT_ESTIMATE_S.get(spec.method, 1.0)


def longest_first(specs: Iterable[CellSpec], known: dict[tuple[str, str], float]) -> list[CellSpec]:
    """``specs`` sorted by :func:`estimate`, longest first; ties keep their order."""
    specs = list(specs)
    return sorted(specs, key=lambda s: -estimate(s, known))
