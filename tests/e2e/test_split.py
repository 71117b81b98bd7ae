"""End-to-end: ``harness run --split K/N`` really runs its part, and ``harness report`` merges the
parts into the column an unsplit run gives, or refuses parts that do not fit together."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

#: Cheap cases of the built-in catalogue (in-process and fork cells take a fraction of a second).
CASES = ("collate-fn-lambda", "collate-fn-toplevel", "worker-init-fn-local", "worker-init-fn-toplevel")
METHODS = ("in-process", "fork")


def _run(cli, out: Path, *extra: str):
    got = cli("run", "--cases", *CASES, "--start-method", *METHODS, "--out", str(out), *extra)
    assert got.returncode == 0, got.stdout + got.stderr
    return got


def _cells(matrix_path: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    matrix = json.loads(matrix_path.read_text(encoding="utf-8"))
    assert len(matrix["runners"]) == 1
    return {(r["case"], r["method"]): (r["outcome"], r["kind"]) for r in matrix["results"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cli) -> dict[str, Path]:
    """One unsplit run, and the same selection as parts 1/3, 2/3 and 3/3, one after another into
    one shard directory, each reported."""
    root = tmp_path_factory.mktemp("split")
    whole, split = root / "whole", root / "split"
    _run(cli, whole)
    lines = [_run(cli, split, "--split", f"{k}/3").stderr for k in (1, 2, 3)]
    for name in ("whole", "split"):
        got = cli("report", "--shards", str(root / name), "--out", str(root / f"report-{name}"))
        assert got.returncode == 0, got.stderr
    return {"root": root, "whole": whole, "split": split, "lines": lines}  # type: ignore[dict-item]


def test_the_merged_split_run_equals_the_unsplit_run(runs):
    whole = _cells(runs["root"] / "report-whole" / "matrix.json")
    split = _cells(runs["root"] / "report-split" / "matrix.json")
    assert len(whole) == len(CASES) * len(METHODS)
    assert split == whole
    matrix = json.loads((runs["root"] / "report-split" / "matrix.json").read_text(encoding="utf-8"))
    (runner,) = matrix["runners"]
    assert len(runner["split_shards"]) == 3 and "split" not in runner and "split_missing" not in runner
    unsplit = json.loads((runs["root"] / "report-whole" / "matrix.json").read_text(encoding="utf-8"))["runners"][0]
    assert runner["id"] == unsplit["id"] and runner["complete"] == unsplit["complete"]


def test_each_part_writes_its_own_shard_of_whole_cases(runs):
    shards = sorted(runs["split"].glob("*.json"))
    assert [p.name.rsplit(".split-", 1)[1] for p in shards] == ["1-of-3.json", "2-of-3.json", "3-of-3.json"]
    seen: set[tuple[str, str]] = set()
    rounds = set()
    for k, path in enumerate(shards, start=1):
        shard = json.loads(path.read_text(encoding="utf-8"))
        split = shard["runner"]["split"]
        assert (split["part"], split["parts"]) == (k, 3) and set(split["weights_s"]) == set(CASES)
        rounds.add(split["round"])
        cells = {(r["case"], r["method"]) for r in shard["results"]}
        assert cells == {(c, m) for c in shard["cases"] for m in METHODS}  # every cell of its cases
        assert not cells & seen
        seen |= cells
    assert len(rounds) == 1 and len(seen) == len(CASES) * len(METHODS)
    # Parts 2 and 3 joined the run part 1 started in the same directory.
    assert "weighed by estimates" in runs["lines"][0]
    assert all("joining the split run under way" in line for line in runs["lines"][1:])


def test_a_part_again_with_changed_keeps_its_cells(runs, cli, tmp_path):
    out = tmp_path / "again"
    shutil.copytree(runs["split"], out)
    got = _run(cli, out, "--split", "2/3", "--changed")
    # All three parts are there: a new round, dealt by the durations they recorded; every cell
    # that part 2 now gets was observed in one of the parts, so none is "never observed" (and
    # each is kept unless its inputs changed since: the harness's own files are inputs too).
    assert "weighed by the durations in 3 shard(s)" in got.stderr
    assert ", 0 never observed in the shards of this runner)" in got.stderr
    shard = json.loads(next(out.glob("*.split-2-of-3.json")).read_text(encoding="utf-8"))
    kept = sum(1 for r in shard["results"] if r.get("carried_over"))
    assert shard["results"] and f"--changed: {kept} cell(s) unchanged" in got.stderr


def test_a_part_beside_the_whole_shard_is_warned_at_run_time(runs, cli, tmp_path):
    """harness report refuses split shards beside the runner's whole shard; the run says so first."""
    out = tmp_path / "mixed"
    shutil.copytree(runs["whole"], out)
    got = _run(cli, out, "--split", "1/2")
    whole = next(runs["whole"].glob("*.json")).name
    assert any(whole in line and "refuses split shards beside it" in line for line in got.stderr.splitlines()), got.stderr
    assert cli("report", "--shards", str(out), "--out", str(tmp_path / "rep")).returncode == 2


def test_report_names_the_missing_part(runs, cli, tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for path in runs["split"].glob("*.split-[13]-of-3.json"):
        shutil.copy(path, shards)
    got = cli.main("report", "--shards", str(shards), "--out", str(tmp_path / "r"))
    assert got.returncode == 0, got.stderr
    (line,) = [ln for ln in got.stderr.splitlines() if "missing" in ln]
    assert "split part(s) 2 of 3 missing" in line and "its column is incomplete" in line
    matrix = json.loads((tmp_path / "r" / "matrix.json").read_text(encoding="utf-8"))
    assert matrix["runners"][0]["complete"] is False and matrix["runners"][0]["split_missing"] == [2]


def test_report_refuses_overlapping_parts(runs, cli, tmp_path):
    shards = tmp_path / "shards"
    shutil.copytree(runs["split"], shards)
    one, two = sorted(shards.glob("*.json"))[:2]
    first = json.loads(one.read_text(encoding="utf-8"))
    second = json.loads(two.read_text(encoding="utf-8"))
    second["results"].append(first["results"][0])
    two.write_text(json.dumps(second), encoding="utf-8")
    got = cli.main("report", "--shards", str(shards), "--out", str(tmp_path / "r"))
    assert got.returncode == 2
    (line,) = [ln for ln in got.stderr.splitlines() if ln.startswith("harness report: rejected")]
    assert "overlap" in line and str(one) in line and str(two) in line


def test_report_refuses_parts_of_another_split(runs, cli, tmp_path):
    shards = tmp_path / "shards"
    shutil.copytree(runs["split"], shards)
    other = tmp_path / "other"
    _run(cli, other, "--split", "1/2")
    shutil.copy(next(other.glob("*.json")), shards)
    got = cli.main("report", "--shards", str(shards), "--out", str(tmp_path / "r"))
    assert got.returncode == 2
    (line,) = [ln for ln in got.stderr.splitlines() if ln.startswith("harness report: rejected")]
    assert "disagree on the number of parts" in line and "split-1-of-2.json" in line


@pytest.mark.parametrize("value, why", [
    ("0/3", "K must be from 1 to 3, got '0/3'"),
    ("4/3", "K must be from 1 to 3, got '4/3'"),
    ("a/b", "not K/N (part K of N parts, such as 2/3): 'a/b'"),
    ("3", "not K/N (part K of N parts, such as 2/3): '3'"),
])
def test_bad_split_values_are_one_line(cli, tmp_path, value, why):
    got = cli.main("run", "--split", value, "--out", str(tmp_path))
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == f"harness run: argument --split: {why}\n"
    assert not list(tmp_path.iterdir())
