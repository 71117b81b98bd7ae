"""The pytest side of ``--check-loaders``: which test built what, failing it, and the summary.

Registered by :mod:`harness._pytest_plugin` when the guard is on (``--check-loaders``,
``--check-loaders=warn``, or the ``check_loaders`` ini option). In a plain session, and in
each pytest-xdist worker, a :class:`harness.guard.session.Guard` watches the constructions;
the xdist controller runs no test and only merges what its workers send
(``workeroutput``), so the summary lists each finding once whatever ``-n`` is.

A construction made outside any test (at collection, in a module's body) is reported in the
summary and fails no test. In ``error`` mode a test whose loaders or datasets hold something
a worker cannot receive, load or send back fails, with the findings as its failure message
(JUnit XML carries it); in ``warn`` mode the test passes and the summary says it all.
Hazards never fail a test. ``GITHUB_ACTIONS=true`` adds one workflow command per finding to
the summary.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from harness.guard import EXEMPT_MARKER
from harness.guard.session import Guard
from harness.guard.summary import failure_text, github_lines, merge_records, record, summary_lines

__all__ = ["EXEMPT_MARKER", "GuardPlugin", "LoaderHazardWarning", "OUTSIDE_TESTS"]

class LoaderHazardWarning(UserWarning):
    """A loader or dataset a test built holds something a newer Python will not pickle, or its
    first batch raised only in a clean worker: a warning of the test that built it
    (``-W error::harness.guard.plugin.LoaderHazardWarning`` makes it fail)."""


#: The test name of constructions made outside any test.
OUTSIDE_TESTS = "(outside any test)"
_OUTPUT_KEY = "harness_check_loaders"


class GuardPlugin:
    """The hooks of the guard, for one session.

    Args:
        config: the session's config.
        mode: ``error`` or ``warn``.
        method: ``spawn`` or ``forkserver``.
        sharing_strategy: the checker's torch sharing strategy, or ``None``.
        timeout_s: seconds one check may take.
    """

    def __init__(self, config: pytest.Config, mode: str, method: str, sharing_strategy: str | None,
                 timeout_s: float) -> None:
        self.config = config
        self.mode = mode
        self.records: list[dict[str, Any]] = []
        self.guard: Guard | None = None
        self.controller = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
        if not self.controller:
            self.guard = Guard(method, sharing_strategy, timeout_s)

    def start(self) -> None:
        """Install the watch and start the checker in the background (its torch import then
        overlaps the collection's)."""
        if self.guard is not None:
            self.guard.checker.warm_up()  # before this process imports torch: the two imports overlap
            self.guard.install()

    def stop(self) -> None:
        if self.guard is not None:
            self.guard.close()

    # -- per test -----------------------------------------------------------------------------

    def _take(self) -> list[dict[str, Any]]:
        if self.guard is None:
            return []
        recs = [record(v) for v in self.guard.take()]
        self.records += recs
        return recs

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.guard is not None:
            self.guard.test = OUTSIDE_TESTS
            self._take()
            self.guard.test = item.nodeid

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if self.guard is None or (report.when == "setup" and report.passed):
            return
        if item.get_closest_marker(EXEMPT_MARKER) is not None:
            self.guard.take()  # checked, but neither reported nor failing: the test opted out
            return
        recs = self._take()
        if hasattr(report, "wasxfail"):
            for rec in recs:
                rec["expected_failure"] = True  # annotated as a warning, not an error
        for rec in recs:
            for f in rec["hazards"]:
                item.warn(LoaderHazardWarning(f"{rec['site_file']}:{rec['site_line']}: {f['path']} ({f['type']}) "
                                              f"pickles here but not on Python {f.get('breaks_on')} and later"))
            if rec.get("warning"):
                item.warn(LoaderHazardWarning(f"{rec['site_file']}:{rec['site_line']}: {rec['warning']}"))
        unsafe = [r for r in recs if r["findings"]]
        if not unsafe or self.mode != "error" or hasattr(report, "wasxfail") or report.skipped:
            return
        text = failure_text(unsafe)
        if report.failed:
            report.sections.append(("harness --check-loaders", text))
        else:
            report.outcome = "failed"
            report.longrepr = text

    # -- the session -----------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._finish_guard()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_OUTPUT_KEY] = json.dumps(self.records)
            return
        outside = [r for r in self.records if r["findings"] and r["tests"] == [OUTSIDE_TESTS]]
        if outside and self.mode == "error" and session.exitstatus == 0:
            session.exitstatus = 1  # no test to fail: the session does

    def _finish_guard(self) -> None:
        if self.guard is not None:
            self.guard.test = OUTSIDE_TESTS
            self._take()
            for error in self.guard.errors:
                self.records.append({"kind": "loader", "type": "", "site_file": None, "site_line": None,
                                     "num_workers": 0, "method": self.guard.method, "what": "", "findings": [],
                                     "hazards": [], "note": error, "warning": "", "tests": []})

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker ended: keep what it found."""
        data = getattr(node, "workeroutput", {}).get(_OUTPUT_KEY)
        if data:
            try:
                self.records += json.loads(data)
            except ValueError:  # pragma: no cover - a worker that died mid-write
                pass

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        merged = merge_records(self.records)
        terminalreporter.section("DataLoader worker start check (harness --check-loaders)")
        for line in summary_lines(merged, self.mode):
            terminalreporter.write_line(line)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in github_lines(merged, self.mode):
                terminalreporter.write_line(line)
