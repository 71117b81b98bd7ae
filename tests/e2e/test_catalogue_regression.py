"""Regression: every (case, method) cell of the catalogue, each in its own isolated process.

One test per cell, so pytest-xdist spreads them (``nox -s regression`` runs
``pytest -n auto -m catalogue`` on this file). A cell fails when its observed outcome (and
kind, where the case names one) contradicts the case's ``expect``, and the failure names the
cell and both outcomes; a passing cell must also carry its costs. ``skipped`` (a missing
precondition such as CUDA) and ``unsupported`` (no such start method here) cells are reported
as pytest skips, never as passes.

Cells run through :func:`harness.run.records.run_one`, exactly as ``harness run`` runs them:
forked from one warm template per test process where that is available (Linux), else a fresh
interpreter per cell.
"""

from __future__ import annotations

import pytest

from harness._options import DEFAULT_TIMEOUT_S
from harness.catalogue.discover import discover
from harness.classify.outcomes import IN_PROCESS, METHODS
from harness.run.plan import CellSpec, plan, resolve_isolation
from harness.run.records import run_one
from harness.run.warm import Template

pytestmark = pytest.mark.catalogue

SPECS = plan(discover().cases, METHODS, DEFAULT_TIMEOUT_S)
RUNNER = "pytest-regression"


@pytest.fixture(scope="module")
def template():
    """A warm template for this test process (``None`` where only fresh interpreters exist)."""
    if resolve_isolation("auto") != "warm":
        yield None
        return
    tpl = Template().start()
    try:
        yield tpl
    finally:
        tpl.close()


def _outcome(outcome: str, kind: str | None) -> str:
    return f"{outcome}/{kind}" if kind else outcome


@pytest.mark.parametrize("spec", SPECS, ids=[f"{s.case.id}[{s.method}]" for s in SPECS])
def test_cell_matches_expectation(spec: CellSpec, template) -> None:
    rec = run_one(spec, RUNNER, template=template)
    cell = f"{spec.case.id} [{spec.method}] ({spec.case.path})"
    if rec["outcome"] in ("skipped", "unsupported"):
        pytest.skip(f"{cell}: {rec['outcome']}: {rec['message']}")
    expected = _outcome(rec["expected"], rec["expected_kind"])
    observed = _outcome(rec["outcome"], rec["kind"])
    assert rec["matches"], (
        f"{cell}: expected {expected}, observed {observed}: {rec['root_cause'] or rec['message']}"
        + (f"\n--- stderr tail ---\n{rec['stderr_tail'][-1500:]}" if rec.get("stderr_tail") else ""))
    if rec["outcome"] == "pass":
        missing = [k for k in ("first_batch_s", "duration_s", "parent_peak_rss_bytes") if not rec[k]]
        if spec.method != IN_PROCESS and not rec["worker_peak_rss_bytes"]:
            missing.append("worker_peak_rss_bytes")
        assert not missing, f"{cell}: passed without its costs: {', '.join(missing)} missing or zero"
