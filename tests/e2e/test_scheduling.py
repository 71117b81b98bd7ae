"""Scheduling of ``harness run``: longest cells first, idle cells give their core away, quiet CI output.

With ``--jobs 1`` cells finish in the order they start, so the plain per-cell lines on
stderr show the start order.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from harness.catalogue.discover import discover
from harness.run.plan import plan
from harness.run.schedule import DEFAULT_ESTIMATE_S, durations, estimate, longest_first

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


FIXTURES = TESTS / "fixture_cases"
REAL_SHARD = TESTS / "data" / "shard-linux-py3.11.json"
_LINE = re.compile(r"^\[\d+/\d+\] (\S+) \[([\w-]+)\]: ", re.M)


def _args(out: Path, *args: str) -> list[str]:
    """``harness run`` arguments: the fixture catalogue into ``out``."""
    return ["run", "--catalogue", str(FIXTURES), "--out", str(out), *args]


def _order(stderr: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _LINE.finditer(stderr)]


def test_estimates_come_from_the_previous_shard():
    shard = json.loads(REAL_SHARD.read_text())
    known = durations(shard)
    timed = [r for r in shard["results"] if r["wall_s"] is not None]
    assert len(known) == len(timed) > 0
    cases = {c.id: c for c in discover().cases}
    specs = plan([cases[i] for i in sorted({r["case"] for r in timed}) if i in cases],
                 ["in-process", "fork", "spawn", "forkserver"], 60)
    ordered = longest_first(specs, known)
    walls = [known[s.key] for s in ordered if s.key in known]
    assert walls == sorted(walls, reverse=True)
    assert walls[0] == max(r["wall_s"] for r in timed if r["case"] in cases)


def test_unknown_cells_take_their_method_median_then_defaults():
    cases = {c.id: c for c in discover(FIXTURES).cases}
    good, hang = cases["fixture-good"], cases["fixture-hang"]
    spawn, fork = plan([good], ["spawn", "fork"], 60)
    assert estimate(spawn, {}) == DEFAULT_ESTIMATE_S["spawn"]
    assert estimate(spawn, {("other", "spawn"): 2.0, ("x", "spawn"): 4.0, ("y", "fork"): 9.0}) == 3.0
    assert estimate(fork, {("y", "fork"): 9.0}) == 9.0
    (hang_fork,) = plan([hang], ["fork"], 7)
    assert estimate(hang_fork, {}) == 7  # a cell expected to hang takes its timeout


def test_second_run_starts_the_cells_that_took_longest_first(tmp_path, cli):
    first = cli(*_args(tmp_path, "--cases", "fixture-good", "--jobs", "1"))
    assert first.returncode == 0, first.stderr
    # Without a previous shard: spawn and forkserver (workers import torch) before fork,
    # fork before in-process.
    methods = [m for _, m in _order(first.stderr)]
    assert methods == ["spawn", "forkserver", "fork", "in-process"]
    (path,) = tmp_path.glob("*.json")
    walls = {(r["case"], r["method"]): r["wall_s"] for r in json.loads(path.read_text())["results"]}
    second = cli(*_args(tmp_path, "--cases", "fixture-good", "--jobs", "1"))
    assert second.returncode == 0, second.stderr
    assert _order(second.stderr) == sorted(walls, key=lambda k: -walls[k])


def test_an_idle_hanging_cell_gives_its_job_slot_to_the_next(tmp_path, cli):
    t0 = time.monotonic()
    proc = cli(*_args(tmp_path, "--cases", "fixture-hang", "fixture-good", "--start-method", "fork",
                      "--jobs", "1", "--timeout", "8"))
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    # The hang starts first (it is expected to take its whole timeout) but the good cell,
    # started once the hang went idle, finishes first; both fit in one timeout.
    assert _order(proc.stderr) == [("fixture-good", "fork"), ("fixture-hang", "fork")]
    (path,) = tmp_path.glob("*.json")
    got = {r["case"]: r for r in json.loads(path.read_text())["results"]}
    assert got["fixture-hang"]["outcome"] == "hang" and got["fixture-good"]["outcome"] == "pass"
    assert elapsed < 8 + 8  # one timeout plus start-up, not two cells back to back


def test_ci_output_is_quiet(tmp_path, cli):
    proc = cli(*_args(tmp_path, "--cases", "fixture-good", "--start-method", "in-process", "fork"), ci=True)
    assert proc.returncode == 0, proc.stderr
    assert _order(proc.stderr) == []  # no line per matching cell
    assert "\x1b[" not in proc.stderr + proc.stdout  # no terminal control codes
    assert len(proc.stdout.strip().splitlines()) == 1 and "2 cells" in proc.stdout


def test_a_terminal_gets_a_progress_bar_with_eta(tmp_path, cli):
    pty = __import__("pty")
    master, slave = pty.openpty()
    proc = cli.start(*_args(tmp_path, "--cases", "fixture-good", "--start-method", "in-process", "fork"),
                     env={"COLUMNS": "160"}, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO once the child side is closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    shown = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "2/2" in shown and "ETA" in shown
    assert "fixture-good [fork]" in shown or "fixture-good [in-process]" in shown  # markup-safe
    assert _order(shown) == []  # the bar replaces the per-cell lines
