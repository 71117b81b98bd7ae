"""Expectations that differ by Python version or torch sharing strategy (``CASE["expect_when"]``).

The expected outcomes are the documented behaviour: itertools lost pickling support in Python
3.14 ("What's New in Python 3.14", itertools); macOS and Windows share tensors with the
``file_system`` strategy (torch/multiprocessing/__init__.py); 3.14's forkserver preloads
``__main__`` (gh-126631).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.catalogue.discover import discover


@pytest.fixture(scope="module")
def catalogue() -> dict:
    return discover().by_id()


def test_itertools_case_fails_only_from_python_314(catalogue):
    case = catalogue["dataset-itertools-cycle"]
    expect, kinds = case.expectation((3, 13), "file_descriptor")
    assert expect["spawn"] == "pass" and "spawn" not in kinds
    expect, kinds = case.expectation((3, 14), "file_descriptor")
    assert (expect["spawn"], kinds["spawn"]) == ("error", "pickle")
    assert (expect["forkserver"], kinds["forkserver"]) == ("error", "pickle")
    assert expect["fork"] == "pass"
    assert case.bad  # a case that only 3.14 breaks is still a bad case, with its fix
    assert catalogue[case.fix].expect == dict.fromkeys(("in-process", "fork", "spawn", "forkserver"), "pass")


def test_unguarded_thread_hangs_forkserver_only_from_python_314(catalogue):
    case = catalogue["entry-unguarded-thread"]
    assert case.expectation((3, 13), "file_descriptor")[0]["forkserver"] == "pass"
    assert case.expectation((3, 14), "file_descriptor")[0]["forkserver"] == "hang"
    assert case.expectation((3, 10), "file_descriptor")[0]["fork"] == "hang"


def test_strategy_dependent_cases(catalogue):
    gen = catalogue["dataset-torch-generator"]
    expect, kinds = gen.expectation((3, 12), "file_system")
    assert expect["spawn"] == "wrong" and "spawn" not in kinds
    expect, kinds = gen.expectation((3, 12), "file_descriptor")
    assert (expect["spawn"], kinds["spawn"]) == ("error", "worker-died")
    fds = catalogue["fd-limit-many-tensors"]
    assert fds.expectation((3, 11), "file_system")[0]["fork"] == "pass"
    assert fds.expectation((3, 11), "file_descriptor")[1]["fork"] == "fd-limit"


@pytest.mark.parametrize(("entry", "message"), [
    ('{"python": "3.14+", "expect": {"spawn": "error"}}', "['python']: '3.14+' must look like '>=3.14'"),
    ('{"expect": {"spawn": "error"}}', "needs a condition"),
    ('{"python": ">=3.14", "expected": {"spawn": "error"}}', "['expected']: unknown key"),
    ('{"python": ">=3.14", "expect": {"spawn": "broken"}}', "['expect']['spawn']: 'broken' is not one of"),
    ('{"sharing_strategy": "file-system", "expect": {"spawn": "error"}}', "['sharing_strategy']: 'file-system' is not one of"),
    ('{"python": ">=3.10", 1: "x", "zz": 2}', "[1]: unknown key"),
    ('{"python": ">=3.' + "9" * 5000 + '", "expect": {"spawn": "error"}}', "... must look like '>=3.14'"),
])
def test_a_malformed_expect_when_is_one_line_naming_the_file(tmp_path, entry, message):
    cat = tmp_path / "cat"
    cat.mkdir()
    path = cat / "bad.py"
    path.write_text(textwrap.dedent(f'''
        CASE = {{"id": "t-bad", "family": "t", "title": "t", "why": "w", "sources": ["https://example.org"],
                "expect": {{"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"}},
                "expect_when": [{entry}]}}
        def run(cell):
            pass
    '''), encoding="utf-8")
    found = discover(cat)
    assert found.cases == []
    (line,) = found.errors
    assert line.startswith(f"{Path(path)}: CASE['expect_when'][0]") and message in line and "\n" not in line
