"""The committed observations: ``reports/shards/`` and the ``reports/COMPATIBILITY.md`` made of them.

* ``COMPATIBILITY.md`` is exactly what ``harness report`` makes of the committed shards (it is
  generated, never edited by hand), and lists every case of the catalogue;
* the shards hold observed runs of at least four Python minors, 3.14 among them, and the two
  emulated platforms, so the ``linux-py>=3.14`` column is observed and macOS and Windows are
  emulated;
* re-derived with this classifier, no observed or emulated cell contradicts the case's own
  expectation (the catalogue's declared truth, not the classifier's), no error is of kind
  ``other``, and every ``pickle``, ``main-attribute`` and ``bootstrap`` root cause carries its
  decisive line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness._policy import python_of
from harness.catalogue.discover import discover
from harness.report.merge import load_shards, merge

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "reports" / "COMPATIBILITY.md"
SHARDS = ROOT / "reports" / "shards"

#: What each kind's decisive line says, in every Python's wording (the mechanism, not one text).
DECISIVE = {
    "pickle": re.compile(r"[Pp]ickl|Can't get local object"),  # 3.13 says "Can't get local object"
    "main-attribute": re.compile(r"Can't get attribute '[^']+' on <module '__(mp_)?main__'|"
                                 r"module '__(mp_)?main__' has no attribute '[^']+'"),
    "bootstrap": re.compile(r"An attempt has been made to start a new process before the\s+current process "
                            r"has finished its bootstrapping phase"),
}


@pytest.fixture(scope="module")
def matrix() -> dict:
    valid, rejected = load_shards(SHARDS)
    assert not rejected, rejected
    return merge(valid, rejected)


def test_report_is_exactly_what_the_committed_shards_make(tmp_path, cli):
    proc = cli("report", "--shards", str(SHARDS), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = (tmp_path / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert made == REPORT.read_text(encoding="utf-8"), (
        "reports/COMPATIBILITY.md differs from what 'harness report' makes of reports/shards/: "
        "regenerate it with 'harness report' and commit it")


def test_case_list_is_not_stale():
    text = REPORT.read_text(encoding="utf-8")
    section = text.split("\n## What you get by default\n", 1)[1].split("\n## ", 1)[0]
    in_report = [m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", section, flags=re.M)]
    assert len(in_report) == len(set(in_report)), "a case appears twice"
    catalogue = {case.id for case in discover().cases}
    assert set(in_report) == catalogue, (sorted(catalogue - set(in_report)), sorted(set(in_report) - catalogue))


def test_observed_pythons_and_emulated_platforms(matrix):
    observed = [r for r in matrix["runners"] if not r.get("emulates")]
    minors = {python_of(r["python"]) for r in observed}
    assert len(minors) >= 4 and (3, 14) in minors, minors
    assert all(r["complete"] for r in matrix["runners"])
    plats = {p["id"]: p for p in matrix["platforms"]}
    assert plats["linux-py>=3.14"]["observed_runners"]
    assert plats["linux-py<=3.13"]["observed_runners"]
    for name in ("macos", "windows"):
        assert not plats[name]["observed_runners"] and plats[name]["emulated_runners"], name
    provenance = {(c["platform"], c["provenance"]) for c in matrix["compatibility"]}
    assert {("linux-py>=3.14", "observed"), ("macos", "emulated"), ("windows", "emulated")} <= provenance
    # A prediction stands only where every emulated runner had to skip the case because its
    # library does not import there (torchvision beside the CPU-only torch of Python 3.11).
    emulated = {r["id"] for r in matrix["runners"] if r.get("emulates")}
    skipped_for_module = {
        rec["case"] for path in SHARDS.glob("*.json")
        for rec in json.loads(path.read_text(encoding="utf-8"))["results"]
        if rec["runner"] in emulated and rec["outcome"] == "skipped"
        and rec["message"].startswith("the case needs module ")}
    predicted = {c["case"] for c in matrix["compatibility"] if c["provenance"] == "predicted"}
    assert predicted <= skipped_for_module, sorted(predicted - skipped_for_module)


def test_no_cell_contradicts_its_case_and_every_root_cause_is_decisive(matrix):
    problems = []
    for rec in matrix["results"]:
        where = f"{rec['case']} [{rec['method']}] on {rec['runner']}"
        if rec.get("broken"):
            problems.append(f"{where}: broken case")
        elif not rec["matches"]:
            problems.append(f"{where}: expected {rec['expected']}/{rec.get('expected_kind')}, "
                            f"got {rec['outcome']}/{rec['kind']}: {rec['root_cause'][:200]}")
        if rec["outcome"] == "error" and rec["kind"] == "other":
            problems.append(f"{where}: kind other: {rec['root_cause'][:200]}")
        pattern = DECISIVE.get(rec["kind"] or "")
        if rec["outcome"] == "error" and pattern and not pattern.search(rec["root_cause"]):
            problems.append(f"{where}: {rec['kind']} root cause lacks its decisive line: {rec['root_cause'][:200]}")
    assert not problems, "\n".join(problems)


def test_every_committed_record_keeps_its_evidence():
    """Every cell that ran keeps what its process left behind. Only two kinds of record start no
    cell process: a start method the platform lacks, and a case whose ``module:NAME``
    precondition does not import (skipped, saying so)."""
    for path in sorted(SHARDS.glob("*.json")):
        shard = json.loads(path.read_text(encoding="utf-8"))
        for rec in shard["results"]:
            where = (path.name, rec["case"], rec["method"])
            assert "classifier" in rec, where
            if rec["outcome"] == "skipped" and rec["wall_s"] is None:
                assert rec["message"].startswith("the case needs module "), where
            elif rec["outcome"] != "unsupported":
                assert "evidence" in rec and rec["wall_s"] is not None, where


def test_the_page_opens_with_what_breaks_by_default_most_reported_first(matrix):
    """On the committed observations: every pattern that passes on Linux up to 3.13 and fails by
    default on Linux 3.14+, macOS or Windows, and no other, heads the page, before the full table."""
    from harness.report.page import render_html
    from harness.report.views import breaks_model, compat_model

    compat = compat_model(matrix)
    breaks = breaks_model(compat)
    ids = [p["id"] for p in compat["platforms"]]
    expected = set()
    for row in compat["rows"]:
        cells = dict(zip(ids, row["cells"], strict=True))
        base = cells.get("linux-py<=3.13")
        if base is not None and base["outcome"] != "pass":
            continue
        if any(c is not None and not c.get("broken") and c["outcome"] in ("error", "hang", "crash", "wrong")
               for pid, c in cells.items() if pid != "linux-py<=3.13"):
            expected.add(row["id"])
    assert {r["id"] for r in breaks["rows"]} == expected
    assert "collate-fn-lambda" in expected and "entry-no-main-guard" in expected
    reports = [len(r["meta"].get("sources") or ()) for r in breaks["rows"]]
    assert reports == sorted(reports, reverse=True)
    page = render_html(matrix)
    assert page.index('id="breaks"') < page.index('id="default"')
