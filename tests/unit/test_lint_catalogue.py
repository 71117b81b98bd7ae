"""``harness lint`` on the catalogue: every bad case whose cause is visible in its source is
flagged by its rule and named as itself, no good case is flagged, and the bad cases that are not
statically visible are exactly the ones listed here, each with why.

The expectations come from the catalogue's observations (each case's ``expect``, checked
against real cells by ``tests/e2e/test_catalogue_regression.py``), not from the lint.
"""

from __future__ import annotations

import pytest

from harness.catalogue.discover import discover
from harness.inspect.hints import catalogue_hints
from harness.lint.engine import lint_source
from harness.lint.rules import RULES
from harness.lint.sources import read_source

CASES = discover().cases
HINTS = catalogue_hints()

#: Bad cases no reading of their source can show, and why.
NOT_STATICALLY_VISIBLE = {
    "global-set-in-parent": "a module global set in the parent at run time: the source shows only an assignment",
    "loader-in-daemonic-pool": "a loader with workers inside a Pool task: which function a Pool runs is data",
    "sampler-index-unpicklable": "the indices a sampler yields are made at run time",
    "value-default-context-spawn-loader": "which context made a multiprocessing.Value is decided at run time",
    "value-fork-context-spawn-loader": "which context made a multiprocessing.Value is decided at run time",
    "cuda-init-before-fork": "whether CUDA was initialised before the fork is run-time state",
    "fork-lock-held-by-thread": "a lock held by another thread at fork time: timing",
    "interactive-python-dash-pipe": "the script runs from standard input, not from a file",
    "interactive-stdin-dataset-class": "the script runs from standard input, not from a file",
    "interactive-stdin-def": "the script runs from standard input, not from a file",
    "entry-unguarded-side-effect": "start-up work outside the guard is legal Python; it is wrong only because it runs again",
    "entry-unguarded-thread": "a thread started at import, then fork: timing",
    "fd-limit-many-tensors": "the number of open descriptors depends on the data and the limit",
    "dataset-rng-object": "silent wrong data: every worker draws the same numbers",
    "iterable-no-sharding": "silent wrong data: every worker yields the whole stream",
    "set-epoch-persistent-workers": "silent wrong data: the workers keep an old copy of the sampler's epoch",
    "worker-mutation-invisible": "silent wrong data: a worker's writes never reach the parent",
}
#: Cases read from standard input: linting their file is not what runs.
_STDIN = {c.id for c in CASES if c.stdin is not None}


@pytest.mark.parametrize("case", [c for c in CASES if c.bad and c.id not in NOT_STATICALLY_VISIBLE],
                         ids=lambda c: c.id)
def test_every_statically_visible_bad_case_is_flagged_as_itself(case):
    findings = lint_source(read_source(case.path), hints=HINTS)
    assert findings, f"{case.id}: nothing flagged"
    assert {f.case for f in findings} == {case.id}, [(f.rule, f.case, f.message) for f in findings]
    declared = {d["rule"] for d in case.matches["static"]}
    assert {f.rule for f in findings} <= declared


@pytest.mark.parametrize("case", [c for c in CASES if not c.bad and c.id not in _STDIN], ids=lambda c: c.id)
def test_no_good_case_is_flagged(case):
    findings = lint_source(read_source(case.path), hints=HINTS)
    assert findings == [], [(f.line, f.rule, f.message) for f in findings]


def test_the_invisible_list_is_exactly_the_bad_cases_without_static_patterns():
    bad_without = {c.id for c in CASES if c.bad and not c.matches.get("static")}
    assert bad_without == set(NOT_STATICALLY_VISIBLE)


def test_every_rule_is_backed_by_a_case():
    backing = {d["rule"] for c in CASES for d in c.matches.get("static", ())}
    assert backing == set(RULES)


def test_a_finding_quotes_the_committed_matrix():
    case = next(c for c in CASES if c.id == "collate-fn-lambda")
    (finding,) = lint_source(read_source(case.path), hints=HINTS)
    assert finding.fix == "collate-fn-toplevel"
    # from cases/breaks.json, which tests/unit/test_breaks.py ties to the committed shards
    assert "Windows (spawn: error/pickle, emulated)" in finding.breaks
    assert "Linux, Python 3.14+ (forkserver: error/pickle, observed)" in finding.breaks
