"""``harness run --split K/N``: the partition, the choice of its weights, the option, and how
``harness report`` merges (or refuses) the split shards of one runner."""

from __future__ import annotations

import copy
import itertools
import random
from pathlib import Path

import pytest
from _shards import linux_shard, write

from harness._options import parse_split
from harness.catalogue.discover import discover
from harness.errors import ShardError, UsageError
from harness.report.merge import load_shards
from harness.report.splits import join_splits
from harness.run.plan import plan
from harness.run.schedule import DEFAULT_ESTIMATE_S
from harness.run.split import case_weights, choose_split, deal, newest_records, round_of
from harness.shard.format import read_shard, split_filename

# -- the partition ------------------------------------------------------------------------------


def _weights(seed: int, count: int) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"case-{i:03d}": round(rng.choice([0.1, 0.4, 3.0, rng.uniform(0, 30)]), 3) for i in range(count)}


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_deal_is_disjoint_covering_and_deterministic(seed, parts):
    weights = _weights(seed, 5 + seed * 3)
    dealt = deal(weights, parts)
    assert len(dealt) == parts
    flat = [c for part in dealt for c in part]
    assert sorted(flat) == sorted(weights) and len(flat) == len(set(flat))
    shuffled = list(weights.items())
    random.Random(seed).shuffle(shuffled)
    assert deal(dict(shuffled), parts) == dealt  # the mapping's order does not matter


@pytest.mark.parametrize("seed", range(30))
def test_deal_is_balanced(seed):
    """Each part ends within the heaviest case of the lightest part (the greedy rule's bound), and
    no worse than 4/3 of the best split, found by trying every assignment of a small set."""
    weights = _weights(seed, 8)
    parts = 3
    loads = [sum(weights[c] for c in part) for part in deal(weights, parts)]
    assert max(loads) - min(loads) <= max(weights.values()) + 1e-9
    best = min(max(sum(w for w, p in zip(weights.values(), assign, strict=True) if p == k) for k in range(parts))
               for assign in itertools.product(range(parts), repeat=len(weights)))
    assert max(loads) <= best * 4 / 3 + 1e-9


def test_deal_by_durations_separates_the_long_cases():
    weights = {"long-a": 10.0, "long-b": 9.0, **{f"short-{i}": 1.0 for i in range(10)}}
    a, b = deal(weights, 2)
    assert ("long-a" in a) != ("long-a" in b) and ("long-a" in a) == ("long-b" in b)
    assert abs(sum(weights[c] for c in a) - sum(weights[c] for c in b)) <= 1.0


def test_deal_with_more_parts_than_cases_leaves_parts_empty():
    assert deal({"b": 1.0, "a": 1.0}, 4) == [["a"], ["b"], [], []]
    with pytest.raises(ValueError):
        deal({"a": 1.0}, 0)


# -- the weights ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def specs():
    cases = discover().by_id()
    chosen = [cases[c] for c in ("collate-fn-lambda", "collate-fn-toplevel", "worker-init-fn-local",
                                 "worker-init-fn-toplevel", "entry-unguarded-thread")]
    return plan(chosen, ["in-process", "fork", "spawn", "forkserver"], 60.0)


def _shard(specs, walls: dict[tuple[str, str], float], *, split: dict | None = None,
           started: str = "2026-01-01T00:00:00Z") -> dict:
    runner = {"id": "r", "started_utc": started, **({"split": split} if split else {})}
    return {"runner": runner, "results": [
        {"case": s.case.id, "method": s.method, "wall_s": walls[s.key], "observed_utc": started}
        for s in specs if s.key in walls]}


def test_weights_are_durations_else_estimates(specs):
    known = {("collate-fn-lambda", "spawn"): 12.0}
    weights = case_weights(specs, known)
    assert weights["collate-fn-lambda"] == round(12.0 + DEFAULT_ESTIMATE_S["forkserver"]
                                                 + DEFAULT_ESTIMATE_S["in-process"] + DEFAULT_ESTIMATE_S["fork"], 3)
    fallback = case_weights(specs, {})
    assert fallback["collate-fn-toplevel"] == round(sum(DEFAULT_ESTIMATE_S.values()), 3)
    hang = next(s for s in specs if s.key == ("entry-unguarded-thread", "fork"))
    assert fallback["entry-unguarded-thread"] >= hang.timeout_s  # its fork cell hangs until its timeout
    assert set(weights) == {s.case.id for s in specs}


def test_choose_split_gives_every_case_one_part_and_keeps_cells_of_a_case_together(specs):
    walls = {s.key: 1.0 + i for i, s in enumerate(specs)}
    shards = [_shard(specs, walls)]
    plans = [choose_split(specs, k, 3, shards) for k in (1, 2, 3)]
    assert all(p.basis == "new" for p in plans) and len({p.round for p in plans}) == 1
    assert sorted(c for p in plans for c in p.cases) == sorted({s.case.id for s in specs})
    assert plans[0].weights == case_weights(specs, {k: v for k, v in walls.items()})
    assert plans[0].record() == {"part": 1, "parts": 3, "round": round_of(3, plans[0].weights),
                                 "weights_s": plans[0].weights}


def test_a_part_joins_the_round_under_way_and_a_finished_round_starts_a_new_one(specs):
    old_walls = {s.key: 1.0 for s in specs}
    old = [_shard(specs, old_walls, split=None)]
    first = choose_split(specs, 1, 2, old)
    # Part 1 ran: its shard, with other durations, is in --out when part 2 starts.
    part1 = _shard(specs, {s.key: 5.0 + i for i, s in enumerate(specs) if s.case.id in first.cases},
                   split=first.record(), started="2026-01-02T00:00:00Z")
    second = choose_split(specs, 2, 2, [*old, part1])
    assert second.basis == "joined" and second.weights == first.weights and second.round == first.round
    assert set(second.cases) == set(deal(first.weights, 2)[1])
    # Both parts there: the round is finished, and the next run weighs the new durations.
    part2 = _shard(specs, {s.key: 2.0 for s in specs if s.case.id in second.cases},
                   split=second.record(), started="2026-01-02T00:01:00Z")
    again = choose_split(specs, 1, 2, [*old, part1, part2])
    assert again.basis == "new" and again.round != first.round
    assert again.weights == case_weights(specs, {(r["case"], r["method"]): r["wall_s"]
                                                 for r in newest_records([part1, part2]).values()})


def test_resume_deals_the_resumed_shards_weights(specs):
    weights = {s.case.id: 1.0 for s in specs} | {"collate-fn-lambda": 50.0}
    resumed = _shard(specs, {}, split={"part": 2, "parts": 2, "round": round_of(2, weights), "weights_s": weights})
    other = _shard(specs, {s.key: 9.0 for s in specs})
    got = choose_split(specs, 2, 2, [other, resumed], resumed)
    assert got.basis == "resumed" and got.weights == weights and got.round == round_of(2, weights)


def test_choose_split_refuses_a_part_outside_the_parts(specs):
    for part, parts in ((0, 2), (3, 2), (1, 1)):
        with pytest.raises(ValueError):
            choose_split(specs, part, parts, [])


def test_newest_record_wins():
    a = {"runner": {}, "results": [{"case": "c", "method": "fork", "observed_utc": "2026-01-01T00:00:00Z", "v": 1}]}
    b = {"runner": {}, "results": [{"case": "c", "method": "fork", "observed_utc": "2026-01-02T00:00:00Z", "v": 2}]}
    assert newest_records([a, b])[("c", "fork")]["v"] == 2 == newest_records([b, a])[("c", "fork")]["v"]


# -- the option -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("1/1", (1, 1)), ("2/3", (2, 3)), (" 3 / 3 ", (3, 3)), ("1/1000", (1, 1000))])
def test_parse_split(text, value):
    assert parse_split(text) == value


@pytest.mark.parametrize("text, why", [("0/3", "K must be from 1 to 3"), ("4/3", "K must be from 1 to 3"),
                                       ("a/b", "not K/N"), ("3", "not K/N"), ("", "not K/N"), ("-1/3", "not K/N"),
                                       ("1/0", "N must be at least 1"), ("1/1001", "N must be at most 1000"),
                                       ("1/" + "9" * 40, "not K/N")])
def test_parse_split_refuses(text, why):
    with pytest.raises(UsageError) as info:
        parse_split(text)
    assert str(info.value).startswith(f"--split: {why}") and "\n" not in str(info.value)


# -- harness report: split shards of one runner -----------------------------------------------------


def split_shards(parts: int, shard: dict | None = None) -> list[dict]:
    """The real Linux shard cut into ``parts`` split shards as ``harness run --split`` deals them."""
    shard = shard or linux_shard()
    weights = {}
    for rec in shard["results"]:
        weights[rec["case"]] = round(weights.get(rec["case"], 0.0) + (rec["wall_s"] or 0.0), 3)
    dealt = deal(weights, parts)
    out = []
    for k, cases in enumerate(dealt, start=1):
        part = copy.deepcopy(shard)
        part["runner"]["split"] = {"part": k, "parts": parts, "round": round_of(parts, weights), "weights_s": weights}
        part["runner"]["started_utc"] = f"2026-01-0{k}T00:00:00Z"
        part["runner"]["overhead_cpu_s"] = {"harness": 1.5, "total": 2.0}
        part["results"] = [r for r in part["results"] if r["case"] in cases]
        part["cases"] = {c: m for c, m in part["cases"].items() if c in cases}
        out.append(part)
    return out


def _write_parts(folder: Path, parts: list[dict]) -> list[Path]:
    return [write(folder / split_filename(p["runner"], p["runner"]["split"]["part"], p["runner"]["split"]["parts"]), p)
            for p in parts]


def test_split_shards_merge_into_the_whole_runner(tmp_path):
    whole = linux_shard()
    paths = _write_parts(tmp_path, split_shards(3, whole))
    notes: list[str] = []
    (merged,), rejected = load_shards(tmp_path, notes)
    assert rejected == [] and notes == []
    path, shard = merged
    assert path == paths[0]
    assert shard["complete"] is whole["complete"] is True
    key = lambda r: (r["case"], r["method"])  # noqa: E731
    assert sorted(shard["results"], key=key) == sorted(whole["results"], key=key)
    assert shard["cases"] == dict(sorted(whole["cases"].items()))
    runner = shard["runner"]
    assert "split" not in runner and runner["split_shards"] == [p.name for p in paths]
    assert runner["started_utc"] == "2026-01-01T00:00:00Z"
    assert runner["overhead_cpu_s"] == {"harness": 4.5, "total": 6.0}
    assert {k: v for k, v in runner.items() if k not in ("split_shards", "started_utc", "overhead_cpu_s")} == \
        {k: v for k, v in whole["runner"].items() if k not in ("started_utc", "overhead_cpu_s")}


def test_a_missing_part_is_named_and_the_column_incomplete(tmp_path):
    parts = split_shards(3)
    _write_parts(tmp_path, [parts[0], parts[2]])
    notes: list[str] = []
    (merged,), rejected = load_shards(tmp_path, notes)
    assert rejected == []
    assert merged[1]["complete"] is False and merged[1]["runner"]["split_missing"] == [2]
    (line,) = notes
    assert "split part(s) 2 of 3 missing" in line and "split-1-of-3.json" in line and "split-3-of-3.json" in line


def _refused(tmp_path: Path, parts: list[dict]) -> str:
    paths = _write_parts(tmp_path, parts)
    valid, rejected = load_shards(tmp_path)
    assert valid == []
    (line,) = rejected
    assert all(str(p) in line for p in paths) and "\n" not in line
    return line


def test_overlapping_parts_are_refused(tmp_path):
    parts = split_shards(2)
    moved = parts[1]["results"][0]
    parts[0]["results"].append(copy.deepcopy(moved))
    line = _refused(tmp_path, parts)
    assert f"overlap: case {moved['case']!r} [{moved['method']}] is in part 1" in line


def test_parts_with_another_number_of_parts_are_refused(tmp_path):
    three, two = split_shards(3), split_shards(2)
    line = _refused(tmp_path, [three[0], two[1]])
    assert "disagree on the number of parts" in line


def test_parts_of_different_rounds_are_refused(tmp_path):
    parts = split_shards(2)
    parts[1]["runner"]["split"]["round"] = "0" * 16
    assert "dealt from different previous shards" in _refused(tmp_path, parts)


def test_parts_of_another_runner_content_are_refused(tmp_path):
    parts = split_shards(2)
    parts[1]["runner"]["git_commit"] = "f" * 40
    assert "differ in runner git_commit" in _refused(tmp_path, parts)


def test_parts_beside_the_whole_shard_are_refused(tmp_path):
    whole = write(tmp_path / "linux-whole.json", linux_shard())
    paths = _write_parts(tmp_path, split_shards(2))
    (kept,), (line,) = load_shards(tmp_path)
    assert kept[0] == whole and f"whose whole shard {whole.name} is there too" in line
    assert all(str(p) in line for p in paths)


def test_a_second_different_copy_of_one_part_is_refused(tmp_path):
    parts = split_shards(2)
    _write_parts(tmp_path, parts)
    other = copy.deepcopy(parts[0])
    other["results"][0]["message"] = "another run"
    write(tmp_path / "zz-copy.json", other)
    _, rejected = load_shards(tmp_path)
    assert any("zz-copy.json: runner id" in r and "part 1 of 2 already supplied" in r for r in rejected)


def test_join_splits_leaves_whole_shards_alone():
    shard = linux_shard()
    assert join_splits([(Path("a.json"), shard)]) == ([(Path("a.json"), shard)], [])


def test_a_split_shard_is_validated_on_read(tmp_path):
    part = split_shards(2)[0]
    path = write(tmp_path / "part.json", part)
    assert read_shard(path)["runner"]["split"]["part"] == 1
    old = linux_shard()  # a shard written before --split existed stays valid
    assert "split" not in read_shard(write(tmp_path / "old.json", old))["runner"]
    part["runner"]["split"]["part"] = 3
    with pytest.raises(ShardError, match=r"runner/split: part 3 of 2 parts"):
        read_shard(write(tmp_path / "bad.json", part))
    part["runner"]["split"].update(part=1, round="not-hex")
    with pytest.raises(ShardError, match=r"schema violation at runner/split/round"):
        read_shard(write(tmp_path / "bad.json", part))
