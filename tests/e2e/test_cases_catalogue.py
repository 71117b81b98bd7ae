"""The catalogue's contract: breadth, provenance, expectations and fixes (no cell is run here).

What each cell really does is checked by ``tests/e2e/test_catalogue_regression.py`` (marked
``catalogue``); these tests keep the metadata a report and a reader rely on complete.
"""

from __future__ import annotations

import json

from harness.catalogue.discover import discover
from harness.catalogue.literal import declared_stdin
from harness.classify.outcomes import METHODS

CATALOGUE = discover()
CASES = {c.id: c for c in CATALOGUE.cases}

# Every family of the issue and of the catalogue's source list, by the id cases use.
REQUIRED_FAMILIES = {
    "unpicklable-callables",
    "wrong-scope",
    "interactive-main",
    "missing-main-guard",
    "resources",
    "cuda-before-fork",
    "fork-after-threads",
    "memory-cost",
    "silent-wrong",
    "context-mixups",
    "loader-callables",
    "shm-fd-limits",
}

# The patterns the issue names one by one, and the case that reproduces each.
NAMED_PATTERNS = {
    "functools.partial of a local function": "transform-partial-local",
    "nested class": "transform-nested-class-local",
    "staticmethod on a local class": "transform-staticmethod-local-class",
    "interactive __main__ (REPL, notebook)": "interactive-stdin-def",
    "python - fed on stdin": "interactive-python-dash-pipe",
    "zip archive": "dataset-zip-archive",
    "sqlite connection": "dataset-sqlite-connection",
    "open file": "dataset-open-file",
    "lock": "dataset-lock",
    "generator": "dataset-generator",
    "module object": "dataset-module-object",
    "logger with a handler (bad)": "dataset-log-handler",
    "bare logging.Logger (good)": "dataset-logger",
    "torch.Generator": "dataset-torch-generator",
    "CUDA before fork": "cuda-init-before-fork",
    "fork after threads": "fork-lock-held-by-thread",
    "memory: many Python objects": "memory-object-list",
    "IterableDataset without sharding": "iterable-no-sharding",
    "RNG object on the dataset": "dataset-rng-object",
    "set_epoch with persistent workers": "set-epoch-persistent-workers",
    "worker-side mutation": "worker-mutation-invisible",
    "fork-context Value into a spawn loader": "value-fork-context-spawn-loader",
    "daemonic parent": "loader-in-daemonic-pool",
    "sampler index that does not unpickle": "sampler-index-unpicklable",
    "collate_fn": "collate-fn-lambda",
    "worker_init_fn": "worker-init-fn-local",
}


def test_catalogue_reads_cleanly():
    assert CATALOGUE.errors == []


def test_breadth_at_least_36_cases_in_10_families_covering_every_listed_family():
    families = {c.family for c in CATALOGUE.cases}
    assert len(CATALOGUE.cases) >= 36
    assert len(families) >= 10
    assert REQUIRED_FAMILIES <= families, sorted(REQUIRED_FAMILIES - families)
    for family in REQUIRED_FAMILIES:
        members = [c for c in CATALOGUE.cases if c.family == family]
        assert any(c.bad for c in members) or family == "memory-cost", f"{family} has no failing pattern"


def test_every_named_pattern_has_its_case():
    missing = {pattern: cid for pattern, cid in NAMED_PATTERNS.items() if cid not in CASES}
    assert not missing


def test_every_case_has_sources_and_all_four_expectations():
    for case in CATALOGUE.cases:
        assert set(case.expect) == set(METHODS), case.id
        assert case.sources, case.id
        for src in case.sources:
            assert src.startswith("https://"), f"{case.id}: source {src!r} is not an address"
        assert case.expect["in-process"] == "pass", f"{case.id}: the in-process control must pass"


def test_every_bad_case_names_a_fix_that_passes_under_every_method():
    for case in CATALOGUE.cases:
        if not case.bad:
            continue
        assert case.fix, f"{case.id} is bad but names no fix"
        fix = CASES[case.fix]
        assert set(fix.expect.values()) == {"pass"}, f"{case.id}: fix {fix.id} is not expected to pass everywhere"
        assert fix.fix is None, f"{fix.id} is a fix and names a fix itself"


def test_silent_failures_are_expected_in_at_least_three_cells():
    wrong = [(c.id, m) for c in CATALOGUE.cases for m, o in c.expect.items() if o == "wrong"]
    assert len(wrong) >= 3


def test_stdin_cases_are_script_cases_the_cell_runs_without_a_file():
    interactive = [c for c in CATALOGUE.cases if c.family == "interactive-main"]
    stdin = [c for c in interactive if not c.notebook]
    assert {declared_stdin(c.path) for c in stdin} == {"interactive", "pipe"}
    for case in interactive:
        assert case.script, case.id
    # the family's notebook cases run in a real kernel, from their file: no stdin mode
    notebooks = [c for c in interactive if c.notebook]
    assert {c.id for c in notebooks} == {"notebook-dataset-class", "notebook-import"}
    assert all(c.stdin is None for c in notebooks)
    assert declared_stdin(CASES["entry-no-main-guard"].path) is None


def test_list_json_fields_match_the_issue(cli):
    proc = cli("list", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert {c["id"] for c in listed} == set(CASES)
    for item in listed:
        assert isinstance(item["id"], str) and isinstance(item["family"], str) and isinstance(item["title"], str)
        assert set(item["expect"]) == set(METHODS)
        assert item["fix"] is None or item["fix"] in CASES
        assert isinstance(item["sources"], list) and item["sources"]
        assert isinstance(item["script"], bool)
    by_id = {c["id"]: c for c in listed}
    assert by_id["interactive-stdin-def"]["script"] is True
    assert by_id["transform-partial-local"]["fix"] == "transform-partial-toplevel"
