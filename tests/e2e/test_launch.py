"""Integration: real cells in real worker processes, under all four methods, plus hangs and crashes."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

from conftest import processes_with_env


def only_shard(out: Path) -> dict:
    (path,) = list(out.glob("*.json"))
    return json.loads(path.read_text())


def cells(shard: dict) -> dict[tuple[str, str], dict]:
    return {(r["case"], r["method"]): r for r in shard["results"]}


def test_seed_cases_under_all_four_methods(tmp_path, cli):
    mark = uuid.uuid4().hex
    proc = cli("run", "--cases", "transform-lambda", "entry-no-main-guard", "--out", str(tmp_path),
               env={"HARNESS_TEST_MARK": mark})
    assert proc.returncode == 0, proc.stderr
    got = cells(only_shard(tmp_path))
    assert len(got) == 8
    # Observed by hand on Linux / Python 3.11 / torch 2.13.0 (see the "Done when").
    for m in ("in-process", "fork"):
        assert got[("transform-lambda", m)]["outcome"] == "pass"
        assert got[("entry-no-main-guard", m)]["outcome"] == "pass"
    for m in ("spawn", "forkserver"):
        lam = got[("transform-lambda", m)]
        assert (lam["outcome"], lam["kind"]) == ("error", "pickle")
        assert "Can't pickle local object" in lam["root_cause"]
        guard = got[("entry-no-main-guard", m)]
        assert (guard["outcome"], guard["kind"]) == ("error", "bootstrap")
        assert "exited unexpectedly" in guard["message"]
        assert "bootstrapping phase" in guard["root_cause"]
    passing = [r for r in got.values() if r["outcome"] == "pass"]
    for r in passing:
        assert r["first_batch_s"] is not None and r["duration_s"] > 0
    assert all(r["matches"] for r in got.values())
    assert processes_with_env("HARNESS_TEST_MARK", mark) == []


def test_hang_is_killed_within_timeout_and_leaves_nothing(tmp_path, fixture_catalogue, cli):
    mark = uuid.uuid4().hex
    t0 = time.monotonic()
    proc = cli("run", "--catalogue", str(fixture_catalogue), "--cases", "fixture-hang",
               "--start-method", "in-process", "fork", "--timeout", "3", "--jobs", "2", "--out", str(tmp_path),
               env={"HARNESS_TEST_MARK": mark})
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr  # hang is what the fixture expects
    got = cells(only_shard(tmp_path))
    for m in ("in-process", "fork"):
        assert got[("fixture-hang", m)]["outcome"] == "hang"
        assert got[("fixture-hang", m)]["wall_s"] <= 3 + 5
    assert elapsed < 60
    assert processes_with_env("HARNESS_TEST_MARK", mark) == []


def test_segfaults_are_classified_and_the_run_goes_on(tmp_path, fixture_catalogue, cli):
    mark = uuid.uuid4().hex
    proc = cli("run", "--catalogue", str(fixture_catalogue), "--cases", "fixture-segfault", "fixture-good",
               "--start-method", "in-process", "fork", "--out", str(tmp_path), env={"HARNESS_TEST_MARK": mark})
    got = cells(only_shard(tmp_path))
    worker = got[("fixture-segfault", "fork")]
    assert (worker["outcome"], worker["kind"]) == ("error", "worker-died")
    assert "segmentation fault" in worker["root_cause"].lower()
    main = got[("fixture-segfault", "in-process")]
    assert main["outcome"] == "crash" and "SIGSEGV" in main["root_cause"]
    if sys.platform.startswith("linux"):
        # Neither can report; their reapers measure them (wait4's ru_maxrss: the template for
        # the warm cell, the cell for its forked worker), though no sample was taken.
        assert main["parent_peak_rss_bytes"] > 50 << 20, "a cell with torch imported"
        assert worker["workers_seen"] >= 1 and worker["worker_peak_rss_bytes"] > 50 << 20
    assert got[("fixture-good", "fork")]["outcome"] == "pass"
    assert got[("fixture-good", "in-process")]["outcome"] == "pass"
    # The fixture declares these outcomes, so nothing contradicts it and nothing is broken.
    assert proc.returncode == 0, proc.stderr
    assert not any(r["broken"] for r in got.values())
    assert processes_with_env("HARNESS_TEST_MARK", mark) == []
