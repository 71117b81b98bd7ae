"""End-to-end: the "Use it in your project" recipes of the README and of docs/ci/index.md, run
as written on the sample downstream project (tests/data/downstream)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


ROOT = Path(__file__).parents[2]
SAMPLE = TESTS / "data" / "downstream"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def _section() -> str:
    """The README's "Use it in your project" section, then the docs page it points to."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Use it in your project\n")
    end = text.index("\n## ", start + 1)
    return text[start:end] + "\n" + (ROOT / "docs" / "ci" / "index.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(_section()) if kind == lang]


def _files() -> list[tuple[str, str]]:
    """``(path, content)`` of every code block that names its file on its first line."""
    out = []
    for lang in ("python", "toml"):
        for body in _blocks(lang):
            first, _, rest = body.partition("\n")
            if first.startswith("# ") and "." in first:
                out.append((first[2:].strip(), rest))
    return out


def test_the_recipes_show_the_sample_project_files():
    files = _files()
    assert {p for p, _ in files} >= {"pyproject.toml", "noxfile.py", "tests/test_loaders.py",
                                    "loader_cases/good_loader.py"}
    for path, content in files:
        actual = (SAMPLE / path).read_text(encoding="utf-8")
        if path.endswith(".py"):
            assert content.strip() == actual.strip(), path
        else:
            assert content.strip() in actual, path


@pytest.fixture
def project(tmp_path) -> Path:
    dest = tmp_path / "project"
    shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", ".nox", "reports"))
    return dest


def _commands() -> list[str]:
    lines = [line.strip() for body in _blocks("console") for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith(("#", "pip ", "python -m pip "))]


def test_the_documented_commands_work_on_the_sample_project(project):
    commands = _commands()
    assert commands == ["python -m pytest", "python -m pytest --start-method=windows",
                        "harness list", "nox -s harness"]
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
    env["HARNESS_REQUIREMENT"] = str(ROOT)  # the harness under test, installed into nox's venv
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    for command in commands:
        got = subprocess.run(command, shell=True, cwd=project, env=env, capture_output=True, text=True,
                             timeout=900)
        assert got.returncode == 0, f"{command}: {got.stdout[-2000:]}{got.stderr[-2000:]}"
        if command == "harness list":
            assert "mypkg-loader" in got.stdout and "mypkg-bad-loader" in got.stdout
    compat = (project / "reports" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "mypkg-bad-loader" in compat
    (shard,) = (project / "reports" / "shards").glob("*.json")
    assert '"complete": true' in shard.read_text()


def test_the_guard_fails_on_a_loader_that_spawn_cannot_start(project):
    (project / "tests" / "test_bad.py").write_text(
        "import harness\n\nfrom mypkg.data import make_bad_loader\n\n\n"
        "def test_bad_loader_is_spawn_safe():\n    harness.assert_spawn_safe(make_bad_loader())\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_bad.py"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 1
    assert "<lambda>" in got.stdout and "seed_worker" in got.stdout
