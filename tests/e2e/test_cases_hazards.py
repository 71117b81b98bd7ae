"""Hazard warnings: a pass that emitted a warning carries its text in the record.

``fork-thread-running`` forks its DataLoader workers while a background thread runs. CPython
3.12 added ``DeprecationWarning: This process (pid=...) is multi-threaded, use of fork() may
lead to deadlocks in the child.`` (What's New in Python 3.12, "Deprecated"); 3.11 and older
fork silently. The cell passes either way, and the record must say which happened.
"""

from __future__ import annotations

import sys

import pytest

from harness.catalogue.discover import discover, select
from harness.run.plan import plan
from harness.run.records import run_one

FORK_WARNING = "is multi-threaded, use of fork() may lead to deadlocks in the child"


@pytest.mark.skipif(sys.platform == "win32", reason="fork does not exist on Windows")
def test_fork_with_a_running_thread_passes_and_records_the_fork_warning_where_python_emits_it():
    (spec,) = plan(select(discover().cases, ["fork-thread-running"]), ["fork"], 60)
    rec = run_one(spec, "pytest")
    assert rec["outcome"] == "pass", rec
    hazard = [w for w in rec["warnings"] if FORK_WARNING in w]
    if sys.version_info >= (3, 12):
        assert hazard and hazard[0].startswith("DeprecationWarning: This process"), rec["warnings"]
    else:
        assert hazard == [], rec["warnings"]
