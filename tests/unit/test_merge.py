"""``harness report`` over good and bad shards: rejection lines, exit codes, merged runners."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import referencing
from _shards import linux_shard, windows_shard, write

from harness.report.merge import load_shards

SCHEMAS = Path(__file__).resolve().parents[2] / "harness" / "schemas"
SCRIPT = "<script>alert('x')</script> | a pipe"


def _matrix_validator() -> jsonschema.Draft202012Validator:
    shard = json.loads((SCHEMAS / "shard.schema.json").read_text(encoding="utf-8"))
    matrix = json.loads((SCHEMAS / "matrix.schema.json").read_text(encoding="utf-8"))
    registry = referencing.Registry().with_resource(shard["$id"], referencing.Resource.from_contents(shard))
    return jsonschema.Draft202012Validator(matrix, registry=registry)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, cli) -> dict:
    """The real Linux shard, a Windows shard derived from it, and three bad files, reported once."""
    root = tmp_path_factory.mktemp("mixed")
    shards = root / "shards"
    linux = linux_shard()
    win = windows_shard(linux)
    for rec in win["results"]:
        if rec["case"] == "transform-lambda" and rec["method"] == "spawn":
            rec["root_cause"] = rec["message"] = SCRIPT
    write(shards / "linux.json", linux)
    write(shards / "windows.json", win)
    (shards / "truncated.json").write_text(json.dumps(linux)[:1000], encoding="utf-8")
    write(shards / "package.json", {"name": "left-pad", "version": "1.3.0"})
    future = windows_shard(linux)
    future["schema_version"] = 2
    write(shards / "future.json", future)
    out = root / "out"
    proc = cli("report", "--shards", str(shards), "--out", str(out), timeout=120)
    return {"proc": proc, "out": out, "shards": shards, "linux": linux, "windows": win,
            "matrix": json.loads((out / "matrix.json").read_text(encoding="utf-8"))}


def test_exit_2_and_each_bad_file_named_on_one_line(mixed):
    proc = mixed["proc"]
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "rejected" in ln]
    assert len(lines) == 3, proc.stderr
    by_file = {Path(ln.split("rejected ", 1)[1].split(":", 1)[0]).name: ln for ln in lines}
    assert set(by_file) == {"truncated.json", "package.json", "future.json"}
    assert "invalid or truncated JSON" in by_file["truncated.json"]
    assert "not a harness shard" in by_file["package.json"]
    assert "schema_version 2" in by_file["future.json"]


def test_matrix_has_both_runners_and_matches_its_schema(mixed):
    matrix = mixed["matrix"]
    assert [r["id"] for r in matrix["runners"]] == [mixed["linux"]["runner"]["id"], mixed["windows"]["runner"]["id"]]
    assert len(matrix["results"]) == len(mixed["linux"]["results"]) * 2
    assert len(matrix["rejected"]) == 3
    errors = list(_matrix_validator().iter_errors(matrix))
    assert errors == [], errors[0].message if errors else ""


def test_windows_observed_macos_predicted_and_a_py314_column(mixed):
    compat = mixed["matrix"]["compatibility"]
    cases = {r["case"] for r in mixed["linux"]["results"]}
    win_id = mixed["windows"]["runner"]["id"]
    linux_id = mixed["linux"]["runner"]["id"]
    cols = {}
    for c in compat:
        cols.setdefault(c["platform"], []).append(c)
    assert set(cols) == {"linux-py<=3.13", "linux-py>=3.14", "macos", "windows"}
    for platform, method, provenance, runner in (
        ("windows", "spawn", "observed", win_id),
        ("linux-py<=3.13", "fork", "observed", linux_id),
        # No Python 3.14 runner: forkserver predicted from the Linux runner (same OS first).
        ("linux-py>=3.14", "forkserver", "predicted", linux_id),
    ):
        assert {c["case"] for c in cols[platform]} == cases
        assert {(c["method"], c["provenance"], c["runner"]) for c in cols[platform]} == {(method, provenance, runner)}
    assert {(c["method"], c["provenance"]) for c in cols["macos"]} == {("spawn", "predicted")}
    # Real observations carried over: the lambda transform fails to pickle under Windows' spawn.
    lam = {c["platform"]: c for c in compat if c["case"] == "transform-lambda"}
    assert (lam["windows"]["outcome"], lam["windows"]["kind"]) == ("error", "pickle")
    assert lam["linux-py<=3.13"]["outcome"] == "pass"


def test_report_files_written_and_message_escaped(mixed):
    out = mixed["out"]
    for name in ("COMPATIBILITY.md", "matrix.html", "junit.xml", "matrix.json"):
        assert (out / name).stat().st_size > 0, name
    html = (out / "matrix.html").read_text(encoding="utf-8")
    assert "<script" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    md = (out / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "<script" not in md
    root = ET.parse(out / "junit.xml").getroot()
    assert int(root.get("tests")) == len(mixed["matrix"]["results"])
    for name in ("truncated.json", "package.json", "future.json"):
        assert name in md and name in html


def test_same_runner_id_with_different_content_is_rejected(tmp_path, cli):
    linux = linux_shard()
    write(tmp_path / "a.json", linux)
    write(tmp_path / "b.json", linux)  # the same shard twice (e.g. two artifact copies) is fine
    changed = linux_shard()
    changed["results"][0]["duration_s"] = 99.0
    write(tmp_path / "c.json", changed)
    valid, rejected = load_shards(tmp_path)
    assert [p.name for p, _ in valid] == ["a.json"]
    assert len(rejected) == 1 and rejected[0].startswith(str(tmp_path / "c.json"))
    assert "already supplied by a.json" in rejected[0]

    rc, _, err = cli.main("report", "--shards", str(tmp_path), "--out", str(tmp_path / "out"))
    assert rc == 2
    assert err.count("rejected") == 1 and "c.json" in err
    assert len(json.loads((tmp_path / "out" / "matrix.json").read_text())["runners"]) == 1


def test_exit_codes_clean_mismatch_and_nothing(tmp_path, cli):
    good = tmp_path / "good"
    write(good / "linux.json", linux_shard())
    assert cli.main("report", "--shards", str(good), "--out", str(tmp_path / "o1")).returncode == 0

    bad = tmp_path / "bad"
    shard = linux_shard()
    rec = next(r for r in shard["results"] if r["case"] == "transform-lambda" and r["method"] == "spawn")
    rec.update(outcome="pass", kind=None, matches=False)
    write(bad / "linux.json", shard)
    rc, out, _ = cli.main("report", "--shards", str(bad), "--out", str(tmp_path / "o2"))
    assert rc == 1
    assert "MISMATCH transform-lambda [spawn]" in out

    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, printed = cli.main("report", "--shards", str(empty), "--out", str(tmp_path / "o3"))
    assert rc == 2
    err = printed.strip().splitlines()
    assert len(err) == 1 and str(empty) in err[0]
    assert not (tmp_path / "o3").exists()
