"""pytest plugin (entry point ``pytest11``): replay Windows/macOS/Python 3.14 start-up on Linux CI.

``--mp-start-method=spawn|forkserver`` forces the start method for the whole test session with
``multiprocessing.set_start_method(method, force=True)``, so every ``DataLoader`` without an
explicit ``multiprocessing_context`` starts its workers the way Windows and macOS (``spawn``)
or Linux on Python 3.14 (``forkserver``) would (CPython docs, "Contexts and start methods").
"""

from __future__ import annotations

import multiprocessing

import pytest

__all__ = ["pytest_addoption", "pytest_configure"]

_CHOICES = ("fork", "spawn", "forkserver")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--mp-start-method``."""
    group = parser.getgroup("harness", "DataLoader start-method harness")
    group.addoption(
        "--mp-start-method",
        choices=_CHOICES,
        default=None,
        help="force this multiprocessing start method for the whole test session "
        "(spawn: as on Windows and macOS; forkserver: as on Linux with Python 3.14)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Apply ``--mp-start-method`` before any test runs.

    Raises:
        pytest.UsageError: the method does not exist on this platform.
    """
    method = config.getoption("--mp-start-method", default=None)
    if not method:
        return
    if method not in multiprocessing.get_all_start_methods():
        raise pytest.UsageError(f"--mp-start-method: {method!r} is not available on this platform")
    multiprocessing.set_start_method(method, force=True)
