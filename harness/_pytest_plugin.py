"""pytest plugin (entry point ``pytest11``): replay Windows/macOS/Python 3.14 start-up on Linux CI.

Two guards:

* ``--mp-start-method=spawn|forkserver`` forces the start method for the whole test session
  with ``multiprocessing.set_start_method(method, force=True)``, so every ``DataLoader``
  without an explicit ``multiprocessing_context`` starts its workers the way Windows and macOS
  (``spawn``) or Linux on Python 3.14 (``forkserver``) would (CPython docs, "Contexts and
  start methods").
* :func:`assert_spawn_safe` (also ``harness.assert_spawn_safe``) checks a loader or dataset in
  the test's own process, without starting workers, and fails with every path that a spawn
  or forkserver worker start could not pickle (see :mod:`harness._diagnose`).

pytest is imported only by the hooks, so :func:`assert_spawn_safe` works without it.
"""

from __future__ import annotations

import multiprocessing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pytest

    from harness._diagnose import Diagnosis

__all__ = ["assert_spawn_safe", "pytest_addoption", "pytest_configure"]

_CHOICES = ("fork", "spawn", "forkserver")


def assert_spawn_safe(loader_or_dataset: Any, method: str = "spawn") -> Diagnosis:
    """Fail unless every worker start of ``loader_or_dataset`` would pickle under ``method``.

    Checks what ``DataLoader`` sends each worker (dataset, ``collate_fn``, ``worker_init_fn``)
    with multiprocessing's ``ForkingPickler`` and torch's reducers, as a real spawn or
    forkserver start does, without starting any process.

    Args:
        loader_or_dataset: a ``DataLoader``, or a ``Dataset`` (checked as ``DataLoader(dataset)``).
        method: ``spawn``, ``forkserver``, or a platform alias that resolves to one of them
            (``windows``, ``macos``, ``linux-py3.14``).

    Returns:
        The :class:`harness._diagnose.Diagnosis` (its ``payload`` gives the per-worker size).

    Raises:
        AssertionError: something cannot be pickled; the message lists every problem path,
            its type, the pickler's message and the matching catalogue case and fix.
        ValueError: ``method`` is unknown or resolves to ``fork``.
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this function's source
    from harness._diagnose import diagnose, fix_description

    result = diagnose(loader_or_dataset, method=method)
    if result.safe:
        return result
    n = len(result.findings)
    lines = [f"{n} object{'s' if n != 1 else ''} cannot be sent to a {result.method} worker:"]
    for f in result.findings:
        p = f.problem
        line = f"  {p.path}: {p.type}: {p.message}"
        if f.case:
            line += f" [case {f.case}" + (f"; fix: {fix_description(f.fix)}]" if f.fix else "]")
        lines.append(line)
    raise AssertionError("\n".join(lines))


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
    import pytest

    method = config.getoption("--mp-start-method", default=None)
    if not method:
        return
    if method not in multiprocessing.get_all_start_methods():
        raise pytest.UsageError(f"--mp-start-method: {method!r} is not available on this platform")
    multiprocessing.set_start_method(method, force=True)
