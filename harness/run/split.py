"""``harness run --split K/N``: one part of a runner's planned cells, for one CI job of N.

**The unit is a case.** Every cell of a case goes to the same part: the in-process control
decides whether a case is broken (:func:`harness.run.records.mark_broken`), and that verdict
covers the case's other cells, so a part must hold the control with them. A part with no case
still writes its (empty, complete) shard, so that the report sees every part; it starts no warm
template.

**The partition** is a function of the number of parts and one weight per case of the
selection (:func:`deal`): the cases, heaviest first (ties by case id), each go to the part with
the least weight so far (ties to the lowest part): the longest-processing-time rule. A case's
weight (:func:`case_weights`) is the sum of its cells' expected seconds
(:func:`harness.run.schedule.estimate`): their ``wall_s`` in this runner's shards in ``--out``
(the whole shard and every split shard, each cell's newest record), else the median of that
start method there, else a default per method; a cell expected to hang weighs its timeout.

**Every part must deal from the same weights**, also when the parts run one after another
into the same ``--out``, where the first part's shard is already there when the second starts.
So each split shard records the weights it dealt from and their fingerprint, its *round*
(``runner.split``, :func:`round_of`), and a part looks at the split shards of the same N in
``--out`` (:func:`choose_split`):

* resumed (``--resume``): it deals from the weights of the shard it resumes;
* the newest round there (by ``started_utc``) lacks some part: a split run is under way, and
  this part joins it, dealing from that round's weights;
* otherwise (no split shard, or the newest round has all N parts): a new round, weighed from
  the durations in this runner's shards.

Jobs that see the same shards (in CI: the same cache entry) therefore deal the same parts.
"""

from __future__ import annotations

import glob
import hashlib
import heapq
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.run.plan import CellSpec
from harness.run.schedule import durations, estimate
from harness.shard.format import Record, Runner, Shard, ShardError, read_shard, shard_filename

__all__ = [
    "SplitPlan",
    "case_weights",
    "choose_split",
    "deal",
    "newest_records",
    "round_of",
    "runner_shards",
]

Key = tuple[str, str]


def deal(weights: Mapping[str, float], parts: int) -> list[list[str]]:
    """Deal cases into ``parts`` parts, balanced by weight (longest processing time first).

    Args:
        weights: expected seconds of each case, by case id.
        parts: the number of parts, at least 1.

    Returns:
        ``parts`` lists of case ids, part 1 first; disjoint, together every case of ``weights``,
        each in dealing order (heaviest first). The same ``weights`` always give the same parts,
        whatever the order of the mapping.

    Raises:
        ValueError: ``parts`` is below 1.
    """
    if parts < 1:
        raise ValueError(f"parts must be at least 1, not {parts}")
    loads = [(0.0, i) for i in range(parts)]  # a heap of (weight so far, part index)
    dealt: list[list[str]] = [[] for _ in range(parts)]
    for case in sorted(weights, key=lambda c: (-weights[c], c)):
        load, i = heapq.heappop(loads)
        dealt[i].append(case)
        heapq.heappush(loads, (load + weights[case], i))
    return dealt


def case_weights(specs: Iterable[CellSpec], known: Mapping[Key, float]) -> dict[str, float]:
    """Each case's weight: the sum of its cells' expected seconds, rounded to milliseconds.

    Args:
        specs: the planned cells (every start method of each selected case).
        known: ``{(case, method): wall_s}`` from earlier shards (:func:`harness.run.schedule.durations`).

    Returns:
        Seconds by case id (a float, rounded so that it reads back from JSON unchanged).
    """
    totals: dict[str, float] = {}
    for spec in specs:
        totals[spec.case.id] = totals.get(spec.case.id, 0.0) + estimate(spec, dict(known))
    return {case: round(seconds, 3) for case, seconds in totals.items()}


def round_of(parts: int, weights: Mapping[str, float]) -> str:
    """The fingerprint of a split round: 16 hex digits of SHA-256 over ``parts`` and ``weights``."""
    text = json.dumps([parts, sorted(weights.items())], separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def runner_shards(out_dir: Path, runner: Runner, skip: Path | None = None) -> list[tuple[Path, Shard]]:
    """This runner's shards in ``out_dir``: its whole shard and its split shards of any N.

    Args:
        out_dir: the shard directory (``--out``).
        runner: this run's runner (its ``id`` names the files, :func:`~harness.shard.format.shard_filename`).
        skip: a path left out (the shard this run writes, read on its own).

    Returns:
        ``(path, shard)`` pairs in file-name order. A file that is not a readable shard of this
        runner is left out: it says nothing about this runner's durations, and every job that
        sees the same files leaves out the same ones.
    """
    stem = shard_filename(runner).removesuffix(".json")
    names = {Path(out_dir) / f"{stem}.json",
             *(Path(p) for p in glob.glob(glob.escape(str(Path(out_dir) / stem)) + ".split-*-of-*.json"))}
    found: list[tuple[Path, Shard]] = []
    for path in sorted(names):
        if skip is not None and path == Path(skip):
            continue
        if not path.is_file():
            continue
        try:
            shard = read_shard(path)
        except ShardError:
            continue
        if shard["runner"].get("id") == runner.get("id"):
            found.append((path, shard))
    return found


def newest_records(shards: Iterable[Shard | None]) -> dict[Key, Record]:
    """Each cell's newest record across ``shards`` (by ``observed_utc``; on a tie, or with no
    time, the first shard given wins)."""
    newest: dict[Key, Record] = {}
    for shard in shards:
        for rec in (shard or {}).get("results", ()):
            key = (rec["case"], rec["method"])
            if key not in newest or str(rec.get("observed_utc") or "") > str(newest[key].get("observed_utc") or ""):
                newest[key] = rec
    return newest


@dataclass(frozen=True)
class SplitPlan:
    """One part of a split run, as :func:`choose_split` dealt it.

    Attributes:
        part: this part, from 1 to :attr:`parts`.
        parts: the number of parts, at least 2.
        weights: expected seconds of each case of the whole selection.
        cases: the ids of the cases of this part, in dealing order.
        basis: how the weights were chosen, for the run's line: ``new``, ``joined`` (a round
            under way in ``--out``) or ``resumed``.
    """

    part: int
    parts: int
    weights: dict[str, float]
    cases: tuple[str, ...]
    basis: str

    @property
    def round(self) -> str:
        """The round's fingerprint (:func:`round_of`)."""
        return round_of(self.parts, self.weights)

    def record(self) -> dict[str, Any]:
        """The shard's ``runner.split`` object (``harness/schemas/shard.schema.json``)."""
        return {"part": self.part, "parts": self.parts, "round": self.round, "weights_s": dict(self.weights)}

    def seconds(self) -> tuple[float, float]:
        """``(this part's weight, the whole selection's weight)``, in seconds."""
        return sum(self.weights[c] for c in self.cases), sum(self.weights.values())


def _round_under_way(shards: Sequence[Shard], parts: int) -> dict[str, float] | None:
    """The weights of the newest split round of ``parts`` parts in ``shards`` when it lacks
    some part (a split run under way), else ``None``."""
    rounds: dict[str, dict[str, Any]] = {}
    for shard in shards:
        split = shard["runner"].get("split")
        if not split or split["parts"] != parts:
            continue
        entry = rounds.setdefault(split["round"], {"started": "", "parts": set(), "weights": split["weights_s"]})
        entry["started"] = max(entry["started"], str(shard["runner"].get("started_utc", "")))
        entry["parts"].add(split["part"])
    if not rounds:
        return None

    def newest(fingerprint: str) -> tuple[str, bool, str]:
        entry = rounds[fingerprint]
        # On a tie of start times, a round under way wins: the next part of the run joins it.
        return (entry["started"], len(entry["parts"]) < parts, fingerprint)

    entry = rounds[max(rounds, key=newest)]
    if len(entry["parts"]) == parts:
        return None
    return dict(entry["weights"])


def choose_split(specs: Sequence[CellSpec], part: int, parts: int, shards: Sequence[Shard],
                 resumed: Shard | None = None) -> SplitPlan:
    """Deal the planned cells' cases into ``parts`` parts and return part ``part`` (see the
    module docstring for how the weights are chosen).

    Args:
        specs: every planned cell of the selection (all parts).
        part: this part, from 1 to ``parts``.
        parts: the number of parts, at least 2.
        shards: this runner's shards in ``--out`` (its whole shard, its split shards of any N,
            the one this part writes included); their durations weigh a new round.
        resumed: the shard ``--resume`` continues; its weights are dealt again.

    Returns:
        The :class:`SplitPlan` of this part.

    Raises:
        ValueError: ``part`` is not within ``1..parts``, or ``parts`` is below 2.
    """
    if parts < 2 or not 1 <= part <= parts:
        raise ValueError(f"part {part} of {parts}: need 1 <= part <= parts and parts >= 2")
    stored: dict[str, float] | None = None
    basis = "new"
    split = (resumed or {}).get("runner", {}).get("split")
    if split and split["parts"] == parts:
        stored, basis = dict(split["weights_s"]), "resumed"
    else:
        stored = _round_under_way(shards, parts)
        basis = "new" if stored is None else "joined"
    known = durations({"results": list(newest_records(shards).values())})
    weights = case_weights(specs, known)
    if stored is not None:
        # The round's weights for the cases it weighed; a case it did not (another selection) is
        # weighed here, which then makes another round, and the report says the parts differ.
        weights = {case: float(stored.get(case, seconds)) for case, seconds in weights.items()}
    dealt = deal(weights, parts)
    return SplitPlan(part, parts, weights, tuple(dealt[part - 1]), basis)
