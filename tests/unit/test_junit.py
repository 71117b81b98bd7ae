"""junit.xml: one testcase per case × method × runner; failures, errors and skips where they belong."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from _shards import linux_shard, windows_shard

from harness.report.junit import junit_xml
from harness.report.merge import merge


def _parse(matrix: dict) -> ET.Element:
    return ET.fromstring(junit_xml(matrix))


def test_one_testcase_per_cell_and_unsupported_skipped():
    linux = linux_shard()
    win = windows_shard(linux)
    matrix = merge([(Path("l.json"), linux), (Path("w.json"), win)])
    root = _parse(matrix)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [linux["runner"]["id"], win["runner"]["id"]]
    cases = root.findall(".//testcase")
    assert len(cases) == len(linux["results"]) + len(win["results"])
    names = {(s.get("name"), c.get("name")) for s in suites for c in s.findall("testcase")}
    assert len(names) == len(cases)  # unique per runner
    assert (win["runner"]["id"], "transform-lambda[fork]") in names
    assert root.get("failures") == "0" and root.get("errors") == "0"
    # Windows: fork and forkserver do not exist → skipped, never failed.
    win_suite = suites[1]
    skipped = [c.get("name") for c in win_suite.findall("testcase") if c.find("skipped") is not None]
    n_cases = len({r["case"] for r in win["results"]})
    assert len(skipped) == 2 * n_cases and win_suite.get("skipped") == str(2 * n_cases)
    assert all(n.endswith(("[fork]", "[forkserver]")) for n in skipped)
    # Expected errors pass: the lambda's pickle error under spawn is what the case predicts.
    lam = next(c for c in suites[0].findall("testcase") if c.get("name") == "transform-lambda[spawn]")
    assert all(lam.find(tag) is None for tag in ("failure", "error", "skipped"))
    props = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    assert props["os"] == "linux" and props["torch"] == linux["runner"]["torch"]


def test_mismatch_is_a_failure_broken_is_an_error_and_text_is_xml_safe():
    shard = linux_shard()
    mism = next(r for r in shard["results"] if r["case"] == "transform-lambda" and r["method"] == "spawn")
    mism.update(outcome="pass", kind=None, matches=False, root_cause="<tag> & \x1b[31mred\x00")
    for rec in shard["results"]:
        if rec["case"] == "transform-local-def":
            rec.update(broken=True, matches=False)
    root = _parse(merge([(Path("l.json"), shard)]))
    assert root.get("failures") == "1" and root.get("errors") == "4"
    fail = root.find(".//testcase[@name='transform-lambda[spawn]']/failure")
    assert fail.get("message").startswith("expected error/pickle, observed pass: <tag> & \\x1b[31mred\\x00")
    errors = root.findall(".//testcase/error")
    assert {e.get("type") for e in errors} == {"broken-case"}
    case = root.find(".//testcase[@name='transform-lambda[spawn]']")
    assert case.get("classname") == "unpicklable-callables.transform-lambda"
