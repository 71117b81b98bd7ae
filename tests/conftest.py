"""Shared fixtures: the test catalogue and helpers to find processes a run left behind."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

FIXTURE_CATALOGUE = Path(__file__).parent / "fixture_cases"


@pytest.fixture
def fixture_catalogue() -> Path:
    """Directory of the test-only catalogue package ``fixture_cases``."""
    return FIXTURE_CATALOGUE


def processes_with_env(var: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment has ``var=value`` (how tests find a run's leftovers).

    The harness's watchdog (:mod:`harness._watchdog`), which lives exactly as long as the
    process that started it (this test process, when a test runs cells in-process), is not
    a leftover.
    """
    found = []
    for proc in psutil.process_iter():
        try:
            if (proc.pid != os.getpid() and proc.environ().get(var) == value
                    and proc.status() != psutil.STATUS_ZOMBIE and "harness._watchdog" not in proc.cmdline()):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found
