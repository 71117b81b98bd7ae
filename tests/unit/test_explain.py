"""``harness explain CASE``: code, why, observed outcomes from a real report, and the fix diff."""

from __future__ import annotations

import json
from pathlib import Path

from harness.catalogue.discover import discover
from harness.inspect.explain import code_lines, fix_diff
from harness.report.merge import merge

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


DATA = TESTS / "data"


def test_bad_case_shows_code_why_sources_and_diff_to_its_fix(tmp_path, cli):
    proc = cli("explain", "transform-local-def", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    case = {c.id: c for c in discover().cases}["transform-local-def"]
    assert text.startswith(f"{case.id}: {case.title}\n")
    for section in ("Expected", "Why", "Sources", "Observed (latest report)", "Code (", "Fix"):
        assert f"\n{section}" in text, section
    assert "spawn       error/pickle" in text
    assert "'run.<locals>.add_one' cannot be looked up" in text.replace("\n  ", " ")
    for src in case.sources:
        assert src in text
    assert "    def add_one(x):" in text  # the case's own code
    assert "--- harness_cases/unpicklable_callables/transform_local_def.py" in text
    assert "+++ harness_cases/unpicklable_callables/transform_toplevel_def.py" in text
    assert "-    def add_one(x):" in text
    # No report in this working directory: said in place of the observations.
    assert "no report at reports/matrix.json" in text


def test_without_a_report_a_built_in_case_shows_the_packaged_default_view(tmp_path, cli):
    """From an installed package or a user's project there is no reports/matrix.json: the
    committed matrix's default view (harness_cases/breaks.json) is shown instead, every column."""
    packaged = json.loads((Path(__file__).resolve().parents[2] / "harness_cases" / "breaks.json").read_text())
    cells = packaged["cases"]["transform-local-def"]
    assert len(cells) == 4
    text = cli("explain", "transform-local-def", cwd=tmp_path).stdout
    observed = text.split("\nObserved (latest report)\n", 1)[1].split("\nCode (", 1)[0]
    assert "packaged with the harness" in observed
    assert "reports/shards" not in observed  # not in this folder: no hint that points at it
    for cell in cells:
        outcome = f"{cell['outcome']}/{cell['kind']}" if cell["kind"] else cell["outcome"]
        assert f"({cell['method']}): {outcome}, {cell['provenance']} on {cell['runner']}" in observed, cell


def test_observed_outcomes_come_from_the_report(tmp_path, cli):
    shard = json.loads((DATA / "shard-linux-py3.11.json").read_text())
    matrix = merge([(DATA / "shard-linux-py3.11.json", shard)])
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(matrix))
    proc = cli("explain", "transform-closure-captures-local", "--matrix", str(path))
    assert proc.returncode == 0, proc.stderr
    observed = proc.stdout.split("Observed (latest report)\n", 1)[1].split("\nCode (", 1)[0]
    runner = shard["runner"]["id"]
    assert f"  {runner}:" in observed
    recs = {r["method"]: r for r in shard["results"] if r["case"] == "transform-closure-captures-local"}
    for method, rec in recs.items():
        label = rec["outcome"] + (f"/{rec['kind']}" if rec["kind"] else "")
        assert f"    {method:<11} {label}" in observed
    assert recs["spawn"]["root_cause"] in observed
    assert "first batch" in observed  # costs of the passing cells


def test_a_case_the_report_has_not_seen_is_said_so(tmp_path, cli):
    shard = json.loads((DATA / "shard-linux-py3.11.json").read_text())
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(merge([(DATA / "shard-linux-py3.11.json", shard)])))
    seen = {r["case"] for r in shard["results"]}
    unseen = next(c.id for c in discover().cases if c.id not in seen)
    proc = cli("explain", unseen, "--matrix", str(path))
    assert proc.returncode == 0
    assert "has no result for this case" in proc.stdout
    # a local report of a few cases does not hide what the committed matrix saw
    packaged = json.loads((Path(__file__).resolve().parents[2] / "harness_cases" / "breaks.json").read_text())
    if unseen in packaged["cases"]:
        assert "packaged with the harness" in proc.stdout


def test_good_case_names_the_cases_it_fixes(cli):
    proc = cli("explain", "dataset-zip-lazy", "--matrix", "/nonexistent/matrix.json")
    assert proc.returncode == 0, proc.stderr
    assert "none needed: this is the fix for dataset-zip-archive" in proc.stdout


def test_unknown_case_and_unreadable_report_are_one_line_errors(tmp_path, cli):
    proc = cli("explain", "transform-lamda")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "unknown case 'transform-lamda'" in line and "transform-lambda" in line
    bad = tmp_path / "matrix.json"
    bad.write_text("{not json")
    proc = cli("explain", "transform-lambda", "--matrix", str(bad))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert str(bad) in line


def test_diff_leaves_out_the_metadata_literal():
    cases = {c.id: c for c in discover().cases}
    diff = fix_diff(cases["collate-fn-lambda"], cases["collate-fn-toplevel"])
    assert '"id"' not in diff and '"why"' not in diff
    assert "+def stack_doubled(items):" in diff
    folded = code_lines(cases["collate-fn-lambda"].path.read_text())
    assert sum(line.startswith("CASE = {...}") for line in folded) == 1
