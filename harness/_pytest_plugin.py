"""pytest plugin (entry point ``pytest11``): replay Windows/macOS/Python 3.14 start-up on Linux CI.

Two guards:

* ``--start-method=spawn|forkserver`` (also spelled ``--mp-start-method``) forces the start
  method for the whole test session with ``multiprocessing.set_start_method(method,
  force=True)``, so every ``DataLoader``
  without an explicit ``multiprocessing_context`` starts its workers the way Windows and macOS
  (``spawn``) or Linux on Python 3.14 (``forkserver``) would (CPython docs, "Contexts and
  start methods"). A platform name applies that platform's whole profile
  (:data:`harness._policy.PROFILES`, the same ones ``harness run --profile`` and ``harness
  reproduce --start-method`` use): ``windows`` and ``macos`` force ``spawn`` and torch's
  ``file_system`` sharing strategy, in the test process and in every worker it starts, and
  ``macos`` makes ``TMPDIR`` as long as a macOS runner's; ``linux-py3.14`` forces
  ``forkserver``.
* :func:`assert_spawn_safe` (also ``harness.assert_spawn_safe``) checks a loader or dataset in
  the test's own process, without starting workers, and fails with every path that a spawn
  or forkserver worker start could not pickle, that a worker could not unpickle, or that
  could not come back in the first batch, each with where it is defined (``file:line``; see
  :mod:`harness.inspect.diagnose`).

* ``--check-loaders`` (``=error``, the default, or ``=warn``; or the ``check_loaders`` ini
  option): every ``DataLoader`` and ``Dataset`` the test session constructs, whatever its
  ``num_workers``, is checked once per construction site as a spawn or forkserver worker
  start would receive it, loaded in a clean checker process (:mod:`harness.guard`). A test
  that built an unsafe one fails; the session's summary lists every finding once.

pytest is imported only by the hooks, so :func:`assert_spawn_safe` works without it.
"""

from __future__ import annotations

import multiprocessing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pytest

    from harness._policy import Platform
    from harness.inspect.diagnose import Diagnosis
    from harness.run.plan import emulated_temp_dir

__all__ = ["assert_spawn_safe", "pytest_addoption", "pytest_configure", "pytest_unconfigure"]

_TEMP_DIR: emulated_temp_dir | None = None  # the emulated long TMPDIR of the session, closed at unconfigure


def assert_spawn_safe(loader_or_dataset: Any, method: str = "spawn") -> Diagnosis:
    """Fail unless every worker start of ``loader_or_dataset`` would make its round trip under ``method``.

    Checks what ``DataLoader`` sends each worker (dataset, ``collate_fn``, ``worker_init_fn``)
    with multiprocessing's ``ForkingPickler`` and torch's reducers, as a real spawn or
    forkserver start does, loads it back as the worker does, round-trips the first indices,
    and builds the first batch from the loaded copy and round-trips it back, without starting
    any process (:func:`harness.inspect.diagnose.diagnose`). The objects' own code (reducers,
    ``__getstate__``, ``__setstate__``, the sampler, and on the loaded copies
    ``worker_init_fn``, ``__getitem__``, ``collate_fn``) runs in this process: anything it
    raises, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included, is a problem
    reported like any other, and the walk is bounded (reference cycles and chains 100,000
    objects deep take seconds). Objects that pickle on this Python but not on a newer one
    (``itertools`` iterators on 3.14) do not fail the check: each is a ``UserWarning``.

    Args:
        loader_or_dataset: a ``DataLoader``, or a ``Dataset`` (checked as ``DataLoader(dataset)``).
        method: ``spawn``, ``forkserver``, or a platform alias that resolves to one of them
            (``windows``, ``macos``, ``linux-py3.14``).

    Returns:
        The :class:`harness.inspect.diagnose.Diagnosis` (its ``payload`` gives the per-worker size).

    Raises:
        AssertionError: something cannot make the trip; the message lists every problem path,
            its type, the pickler's message, the matching catalogue case and fix, and where
            the culprit is defined (``at path/to/file.py:12``; relative to the current
            directory when under it).
        ValueError: ``method`` is unknown or resolves to ``fork``.
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived while checking; a
            ``KeyboardInterrupt`` raised by the loader's own code is a problem instead.
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this function's source
    import warnings

    from harness.inspect.diagnose import diagnose
    from harness.inspect.hints import fix_description

    result = diagnose(loader_or_dataset, method=method)

    def describe(f: Any) -> str:
        p = f.problem
        line = f"{p.path}: {p.type}: {p.message}"
        if f.case:
            line += f" [case {f.case}" + (f"; fix: {fix_description(f.fix)}]" if f.fix else "]")
        return line + (f" at {f.location}" if f.location else "")

    for f in result.hazards:
        warnings.warn(f"breaks on Python {f.problem.breaks_on}: {describe(f)}", UserWarning, stacklevel=2)
    if result.safe:
        return result
    lines = [f"{result.what_fails(f'a {result.method} worker')}:", *(f"  {describe(f)}" for f in result.findings)]
    raise AssertionError("\n".join(lines))


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--start-method`` (and ``--mp-start-method``, its older spelling)."""
    group = parser.getgroup("harness", "DataLoader start-method harness")
    group.addoption(
        "--start-method",
        "--mp-start-method",
        dest="start_method",
        default=None,
        metavar="METHOD",
        help="force this multiprocessing start method for the whole test session "
        "(spawn: as on Windows and macOS; forkserver: as on Linux with Python 3.14; fork), or a "
        "platform's whole profile: windows, macos (spawn and torch's file_system sharing "
        "strategy), linux-py3.14 (forkserver), linux (fork); --mp-start-method is an older spelling",
    )
    group.addoption(
        "--check-loaders",
        dest="check_loaders",
        nargs="?",
        const="error",
        default=None,
        metavar="error|warn|off",
        help="check every DataLoader and Dataset the tests construct, whatever their num_workers, "
        "as a spawn worker start (forkserver with --start-method=linux-py3.14) would receive them: "
        "error (the default) fails the test that built an unsafe one, warn only reports; "
        "the ini option check_loaders sets the same",
    )
    group.addoption(
        "--check-loaders-timeout",
        dest="check_loaders_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds one loader's check may take in the checker process (default 60)",
    )
    parser.addini("check_loaders", "error, warn or off: the default of --check-loaders", default="off")


def pytest_configure(config: pytest.Config) -> None:
    """Apply ``--start-method`` before any test runs.

    Raises:
        pytest.UsageError: an unknown start method or platform, or a start method that does not
            exist on this platform (:func:`harness._options.resolve_start_method`).
    """
    import pytest

    from harness._options import resolve_start_method
    from harness._policy import PROFILES
    from harness.errors import UsageError
    from harness.guard import EXEMPT_MARKER

    config.addinivalue_line("markers", f"{EXEMPT_MARKER}(reason=None): pytest --check-loaders neither reports nor "
                            "fails what this test constructs (a test of a deliberately unsafe loader)")
    requested: str | None = config.getoption("start_method", default=None)
    method = None
    if requested:
        try:
            method = resolve_start_method(requested, available=True)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    _configure_guard(config, method, PROFILES.get(requested) if requested else None)
    if method is None:
        return
    multiprocessing.set_start_method(method, force=True)
    emulating = PROFILES.get(requested or "")
    if emulating is not None:
        _apply_profile(emulating)


def _guard_mode(config: pytest.Config) -> str:
    """``error``, ``warn`` or ``off``, from ``--check-loaders`` or the ``check_loaders`` ini option.

    ``--check-loaders PATH`` (a flag followed by a test path, which argparse takes for the
    option's value) is ``--check-loaders`` and ``PATH``: the path is given back to the
    positional arguments.

    Raises:
        pytest.UsageError: the ini option is not ``error``, ``warn`` or ``off``.
    """
    import pytest

    value = config.getoption("check_loaders", default=None)
    if value is not None and value not in ("error", "warn", "off"):
        import os

        from _pytest.config import Config

        if not os.path.exists(value.split("::")[0]):
            raise pytest.UsageError(f"--check-loaders: {value!r} is not one of error, warn, off")
        if config.args_source == Config.ArgsSource.ARGS:
            config.args.insert(0, value)
        else:
            config.args[:] = [value]
            config.args_source = Config.ArgsSource.ARGS
        value = "error"
    if value is not None:
        return str(value)
    raw = config.getini("check_loaders")
    ini = {True: "error", False: "off"}.get(raw, str(raw or "off").strip()) if isinstance(raw, bool) else str(raw or "off").strip()
    ini = {"true": "error", "false": "off"}.get(ini.lower(), ini)
    if ini not in ("error", "warn", "off"):
        raise pytest.UsageError(f"check_loaders: {ini!r} is not one of error, warn, off (ini option)")
    return ini


def _configure_guard(config: pytest.Config, method: str | None, emulating: Platform | None) -> None:
    """Register :class:`harness.guard.plugin.GuardPlugin` when ``--check-loaders`` (or the ini
    option) asks for it: checked as ``forkserver`` when the start method is, else ``spawn``.

    Raises:
        pytest.UsageError: the ini option is not ``error``, ``warn`` or ``off``, or the
            timeout is not a positive number.
    """
    import pytest

    mode = _guard_mode(config)
    if mode == "off":
        return
    timeout = config.getoption("check_loaders_timeout", default=None)
    if timeout is not None and not timeout > 0:
        raise pytest.UsageError(f"--check-loaders-timeout: {timeout!r} is not a positive number of seconds")
    from harness.guard.plugin import GuardPlugin
    from harness.inspect import sites

    sites.set_project_root(str(config.rootpath))
    plugin = GuardPlugin(config, mode, "forkserver" if method == "forkserver" else "spawn",
                         emulating.sharing_strategy if emulating is not None else None,
                         timeout if timeout is not None else 60.0)
    config.pluginmanager.register(plugin, "harness-check-loaders")
    plugin.start()


def _apply_profile(emulating: Platform) -> None:
    """Give this process, and every interpreter it starts, the profile's sharing strategy and
    temp-path length (workers run :mod:`harness.child.cellsite`'s start-up hook through ``PYTHONPATH``)."""
    import os

    global _TEMP_DIR
    from harness.run.plan import CELL_SITE_DIR, emulated_temp_dir

    os.environ["HARNESS_SHARING_STRATEGY"] = emulating.sharing_strategy
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(CELL_SITE_DIR), os.environ.get("PYTHONPATH", "")) if p)
    try:
        import torch.multiprocessing
    except ImportError:  # pragma: no cover - the harness depends on torch
        pass
    else:
        set_sharing_strategy: Any = torch.multiprocessing.set_sharing_strategy  # torch leaves it unannotated
        set_sharing_strategy(emulating.sharing_strategy)
    _TEMP_DIR = emulated_temp_dir(emulating)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the loader guard, restore ``TMPDIR`` and remove the emulated temp directory, if a profile made one."""
    global _TEMP_DIR
    plugin = config.pluginmanager.get_plugin("harness-check-loaders")
    if plugin is not None:
        from harness.inspect import sites

        plugin.stop()
        sites.set_project_root(None)
    if _TEMP_DIR is not None:
        _TEMP_DIR.close()
        _TEMP_DIR = None
