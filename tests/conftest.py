"""Shared fixtures: the ``harness`` command line (:func:`cli`), the test catalogue, and helpers
to find processes a run left behind."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest

from harness._cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CATALOGUE = Path(__file__).parent / "fixture_cases"


class Outcome(NamedTuple):
    """What one in-process ``harness`` command did: its exit code and what it printed
    (``rc, out, err = cli.main(...)``)."""

    returncode: int
    stdout: str
    stderr: str


class Cli:
    """The ``harness`` command line, as every test calls it.

    * ``cli(*args)`` runs ``python -m harness ARGS`` in a new process and waits for it
      (:func:`subprocess.run`, output captured as text);
    * ``cli.start(*args)`` starts it and returns the :class:`subprocess.Popen`, for tests that
      interrupt or watch it;
    * ``cli.main(*args)`` runs :func:`harness._cli.main` in this process and returns an
      :class:`Outcome` with what it printed to ``sys.stdout`` and ``sys.stderr`` (what the
      processes it starts write to the inherited file descriptors is not in it: pytest's
      ``capfd`` sees that).

    A new process gets this checkout of the harness first on ``PYTHONPATH`` and ``CI`` removed
    from its environment (``ci=True`` sets it), plus ``env``; it runs in ``cwd`` (default: the
    current directory).
    """

    @staticmethod
    def _env(env: Mapping[str, str] | None, ci: bool) -> dict[str, str]:
        merged = dict(os.environ)
        merged.pop("CI", None)
        if ci:
            merged["CI"] = "true"
        merged["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        merged.update(env or {})
        return merged

    def __call__(self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                 ci: bool = False, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=self._env(env, ci),
                              capture_output=True, text=True, timeout=timeout)

    def start(self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
              ci: bool = False, **popen: Any) -> subprocess.Popen[str]:
        """Start ``python -m harness ARGS``; stdout and stderr are pipes unless ``popen`` says otherwise."""
        popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
        return subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=cwd, env=self._env(env, ci),
                                text=True, **popen)

    @staticmethod
    def main(*args: str) -> Outcome:
        """Run the command in this process and return its exit code and what it printed."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return Outcome(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def cli() -> Cli:
    """The ``harness`` command line (see :class:`Cli`): ``cli(...)``, ``cli.start(...)``,
    ``cli.main(...)``."""
    return Cli()


@pytest.fixture
def fixture_catalogue() -> Path:
    """Directory of the test-only catalogue package ``fixture_cases``."""
    return FIXTURE_CATALOGUE


def processes_with_env(var: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment has ``var=value`` (how tests find a run's leftovers).

    The harness's watchdog (:mod:`harness.child.watchdog`), which lives exactly as long as the
    process that started it (this test process, when a test runs cells in-process), is not
    a leftover.
    """
    found = []
    for proc in psutil.process_iter():
        try:
            if (proc.pid != os.getpid() and proc.environ().get(var) == value
                    and proc.status() != psutil.STATUS_ZOMBIE and "harness.child.watchdog" not in proc.cmdline()):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found
