"""``harness report`` over hostile shard directories: every bad file is rejected in one line
naming it, the valid shards are still merged, and no string breaks an output.

A. files that are not regular, too large, or too deep; B. lone surrogates; C. records the
schema alone let through, and non-finite numbers; D. Markdown and HTML markup in every field;
E. the report's own ``matrix.json`` in the shard directory.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _outputs import foreign_angle_brackets, foreign_html_tags, table_problems
from _shards import linux_shard, write

from harness.inspect.explain import observed_lines
from harness.report.merge import merge
from harness.shard import jsonfile as _jsonfile
from harness.shard.format import ShardError, read_shard

IMG = "<img src=x onerror=alert(1)>"


#: ``harness report`` in a child whose stdout and stderr refuse what UTF-8 cannot encode.
STRICT_UTF8 = {"PYTHONIOENCODING": "utf-8:strict"}


def _rejections(stderr: str) -> dict[str, str]:
    lines = [ln for ln in stderr.splitlines() if " rejected " in ln]
    return {ln.split("rejected ", 1)[1].split(":", 1)[0].rsplit("/", 1)[-1]: ln for ln in lines}


def _strict_json(path: Path):
    def refuse(name):
        raise AssertionError(f"{path} holds {name}")
    return json.loads(path.read_text(encoding="ascii"), parse_constant=refuse)


# A. Files that are not shards to read -------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs FIFOs and /dev/zero")
def test_devices_fifos_huge_and_deep_files_are_rejected_quickly(tmp_path, cli):
    shards = tmp_path / "shards"
    write(shards / "good.json", linux_shard())
    (shards / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(shards / "fifo.json")
    (shards / "fifo-link.json").symlink_to(shards / "fifo.json")
    (shards / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (shards / "deep-objects.json").write_text('{"a": ' * 100 + "1" + "}" * 100)
    with open(shards / "huge.json", "wb") as f:  # sparse: no disk used, nothing should read it
        f.truncate(_jsonfile.MAX_JSON_BYTES + 1)
    (shards / "folder.json").mkdir()
    (shards / "dangling.json").symlink_to(tmp_path / "nowhere")
    start = time.monotonic()
    proc = cli("report", "--shards", str(shards), "--out", str(tmp_path / "out"), env=STRICT_UTF8, timeout=120)
    assert time.monotonic() - start < 60
    err = proc.stderr
    assert proc.returncode == 2, err
    got = _rejections(err)
    assert set(got) == {"zero.json", "fifo.json", "fifo-link.json", "deep.json", "deep-objects.json",
                        "huge.json", "folder.json", "dangling.json"}, err
    assert "a character device, not a regular file" in got["zero.json"]
    assert "a FIFO, not a regular file" in got["fifo.json"] and "a FIFO" in got["fifo-link.json"]
    assert "nested too deeply" in got["deep.json"] and "nested too deeply" in got["deep-objects.json"]
    assert f"over the {_jsonfile.MAX_JSON_BYTES}-byte limit" in got["huge.json"]
    assert "a directory" in got["folder.json"] and "cannot read" in got["dangling.json"]
    matrix = _strict_json(tmp_path / "out" / "matrix.json")
    assert len(matrix["runners"]) == 1 and len(matrix["rejected"]) == 8


def test_the_size_limit_holds_for_what_is_read(tmp_path, monkeypatch):
    path = write(tmp_path / "linux.json", linux_shard())
    monkeypatch.setattr(_jsonfile, "MAX_JSON_BYTES", path.stat().st_size - 1)
    with pytest.raises(ShardError, match=f"over the {path.stat().st_size - 1}-byte limit"):
        read_shard(path)
    monkeypatch.setattr(_jsonfile, "MAX_JSON_BYTES", path.stat().st_size)
    assert read_shard(path)["runner"]["id"]


# C. Shards the schema alone let through --------------------------------------------------------

def _set_first(key, value):
    return lambda s: s["results"][0].update({key: value})


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda s: s["results"].append(copy.deepcopy(s["results"][0])),
         "results/32: a second record for case 'dataset-open-file-lazy' [in-process] (the first is results/0)"),
        (lambda s: s["results"][5].update(runner="someone-else"),
         "results/5: runner 'someone-else' is not this shard's runner"),
        (_set_first("duration_s", float("nan")), "not strict JSON: NaN is not a JSON number"),
        (_set_first("duration_s", float("inf")), "not strict JSON: Infinity is not a JSON number"),
        (_set_first("first_batch_s", float("-inf")), "not strict JSON: -Infinity is not a JSON number"),
        (lambda s: s.update(cases=[]), "schema violation at cases: [] is not of type 'object'"),
        (lambda s: s.update(cases={"x": "a string"}), "schema violation at cases/x"),
        (lambda s: next(iter(s["cases"].values())).pop("title"), "schema violation at cases/"),
        (lambda s: next(iter(s["cases"].values())).update(family=["a", "list"]), "schema violation at cases/"),
        (lambda s: s["runner"].update(python=f"3.11 {IMG}"), "schema violation at runner/python"),
        (lambda s: s["runner"].update(python="3.11.9\n| x |"), "schema violation at runner/python"),
        (_set_first("duration_s", -1.0), "schema violation at results/0/duration_s"),
        (_set_first("wall_s", "slow"), "schema violation at results/0/wall_s"),
        (_set_first("worker_peak_rss_bytes", 2**70), "schema violation at results/0/worker_peak_rss_bytes"),
        # over-long text is clipped on read, not rejected (tests/unit/test_numbers_and_clipping.py)
    ],
)
def test_shards_the_schema_alone_let_through_are_rejected(tmp_path, mutate, reason):
    shard = linux_shard()
    mutate(shard)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(shard), encoding="utf-8")  # json.dumps writes NaN and Infinity as such
    with pytest.raises(ShardError) as err:
        read_shard(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and reason in msg, msg
    assert "\n" not in msg and len(msg) < len(str(path)) + 400


@pytest.mark.parametrize("number", ["1e400", "-1e999", "1" * 5000])
def test_numbers_that_do_not_fit_are_rejected(tmp_path, number):
    text = json.dumps(linux_shard()).replace('"duration_s": 0.0135', f'"duration_s": {number}', 1)
    assert number in text
    path = tmp_path / "big.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ShardError, match="does not fit a float|invalid JSON number"):
        read_shard(path)


def test_cut_messages_of_the_run_side_are_accepted(tmp_path):
    shard = linux_shard()
    rec = shard["results"][0]
    rec["stderr_tail"] = "[… 123456 characters cut]\n" + "e" * 8000
    rec["message"] = rec["root_cause"] = "m" * 4000 + " [… 99999 characters cut]"
    assert read_shard(write(tmp_path / "cut.json", shard))["results"][0] == rec


def test_bad_shards_leave_the_good_ones_and_a_strict_matrix(tmp_path, cli):
    shards = tmp_path / "shards"
    write(shards / "good.json", linux_shard())
    dup = linux_shard()
    dup["runner"]["id"] = "linux-dup"
    for rec in dup["results"]:
        rec["runner"] = "linux-dup"
    dup["results"].append(dict(dup["results"][3], outcome="pass", matches=False))
    write(shards / "dup.json", dup)
    nan = linux_shard()
    nan["runner"]["id"] = "linux-nan"
    for rec in nan["results"]:
        rec["runner"] = "linux-nan"
    nan["results"][0]["duration_s"] = float("nan")
    write(shards / "nan.json", nan)
    rc, _, err = cli.main("report", "--shards", str(shards), "--out", str(tmp_path / "out"))
    assert rc == 2
    got = _rejections(err)
    assert set(got) == {"dup.json", "nan.json"}, err
    matrix = _strict_json(tmp_path / "out" / "matrix.json")
    assert [r["id"] for r in matrix["runners"]] == [linux_shard()["runner"]["id"]]
    assert len(matrix["results"]) == len(linux_shard()["results"])


# B. Lone surrogates -------------------------------------------------------------------------

def test_lone_surrogates_survive_every_output(tmp_path, cli):
    shards = tmp_path / "shards"
    shard = linux_shard()
    rid = "linux-\udcfe"
    shard["runner"].update(id=rid, arch="x86_64\udcff")
    for rec in shard["results"]:
        rec["runner"] = rid
    rec = next(r for r in shard["results"] if r["case"] == "transform-lambda" and r["method"] == "spawn")
    old_case = rec["case"]
    for r in shard["results"]:
        if r["case"] == old_case:
            r["case"] = "transform-\udcfe"
    shard["cases"]["transform-\udcfe"] = dict(shard["cases"].pop(old_case), title="t\udcfe", why="w\udcfe")
    rec.update(outcome="pass", kind=None, matches=False, message="cannot open 'f\udcfe.bin'",
               root_cause="FileNotFoundError: 'f\udcfe.bin'", stderr_tail="tail \udcfe")
    write(shards / "linux.json", shard)  # json.dumps escapes: "\udcfe"
    try:
        with open(os.path.join(os.fsencode(shards), b"bad\xfe.json"), "w") as f:
            f.write("{not json")
        named = True
    except OSError:  # a file system that wants UTF-8 names
        named = False
    summary = tmp_path / "summary.md"
    proc = cli("report", "--shards", str(shards), "--out", str(tmp_path / "out"), "--summary", str(summary),
               env=STRICT_UTF8, timeout=120)
    out, err = proc.stdout, proc.stderr  # decoded strictly: no surrogate got through
    assert proc.returncode == (2 if named else 1), err
    assert "MISMATCH transform-\\udcfe [spawn] on linux-\\udcfe" in out
    if named:
        assert "rejected " in err and "bad\\udcfe.json" in err
    report = tmp_path / "out"
    matrix = _strict_json(report / "matrix.json")
    assert "\\udcfe" in (report / "matrix.json").read_text(encoding="ascii")
    assert [r for r in matrix["results"] if r["case"] == "transform-\udcfe" and r["method"] == "spawn"] == [rec]
    assert matrix["runners"][0]["id"] == rid
    if named:
        assert "bad\udcfe.json" in matrix["rejected"][0]
    for name in ("COMPATIBILITY.md", "matrix.html", "junit.xml"):
        text = (report / name).read_text(encoding="utf-8")
        assert "transform-\\udcfe" in text, name
        assert "linux-\\udcfe" in text, name
    assert "x86_64\\udcff" in (report / "junit.xml").read_text(encoding="utf-8")  # the arch is a property
    assert "transform-\\udcfe" in summary.read_text(encoding="utf-8")
    assert ET.parse(report / "junit.xml").getroot().get("failures") == "1"


# D. Markup in every field ---------------------------------------------------------------------

HOSTILE = f"a|b`c`\\{IMG}\n*x* _y_ [l](javascript:alert(1)) &amp; \x1b[31m"



def _hostile_shard() -> dict:
    shard = linux_shard()
    rid = f"runner {HOSTILE}"
    shard["runner"].update(id=rid, torch=f"2.13.0{HOSTILE}", arch=HOSTILE)
    renamed = {}
    for rec in shard["results"]:
        rec["runner"] = rid
        new = renamed.setdefault(rec["case"], f"{rec['case']} {HOSTILE}")
        rec.update(case=new, family=f"fam {HOSTILE}")
        if rec["outcome"] != "pass":
            rec.update(kind=f"kind {HOSTILE}", expected_kind=f"kind {HOSTILE}", message=HOSTILE, root_cause=HOSTILE)
        else:
            rec["warnings"] = [f"warn {HOSTILE}"]
    shard["results"][1].update(matches=False)
    shard["cases"] = {renamed[cid]: dict(meta, family=f"fam {HOSTILE}", title=f"title {HOSTILE}", why=f"why {HOSTILE}",
                                         fix=f"fix {HOSTILE}" if meta.get("fix") else None)
                      for cid, meta in shard["cases"].items() if cid in renamed}
    return shard


def test_markup_in_every_field_stays_text(tmp_path, cli):
    shards = tmp_path / "shards"
    write(shards / "hostile.json", _hostile_shard())
    summary = tmp_path / "summary.md"
    proc = cli("report", "--shards", str(shards), "--out", str(tmp_path / "out"), "--summary", str(summary),
               env=STRICT_UTF8, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in out and "MISMATCH" in out and "\\x1b[31m" in out
    for path in (tmp_path / "out" / "COMPATIBILITY.md", summary):
        md = path.read_text(encoding="utf-8")
        assert table_problems(md) == [], path
        assert foreign_angle_brackets(md) == [], path
        assert "\x1b" not in md and "\\[l\\](javascript" in md
        markdown_lines = [ln for ln in md.splitlines() if not ln.startswith("<summary>")]  # HTML, not Markdown
        assert not any(re.search(r"(?<!\\)\]\(javascript", ln) for ln in markdown_lines)  # its ] is escaped
        summaries = [i for i, ln in enumerate(md.splitlines()) if ln.startswith("<summary>")]
        assert all(md.splitlines()[i].endswith("</summary>") for i in summaries)  # one line each
        assert "fix a\\|b\\`c\\`" in md or path == summary  # the Fix column, as escaped text
    html = (tmp_path / "out" / "matrix.html").read_text(encoding="utf-8")
    assert foreign_html_tags(html) == set()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'title="' in html and not re.search(r'title="[^"]*<', html)
    ET.parse(tmp_path / "out" / "junit.xml")


def test_explain_prints_a_report_s_text_as_one_safe_line():
    shard = linux_shard()
    rec = next(r for r in shard["results"] if r["outcome"] == "error")
    rec["root_cause"] = "first\x1b]0;title\x07\nsecond \udcfe \u202e"
    lines = observed_lines(rec["case"], merge([(Path("l.json"), shard)]))
    text = "\n".join(lines)
    text.encode("utf-8")
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert any("first\\x1b]0;title\\x07\\nsecond \\udcfe \\u202e" in line for line in lines)


# E. The report's own outputs in the shard directory ---------------------------------------------

def test_out_equal_to_shards_skips_its_own_matrix(tmp_path, cli):
    both = tmp_path / "reports"
    write(both / "linux.json", linux_shard())
    assert cli.main("report", "--shards", str(both), "--out", str(both)).returncode == 0
    rc, _, err = cli.main("report", "--shards", str(both), "--out", str(both))
    assert rc == 0
    assert "matrix.json: a report's matrix.json, not a shard; skipped" in err and "rejected" not in err
    matrix = _strict_json(both / "matrix.json")
    assert len(matrix["runners"]) == 1 and matrix["rejected"] == []


def test_a_copied_matrix_is_skipped_but_a_matrix_lookalike_is_rejected(tmp_path, cli):
    first = tmp_path / "first"
    write(first / "linux.json", linux_shard())
    assert cli.main("report", "--shards", str(first), "--out", str(tmp_path / "out")).returncode == 0
    shards = tmp_path / "shards"
    write(shards / "linux.json", linux_shard())
    (shards / "old-report.json").write_bytes((tmp_path / "out" / "matrix.json").read_bytes())
    write(shards / "lookalike.json", {"schema_version": 1, "results": []})
    rc, _, err = cli.main("report", "--shards", str(shards), "--out", str(tmp_path / "out2"))
    assert rc == 2
    assert "old-report.json: a report's matrix.json, not a shard; skipped" in err
    assert set(_rejections(err)) == {"lookalike.json"}
