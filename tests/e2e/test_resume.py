"""Interrupting ``harness run`` and resuming it: a valid partial shard, no processes left, same result.

Each test starts the real command line in a subprocess, marked with an environment variable
that every process of the run inherits (cells, their workers, forkservers, resource trackers,
the template), and looks for marked processes once it has exited.
"""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import processes_with_env

from harness.shard.format import read_shard

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

SLOW = '''
"""Items arrive slowly, so the cell is still running when the run is interrupted."""

import time

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "slow",
    "family": "resume",
    "title": "slow items",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(0.5)
        return super().__getitem__(i)


def run(cell):
    cell.check(DataLoader(Slow(12), batch_size=2, num_workers=cell.num_workers), squares(12))
'''

QUICK = '''
"""A quick good case."""

from torch.utils.data import DataLoader

from harness.case import Squares, squares


CASE = {
    "id": "quick-%s",
    "family": "resume",
    "title": "quick",
    "why": "test fixture",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": ["tests"],
}


def run(cell):
    cell.check(DataLoader(Squares(8), batch_size=2, num_workers=cell.num_workers), squares(8))
'''


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory) -> Path:
    cat = tmp_path_factory.mktemp("resume") / "resumecases"
    cat.mkdir()
    (cat / "__init__.py").write_text('"""Resume test cases."""\n')
    (cat / "slow.py").write_text(textwrap.dedent(SLOW))
    for name in ("a", "b"):
        (cat / f"quick_{name}.py").write_text(textwrap.dedent(QUICK % name))
    return cat


def _args(catalogue: Path, out: Path, *extra: str) -> list[str]:
    """``harness run`` arguments: ``catalogue`` into ``out``, two jobs; its processes are found by
    ``HARNESS_TEST_MARK``."""
    return ["run", "--catalogue", str(catalogue), "--jobs", "2", "--out", str(out), *extra]


def _shard(out: Path) -> Path:
    (path,) = list(out.glob("*.json"))
    return path


def _wait_for_results(out: Path, proc: subprocess.Popen, n: int, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        paths = list(out.glob("*.json"))
        if paths:
            try:
                data = json.loads(paths[0].read_text())
            except (OSError, json.JSONDecodeError):
                data = None
            if data and len(data["results"]) >= n:
                return data
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} results after {timeout} s")


def _leftovers(mark: str, grace: float = 5.0) -> list:
    deadline = time.monotonic() + grace
    while True:
        left = processes_with_env("HARNESS_TEST_MARK", mark)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def _interrupt(cli, catalogue: Path, out: Path, sig: int) -> tuple[subprocess.Popen, dict, int, str, str]:
    """Start a run, send ``sig`` once two cells are in the shard.

    Returns:
        ``(process, partial shard, processes of the run alive at the signal besides the
        harness, marker, stderr)``.
    """
    mark = uuid.uuid4().hex
    proc = cli.start(*_args(catalogue, out), env={"HARNESS_TEST_MARK": mark})
    _wait_for_results(out, proc, 2)
    running = [p for p in processes_with_env("HARNESS_TEST_MARK", mark) if p.pid != proc.pid]
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc, read_shard(_shard(out)), len(running), mark, err


def _outcomes(shard: dict) -> dict[tuple[str, str], tuple[str, str | None]]:
    return {(r["case"], r["method"]): (r["outcome"], r["kind"]) for r in shard["results"]}


def test_sigterm_leaves_a_partial_shard_and_no_process_then_resume_finishes_it(catalogue, tmp_path, cli):
    out = tmp_path / "interrupted"
    proc, partial, running, mark, err = _interrupt(cli, catalogue, out, signal.SIGTERM)
    assert proc.returncode == 130, err
    assert "continue with --resume" in err
    assert partial["complete"] is False
    assert 2 <= len(partial["results"]) < 12
    assert running > 1  # the template and at least one cell were alive when the signal came
    assert _leftovers(mark) == []

    mark2 = uuid.uuid4().hex
    resumed = cli.start(*_args(catalogue, out, "--resume"), env={"HARNESS_TEST_MARK": mark2})
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    final = read_shard(_shard(out))
    assert final["complete"] is True
    assert len(final["results"]) == 12
    before = {(r["case"], r["method"]): r for r in partial["results"]}
    after = {(r["case"], r["method"]): r for r in final["results"]}
    for key, rec in before.items():
        assert after[key] == rec, key  # finished cells were kept, not run again
    assert final["runner"]["started_utc"] == partial["runner"]["started_utc"]
    assert final["runner"]["isolation"] == partial["runner"]["isolation"] == "warm"
    assert _leftovers(mark2) == []

    mark3 = uuid.uuid4().hex
    whole = cli.start(*_args(catalogue, tmp_path / "whole"), env={"HARNESS_TEST_MARK": mark3})
    _, err = whole.communicate(timeout=300)
    assert whole.returncode == 0, err
    assert _outcomes(read_shard(_shard(tmp_path / "whole"))) == _outcomes(final)
    assert set(_outcomes(final).values()) == {("pass", None)}


def test_ctrl_c_is_an_interrupt_too(catalogue, tmp_path, cli):
    proc, partial, _, mark, err = _interrupt(cli, catalogue, tmp_path, signal.SIGINT)
    assert proc.returncode == 130, err
    assert partial["complete"] is False and len(partial["results"]) < 12
    assert _leftovers(mark) == []


def test_resume_needs_a_shard_and_the_same_options(catalogue, tmp_path, cli):
    proc = cli.start(*_args(catalogue, tmp_path, "--resume", "--start-method", "in-process"))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert len(err.strip().splitlines()) == 1 and "--resume" in err and str(tmp_path) in err

    done = cli.start(*_args(catalogue, tmp_path, "--start-method", "in-process", "--cases", "quick-a"))
    assert done.wait(timeout=120) == 0
    again = cli.start(*_args(catalogue, tmp_path, "--resume", "--start-method", "in-process", "--isolation", "fresh"))
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2
    assert "isolation" in err and "--resume" in err


def test_even_a_killed_harness_leaves_no_cell_behind_when_warm(tmp_path, cli):
    # SIGKILL gives the harness no chance to clean up; the template sees its control socket
    # close and kills every cell's process group (workers, forkserver, resource tracker).
    mark = uuid.uuid4().hex
    proc = cli.start("run", "--catalogue", str(TESTS / "fixture_cases"), "--cases", "fixture-hang",
                     "--start-method", "fork", "spawn", "--timeout", "60", "--out", str(tmp_path),
                     env={"HARNESS_TEST_MARK": mark}, ci=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # harness, template, two cells and at least two workers
        if len(processes_with_env("HARNESS_TEST_MARK", mark)) >= 6:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        raise AssertionError("the cells never started")
    proc.kill()
    proc.wait()
    assert _leftovers(mark, grace=10) == []


def test_a_narrower_run_keeps_the_cells_it_does_not_run(tmp_path, cli):
    """Checking one case (docs/authoring.md) must not drop a runner's other cells."""
    fixtures = ("run", "--catalogue", str(TESTS / "fixture_cases"), "--out", str(tmp_path))
    first = cli(*fixtures, "--cases", "fixture-good", "--start-method", "in-process", "fork")
    assert first.returncode == 0, first.stderr
    (path,) = tmp_path.glob("*.json")
    before = json.loads(path.read_text())
    # Two of the case's four cells: not a complete shard.
    assert len(before["results"]) == 2 and not before["complete"]
    second = cli(*fixtures, "--cases", "fixture-good", "--start-method", "fork")
    assert second.returncode == 0, second.stderr
    assert "keeping 1 cell(s)" in second.stderr
    after = json.loads(path.read_text())
    assert sorted((r["case"], r["method"]) for r in after["results"]) == [("fixture-good", "fork"),
                                                                         ("fixture-good", "in-process")]
    assert not after["complete"]
    kept = next(r for r in after["results"] if r["method"] == "in-process")
    assert kept == next(r for r in before["results"] if r["method"] == "in-process")
