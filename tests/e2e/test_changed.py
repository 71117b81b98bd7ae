"""End-to-end: ``harness run --changed`` reruns exactly the cells whose inputs changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.catalogue.discover import discover
from harness.run.inputs import InputHasher
from harness.shard.format import runner_info

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


HOSTILE = TESTS / "data" / "hostile_cases"
ROOT = Path(__file__).parents[2]


@pytest.fixture
def catalogue(tmp_path) -> Path:
    dest = tmp_path / "quick_cases"
    dest.mkdir()
    for name in ("quick_a.py", "quick_b.py", "__init__.py"):
        shutil.copy(HOSTILE / name, dest / name)
    return dest


def _args(catalogue: Path, out: Path, *extra: str) -> list[str]:
    """``harness run`` arguments: two start methods of ``catalogue`` into ``out``."""
    return ["run", "--catalogue", str(catalogue), "--out", str(out), "--start-method", "in-process", "fork", *extra]


def _results(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return {(r["case"], r["method"]): r for r in json.loads(path.read_text())["results"]}


def test_changed_reruns_the_edited_case_and_the_cases_that_import_it(catalogue, tmp_path, cli):
    out = tmp_path / "shards"
    assert cli(*_args(catalogue, out)).returncode == 0
    first = _results(out)
    assert all(len(r["inputs"]) == 64 and r["observed_utc"] and not r.get("carried_over") for r in first.values())

    again = cli(*_args(catalogue, out, "--changed"))
    assert again.returncode == 0 and "4 cell(s) unchanged" in again.stderr and "0 to run" in again.stderr
    assert all(r["carried_over"] for r in _results(out).values())

    # quick_b imports quick_a: editing quick_b reruns its cells only, editing quick_a both cases'.
    (catalogue / "quick_b.py").write_text((catalogue / "quick_b.py").read_text() + "\n# edited\n")
    third = cli(*_args(catalogue, out, "--changed"))
    assert "2 cell(s) unchanged" in third.stderr and "2 to run" in third.stderr
    now = _results(out)
    assert [k for k, r in now.items() if not r.get("carried_over")] == [("hostile-quick-b", "in-process"),
                                                                        ("hostile-quick-b", "fork")]
    (catalogue / "quick_a.py").write_text((catalogue / "quick_a.py").read_text() + "\n# edited\n")
    fourth = cli(*_args(catalogue, out, "--changed"))
    assert "0 cell(s) unchanged" in fourth.stderr and "4 to run" in fourth.stderr
    # The merged shard equals a full run, cell for cell, in outcome and kind.
    assert {k: (r["outcome"], r["kind"]) for k, r in _results(out).items()} == \
        {k: (r["outcome"], r["kind"]) for k, r in first.items()}


def test_the_report_says_what_was_carried_over(catalogue, tmp_path, cli):
    out = tmp_path / "shards"
    assert cli(*_args(catalogue, out)).returncode == 0
    assert cli(*_args(catalogue, out, "--changed")).returncode == 0
    got = cli("report", "--shards", str(out), "--out", str(tmp_path / "r"))
    assert got.returncode == 0, got.stderr
    text = (tmp_path / "r" / "COMPATIBILITY.md").read_text()
    assert "Kept unchanged from earlier runs (`harness run --changed`): 4 cell(s) of" in text


def test_the_input_hash_follows_the_runner_and_the_cell():
    case = discover().by_id()["dataset-zip-archive"]
    base = runner_info()
    h = InputHasher(base).cell(case, "spawn", 2, 60.0)
    assert h == InputHasher(dict(base)).cell(case, "spawn", 2, 60.0)
    assert h != InputHasher({**base, "torch": "2.9.1"}).cell(case, "spawn", 2, 60.0)
    assert h != InputHasher(base).cell(case, "fork", 2, 60.0)
    assert h != InputHasher(base).cell(case, "spawn", 2, 120.0)
    # Its support module is one of its inputs.
    assert {p.name for p in InputHasher(base).case_files(case)} == {"dataset_zip_archive.py", "_archives.py"}
