"""Nox sessions for the DataLoader start-method harness.

Every session installs torch from ``HARNESS_TORCH`` (default ``torch==2.13.0``).
Set ``HARNESS_TORCH_INDEX_URL`` to take torch from another index, for example
PyTorch's CPU-only wheel index on Linux CI runners.

Sessions run on the interpreter nox itself runs on, so a CI job's Python
version is the one that ``actions/setup-python`` installed.
"""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "virtualenv"
nox.options.sessions = ["matrix"]
nox.options.reuse_existing_virtualenvs = True

TORCH = os.environ.get("HARNESS_TORCH", "torch==2.13.0")
TORCH_INDEX_URL = os.environ.get("HARNESS_TORCH_INDEX_URL", "")


def _install(session: nox.Session, *extras: str) -> None:
    """Install torch (pinned, optionally from its own index), then the project."""
    if TORCH_INDEX_URL:
        session.install(TORCH, "--index-url", TORCH_INDEX_URL)
    else:
        session.install(TORCH)
    spec = "." if not extras else f".[{','.join(extras)}]"
    session.install(spec)


@nox.session
def matrix(session: nox.Session) -> None:
    """Run the whole catalogue under every start method, then write the report."""
    _install(session, "plot")
    session.run("harness", "run", *session.posargs)
    session.run("harness", "report")


@nox.session
def run(session: nox.Session) -> None:
    """Run the catalogue and write this runner's shard to reports/shards/ (no report)."""
    _install(session)
    session.run("harness", "run", *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """Merge every shard in reports/shards/ into reports/ (Markdown, HTML, JSON, JUnit, PNG)."""
    _install(session, "plot")
    session.run("harness", "report", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Fast test suite (pytest with pytest-xdist); the full catalogue is the regression session."""
    _install(session, "test", "plot")
    session.run("pytest", "-n", "auto", "-m", "not catalogue", *session.posargs)


@nox.session
def regression(session: nox.Session) -> None:
    """Full catalogue through pytest-xdist: fails on any cell whose outcome contradicts expect."""
    _install(session, "test")
    session.run("pytest", "-n", "auto", "-m", "catalogue", "tests/test_catalogue_regression.py",
                *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, offline checks of the GitHub workflow (zizmor, check-jsonschema), and the schemas."""
    from pathlib import Path

    session.install("ruff", "zizmor", "check-jsonschema")
    session.run("ruff", "check", ".")
    session.run("zizmor", "--offline", "--min-severity", "medium", ".github/workflows/")
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                *sorted(str(p) for p in Path(".github/workflows").glob("*.yml")))
    session.run("check-jsonschema", "--check-metaschema", *sorted(str(p) for p in Path("harness/schemas").glob("*.json")))


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: catalogue wall time against its floor, and the diagnose walker's cost."""
    _install(session, "test")
    session.run("python", "-m", "benchmarks", *session.posargs)
