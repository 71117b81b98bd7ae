"""Shard schema: a real shard round-trips; invalid shards are rejected with one line naming the file."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness.shard.format import (
    ShardError,
    read_shard,
    runner_info,
    shard_filename,
    write_json_atomic,
)


def a_result(runner_id: str) -> dict:
    return {
        "runner": runner_id, "case": "transform-lambda", "family": "unpicklable-callables", "method": "spawn",
        "outcome": "error", "kind": "pickle", "message": "AttributeError: Can't pickle local object 'run.<locals>.<lambda>'",
        "root_cause": "AttributeError: Can't pickle local object 'run.<locals>.<lambda>'", "duration_s": 0.52,
        "first_batch_s": None, "parent_peak_rss_bytes": 300_000_000, "worker_peak_rss_bytes": 0,
        "worker_peak_uss_bytes": 0, "workers_seen": 0, "warnings": [], "expected": "error",
        "expected_kind": "pickle", "matches": True, "broken": False, "exit_code": 0,
    }


@pytest.fixture
def shard() -> dict:
    runner = runner_info(isolation="fresh", timeout_s=60.0)
    return {"schema_version": 1, "complete": True, "runner": runner, "results": [a_result(runner["id"])]}


def test_runner_describes_this_machine(shard):
    runner = shard["runner"]
    assert runner["os"] == "linux"
    assert runner["python"].startswith("3.")
    assert set(runner["start_methods"]) >= {"fork", "spawn", "forkserver"}
    assert runner["default_method"] == "fork"  # Linux, Python <= 3.13 (CPython docs)
    name = shard_filename(runner)
    assert name.startswith("linux-") and "py3." in name and "torch" in name and name.endswith(".json")


def test_round_trip(tmp_path, shard):
    path = tmp_path / shard_filename(shard["runner"])
    write_json_atomic(path, shard)
    assert read_shard(path) == shard
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda s: s.update(schema_version=2), "unsupported schema_version 2"),
        (lambda s: s["results"][0].update(outcome="exploded"), "schema violation at results/0/outcome"),
        (lambda s: s["results"][0].pop("matches"), "schema violation"),
        (lambda s: s["runner"].update(os="beos"), "schema violation at runner/os"),
        (lambda s: s["results"][0].update(method="thread"), "schema violation at results/0/method"),
    ],
)
def test_invalid_shards_are_rejected(tmp_path, shard, mutate, reason):
    bad = copy.deepcopy(shard)
    mutate(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ShardError) as err:
        read_shard(path)
    msg = str(err.value)
    assert str(path) in msg and reason in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"schema_version": 1, "runner": {"id": "x"', "invalid or truncated JSON"),
        ('{"name": "some-package", "version": "1.0"}', "not a harness shard"),
        ("[1, 2, 3]", "not a harness shard"),
    ],
)
def test_non_shards_are_rejected(tmp_path, text, reason):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(ShardError, match=reason):
        read_shard(path)


def test_published_schema_is_in_the_repo():
    schema = Path(__file__).parents[2] / "harness" / "schemas" / "shard.schema.json"
    assert json.loads(schema.read_text())["properties"]["schema_version"] == {"const": 1}
