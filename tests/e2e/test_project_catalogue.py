"""End-to-end: a downstream project's own catalogue (``[tool.harness]``, ``--catalogue``), run
from the project's root as its maintainer would (tests/data/downstream)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


DOWNSTREAM = TESTS / "data" / "downstream"
ROOT = Path(__file__).parents[2]


@pytest.fixture
def project(tmp_path) -> Path:
    """A fresh copy of the sample downstream project (its own package, a [tool.harness] table
    and two case modules in a directory without __init__.py)."""
    dest = tmp_path / "project"
    shutil.copytree(DOWNSTREAM, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_list_reads_the_declared_catalogue(project, cli):
    got = cli("list", "--json", cwd=project)
    assert got.returncode == 0, got.stderr
    cases = json.loads(got.stdout)
    assert sorted(c["id"] for c in cases) == ["mypkg-bad-loader", "mypkg-loader"]
    assert {Path(c["path"]).parent for c in cases} == {(project / "loader_cases").resolve()}


@pytest.mark.parametrize("isolation", ["warm", "fresh"])
def test_run_observes_the_project_cases_under_every_method(project, isolation, cli):
    got = cli("run", "--isolation", isolation, "--out", "shards", cwd=project)
    assert got.returncode == 0, got.stderr
    (path,) = (project / "shards").glob("*.json")
    shard = json.loads(path.read_text())
    cells = {(r["case"], r["method"]): (r["outcome"], r["kind"]) for r in shard["results"]}
    assert len(cells) == 8 and all(r["matches"] for r in shard["results"])
    # The project's package imported in every cell and worker: the good loader passes under
    # spawn; the bad one fails only where the lambda is pickled.
    assert cells[("mypkg-loader", "spawn")] == ("pass", None)
    assert cells[("mypkg-bad-loader", "spawn")] == ("error", "pickle")
    assert cells[("mypkg-bad-loader", "fork")] == ("pass", None)
    assert shard["complete"] is True
    report = cli("report", "--shards", "shards", "--out", "report", cwd=project)
    assert report.returncode == 0, report.stderr
    assert "mypkg-bad-loader" in (project / "report" / "COMPATIBILITY.md").read_text()


def test_explain_reads_the_declared_catalogue(project, cli):
    got = cli("explain", "mypkg-bad-loader", "--matrix", "none.json", cwd=project)
    assert got.returncode == 0, got.stderr
    assert "make_bad_loader() with a lambda" in got.stdout
    assert "mypkg-loader" in got.stdout  # its fix, with the diff


def test_catalogue_option_overrides_the_table(project, cli):
    other = project / "more_cases"
    other.mkdir()
    shutil.copy(project / "loader_cases" / "good_loader.py", other / "again.py")
    (other / "again.py").write_text((other / "again.py").read_text().replace('"mypkg-loader"', '"mypkg-again"'))
    got = cli("list", "--json", "--catalogue", "more_cases", cwd=project)
    assert [c["id"] for c in json.loads(got.stdout)] == ["mypkg-again"]
    both = cli("list", "--json", "--catalogue", "more_cases", "--catalogue", "loader_cases", cwd=project)
    assert len(json.loads(both.stdout)) == 3


def test_an_id_in_two_catalogues_is_exit_2_naming_both_files(project, cli):
    other = project / "more_cases"
    other.mkdir()
    shutil.copy(project / "loader_cases" / "good_loader.py", other / "copy.py")
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text().replace(
        'catalogue = ["loader_cases"]', 'catalogue = ["loader_cases", "more_cases"]'))
    for command in (["list"], ["run", "--out", "shards"], ["explain", "mypkg-loader"]):
        got = cli(*command, cwd=project)
        assert got.returncode == 2, command
        (line,) = got.stderr.strip().splitlines()
        assert str(other / "copy.py") in line and str(project / "loader_cases" / "good_loader.py") in line
        assert "'mypkg-loader' already used" in line


@pytest.mark.parametrize(("table", "message"), [
    ('catalogue = "loader_cases"\nshards = "x"', "[tool.harness]: unknown key 'shards'"),
    ("catalogue = [1]", "'catalogue' must be a list of directory paths"),
    ('catalogue = ["loader_cases"', "invalid TOML"),
    ('catalogue = ["nowhere"]', "nowhere: catalogue directory does not exist"),
])
def test_a_bad_table_is_one_line_naming_the_file(project, table, message, cli):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('catalogue = ["loader_cases"]', table))
    got = cli("list", cwd=project)
    assert got.returncode == 2
    (line,) = got.stderr.strip().splitlines()
    assert message in line and ("pyproject.toml" in line or "nowhere" in line)


def test_a_directory_that_would_import_as_another_package_is_refused(project, cli):
    """``harness_cases`` (no __init__.py) would be imported as the built-in catalogue's package;
    ``cases``, the name many projects give their own, is free (the built-in is not ``cases``)."""
    (project / "loader_cases").rename(project / "cases")
    got = cli("list", "--catalogue", "cases", cwd=project)
    assert got.returncode == 0, got.stderr
    (project / "cases").rename(project / "harness_cases")
    got = cli("list", "--catalogue", "harness_cases", cwd=project)
    assert got.returncode == 2
    assert "would be imported as package 'harness_cases'" in got.stderr
    (project / "harness_cases").rename(project / "my-cases")
    got = cli("list", "--catalogue", "my-cases", cwd=project)
    assert got.returncode == 2 and "'my-cases' is not a Python identifier" in got.stderr


def test_report_names_a_declared_case_that_no_shard_has(project, cli):
    got = cli("run", "--cases", "mypkg-loader", "--start-method", "in-process", "--out", "shards", cwd=project)
    assert got.returncode == 0, got.stderr
    report = cli("report", "--shards", "shards", "--out", "report", cwd=project)
    assert report.returncode == 0, report.stderr
    assert "case 'mypkg-bad-loader' has no result in any shard" in report.stderr
