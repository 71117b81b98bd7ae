"""Nox sessions for the DataLoader start-method harness.

Every session installs torch from ``HARNESS_TORCH`` (default ``torch==2.13.0``).
Set ``HARNESS_TORCH_INDEX_URL`` to take torch from another index, for example
PyTorch's CPU-only wheel index on Linux CI runners.

``matrix``, ``run``, ``tests`` and ``regression`` are parametrized over every Python
that pyproject.toml's trove classifiers list (``nox -l`` shows ``tests-3.10`` ...
``tests-3.14``): ``nox -s tests`` runs each of them that is installed here, and
``nox -s tests-3.11`` or ``nox -s tests --force-python 3.11`` runs one.
``report``, ``lint`` and ``bench`` run on the interpreter nox itself runs on.

A missing interpreter (not installed, or a version-manager shim that does not run)
is skipped locally and is an error when the ``CI`` environment variable is set, so
CI names the one interpreter it installed with ``--force-python``. Interpreters are
never downloaded; ``--download-python auto`` on the command line allows it.
"""

from __future__ import annotations

import os

import nox

nox.needs_version = ">=2025.10.14"  # --download-python, python_versions() from classifiers

nox.options.default_venv_backend = "virtualenv"
nox.options.sessions = ["matrix"]
nox.options.reuse_existing_virtualenvs = True
# nox's own default, made explicit: skip a missing interpreter locally, fail on CI.
nox.options.error_on_missing_interpreters = "CI" in os.environ
nox.options.download_python = "never"

PYTHONS = nox.project.python_versions(nox.project.load_toml("pyproject.toml"))

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


@nox.session(python=PYTHONS)
def matrix(session: nox.Session) -> None:
    """Run the whole catalogue under every start method, then write the report."""
    _install(session, "plot")
    session.run("harness", "run", *session.posargs)
    session.run("harness", "report")


@nox.session(python=PYTHONS)
def run(session: nox.Session) -> None:
    """Run the catalogue and write this runner's shard to reports/shards/ (no report)."""
    _install(session)
    session.run("harness", "run", *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """Merge every shard in reports/shards/ into reports/ (Markdown, HTML, JSON, JUnit, PNG)."""
    _install(session, "plot")
    session.run("harness", "report", *session.posargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Fast test suite (pytest with pytest-xdist); the full catalogue is the regression session."""
    _install(session, "test", "plot")
    session.install("nox")  # tests/unit/test_workflow.py asks nox itself which sessions CI selects
    session.run("pytest", "-n", "auto", "-m", "not catalogue and not package", *session.posargs)


@nox.session(python=PYTHONS)
def regression(session: nox.Session) -> None:
    """Full catalogue through pytest-xdist: fails on any cell whose outcome contradicts expect;
    then every `harness lint --fix` rewrite, run under spawn and forkserver."""
    _install(session, "test")
    session.run("pytest", "-n", "auto", "-m", "catalogue", "tests/e2e/test_catalogue_regression.py",
                "tests/e2e/test_lint_fix_proof.py", *session.posargs)


@nox.session
def package(session: nox.Session) -> None:
    """Build the sdist and the wheel, check them (twine check --strict), then install the wheel
    into a fresh virtualenv and run the harness from a folder outside the checkout."""
    import shutil
    from pathlib import Path

    session.install("build", "twine", "pytest")
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(dist))
    session.run("twine", "check", "--strict", *sorted(str(p) for p in dist.iterdir()))
    # --noconftest: tests/conftest.py imports the checkout's harness; this test must not
    session.run("pytest", "--noconftest", "-p", "no:cacheprovider", "-m", "package", "tests/package",
                *session.posargs, env={"HARNESS_DIST": str(dist), "HARNESS_TORCH": TORCH,
                                      "HARNESS_TORCH_INDEX_URL": TORCH_INDEX_URL})


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ with ``mkdocs build --strict``: a broken link, a
    missing page or a footnote without its reference fails. The reference and catalogue pages
    are generated from the parser, the schemas, the catalogue and the committed shards
    (docs/gen_pages.py). No torch is needed."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs,
                env={"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy (strict on harness/, configured in pyproject.toml), offline checks of the
    GitHub workflow (zizmor, check-jsonschema), and the schemas."""
    from pathlib import Path

    _install(session, "lint", "test", "plot")  # mypy follows the harness's imports: torch, pytest, ...
    session.install("zizmor", "check-jsonschema")
    session.run("ruff", "check", ".")
    session.run("mypy")
    session.run("zizmor", "--offline", "--min-severity", "medium", ".github/workflows/", "action.yml")
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                *sorted(str(p) for p in Path(".github/workflows").glob("*.yml")))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml")
    session.run("check-jsonschema", "--check-metaschema", *sorted(str(p) for p in Path("harness/schemas").glob("*.json")))


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: catalogue wall time against its floor, the diagnose walker's cost, the pytest
    guard's cost, and harness lint against TorchFix on the installed torch package."""
    _install(session, "test")
    session.install("torchfix")
    session.run("python", "-m", "benchmarks", *session.posargs)
