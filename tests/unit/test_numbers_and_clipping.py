"""The one check of numeric inputs (:mod:`harness._options`) against the published schema, and
the clipping of over-long shard text on read (:func:`harness.shard.format.read_shard`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness._options import ENVIRONMENT, bounds, env_number, parse_number
from harness.errors import ShardError, UsageError
from harness.shard.format import read_shard

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "harness/schemas/shard.schema.json").read_text(encoding="utf-8"))
RUNNER = SCHEMA["properties"]["runner"]["properties"]


def test_the_bounds_are_the_schema_bounds():
    assert bounds("timeout").maximum <= RUNNER["timeout_s"]["maximum"]
    assert bounds("timeout_scale").maximum == RUNNER["timeout_scale"]["maximum"]
    assert bounds("jobs").maximum == RUNNER["cpu_count"]["maximum"]
    assert bounds("workers").maximum == SCHEMA["$defs"]["result"]["properties"]["workers_seen"]["maximum"]


@pytest.mark.parametrize("kind", ["timeout", "timeout_scale", "jobs", "workers", "memory_gib"])
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "-1", "1e400", "1e308", "x", "1_0_", "0x10"])
def test_no_kind_accepts_a_non_finite_negative_or_huge_value(kind, text):
    with pytest.raises(UsageError) as err:
        parse_number(text, kind, "--it")
    assert str(err.value).startswith("--it: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", ["timeout", "timeout_scale", "jobs", "workers"])
def test_zero_means_nothing_where_it_is_refused(kind):
    with pytest.raises(UsageError):
        parse_number("0", kind, "--it")


def test_zero_lifts_the_memory_bound_and_the_largest_values_are_accepted():
    assert parse_number("0", "memory_gib", "m") == 0
    for kind in ("timeout", "timeout_scale", "jobs", "workers", "memory_gib"):
        top = bounds(kind).maximum
        assert parse_number(repr(top) if not bounds(kind).integer else str(int(top)), kind, "x") == top


def test_a_variable_error_names_the_variable_and_its_value():
    assert set(ENVIRONMENT) == {"HARNESS_TIMEOUT_SCALE", "HARNESS_DIAGNOSE_MEMORY_GIB"}
    assert env_number("HARNESS_TIMEOUT_SCALE", {}) is None
    assert env_number("HARNESS_TIMEOUT_SCALE", {"HARNESS_TIMEOUT_SCALE": " 2 "}) == 2.0
    with pytest.raises(UsageError, match=r"^HARNESS_TIMEOUT_SCALE='1e308': must be at most"):
        env_number("HARNESS_TIMEOUT_SCALE", {"HARNESS_TIMEOUT_SCALE": "1e308"})


def _shard() -> dict:
    found = sorted(p for p in (ROOT / "reports/shards").glob("*.json") if "-as-" not in p.name)
    if not found:
        pytest.skip("no committed shard")
    return json.loads(found[0].read_text(encoding="utf-8"))


def test_a_valid_shard_reads_back_unchanged(tmp_path):
    data = _shard()
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="ascii")
    notes: list[str] = []
    assert read_shard(path, notes) == data
    assert notes == []


def test_over_long_text_is_clipped_as_run_clips_it(tmp_path):
    data = _shard()
    data["results"][0]["root_cause"] = "r" * 30_000
    data["results"][0]["warnings"] = ["w" * 25_000] * 120
    case = data["results"][0]["case"]
    data["cases"][case]["why"] = "y" * 25_000
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="ascii")
    notes: list[str] = []
    shard = read_shard(path, notes)
    rec = shard["results"][0]
    assert rec["root_cause"].startswith("r" * 2000) and rec["root_cause"].endswith("[… 28000 characters cut]")
    assert len(rec["warnings"]) <= 100 and all(len(w) < 1000 for w in rec["warnings"])
    assert len(shard["cases"][case]["why"]) < 20_000
    assert len(notes) == 1 and str(path) in notes[0] and "results/0/root_cause" in notes[0]


def test_what_is_not_text_is_still_refused(tmp_path):
    data = _shard()
    data["results"][0]["message"] = 5
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="ascii")
    with pytest.raises(ShardError, match=r"s\.json: schema violation at results/0/message"):
        read_shard(path)
