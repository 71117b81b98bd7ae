"""End-to-end: nothing a run starts outlives the harness, SIGKILL of the harness included
(harness.run.containment, harness.child.watchdog)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import processes_with_env

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses os.fork and /proc")

CATALOGUE = TESTS / "data" / "containment"


def _marked(marker: Path) -> list[psutil.Process]:
    """Every live process of the run (its environment has CONTAIN_MARKER=marker)."""
    return processes_with_env("CONTAIN_MARKER", str(marker))


def _notes(marker: Path, role: str) -> list[Path]:
    return [p for p in marker.iterdir() if p.name.startswith(f"{role}-")]


def _wait_gone(marker: Path, timeout: float = 15.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    left = _marked(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _marked(marker)
    return left


@pytest.mark.parametrize("isolation", ["fresh", "warm"])
def test_sigkill_of_the_harness_leaves_no_process_and_no_work_folder(tmp_path, isolation, cli):
    marker = tmp_path / "marker"
    marker.mkdir()
    harness = cli.start("run", "--catalogue", str(CATALOGUE), "--out", str(tmp_path / "shards"), "--cases", "leaky",
                        "--start-method", "fork", "spawn", "--isolation", isolation, "--jobs", "2",
                        env={"CONTAIN_MARKER": str(marker)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        # Both cells have started their daemon and at least one worker each.
        while time.monotonic() < deadline and (len(_notes(marker, "daemon")) < 2 or len(_notes(marker, "worker")) < 2):
            assert harness.poll() is None, "the harness ended early"
            time.sleep(0.2)
        assert len(_notes(marker, "daemon")) == 2, "the cells did not start in time"
        time.sleep(0.5)
        assert len(_marked(marker)) >= 6  # 2 cells, 2 daemons, 2 detached children, workers
        workdirs = {Path(p.read_text()) for p in _notes(marker, "cell")}
        assert all(d.is_dir() for d in workdirs)
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        left = _wait_gone(marker)
        assert not left, [p.cmdline() for p in left]
        deadline = time.monotonic() + 15  # the watchdog removes the folders after its sweep
        while [d for d in workdirs if d.exists()] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [d for d in workdirs if d.exists()]
    finally:
        if harness.poll() is None:
            harness.kill()
        for proc in _marked(marker):
            proc.kill()


def test_a_daemon_started_by_a_passing_cell_ends_with_the_cell(tmp_path, cli):
    """Double-forked setsid daemons are adopted by the harness (a subreaper) and killed when
    their cell ends, while the harness still runs."""
    marker = tmp_path / "marker"
    marker.mkdir()
    harness = cli.start("run", "--catalogue", str(CATALOGUE), "--out", str(tmp_path / "shards"), "--cases",
                        "leaky-pass", "--start-method", "in-process", "fork", "spawn", "--isolation", "fresh",
                        "--jobs", "1", env={"CONTAIN_MARKER": str(marker)}, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    try:
        assert harness.wait(120) == 0
        assert len(_notes(marker, "daemon")) == 3
        assert not _wait_gone(marker, timeout=5)
    finally:
        if harness.poll() is None:
            harness.kill()
        for proc in _marked(marker):
            proc.kill()


def test_launch_cell_ends_adopted_daemons_before_it_returns(tmp_path, monkeypatch):
    """In the harness process itself: when launch_cell returns, the daemon its cell
    double-forked (re-parented to this subreaper) is already gone."""
    from harness.catalogue.discover import discover, select
    from harness.run.launch import launch_cell
    from harness.run.plan import plan

    marker = tmp_path / "marker"
    marker.mkdir()
    monkeypatch.setenv("CONTAIN_MARKER", str(marker))
    case = select(discover(CATALOGUE).cases, ["leaky-pass"])
    (spec,) = plan(case, ["fork"], 60.0)
    run = launch_cell(spec)
    assert run.observation.result["status"] == "returned"
    (daemon,) = _notes(marker, "daemon")
    assert not psutil.pid_exists(int(daemon.name.split("-")[1])) or \
        psutil.Process(int(daemon.name.split("-")[1])).status() == psutil.STATUS_ZOMBIE
    assert not _marked(marker)


def test_reap_orphans_kills_adopted_daemons_that_carry_the_token(tmp_path):
    from harness.run.containment import child_env, reap_orphans
    from harness.run.launch import _become_subreaper

    assert _become_subreaper()
    pidfile = tmp_path / "daemon.pid"
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    untagged = subprocess.Popen([sys.executable, "-c", code.replace("daemon.pid", "other.pid")])
    subprocess.run([sys.executable, "-c", code], env=child_env(), check=True)
    untagged.wait()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and (tmp_path / "other.pid").exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon = psutil.Process(int(pidfile.read_text()))
    other = psutil.Process(int((tmp_path / "other.pid").read_text()))
    try:
        assert daemon.ppid() == os.getpid() == other.ppid()  # adopted by this subreaper
        assert reap_orphans() == [daemon.pid]  # the one without the token is not ours to kill
        assert not daemon.is_running()
        assert other.is_running()
    finally:
        other.kill()
        other.wait(5)


def test_sigkill_of_reproduce_leaves_neither_the_script_nor_its_workers(tmp_path, cli):
    marker = tmp_path / "marker"
    marker.mkdir()
    script = tmp_path / "train.py"
    script.write_text(
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(CATALOGUE.parent)!r})\n"
        "from containment.leaky import Sleeper, _daemon, _note\n"
        "from torch.utils.data import DataLoader\n"
        "if __name__ == '__main__':\n"
        "    _note('cell')\n"
        "    _daemon()\n"
        "    for batch in DataLoader(Sleeper(4), batch_size=2, num_workers=2):\n"
        "        pass\n"
    )
    proc = cli.start("reproduce", str(script), "--start-method", "spawn", "--timeout", "300",
                     env={"CONTAIN_MARKER": str(marker)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (not _notes(marker, "daemon") or len(_notes(marker, "worker")) < 2):
            assert proc.poll() is None, "reproduce ended early"
            time.sleep(0.2)
        workdir = Path(_notes(marker, "cell")[0].read_text())
        assert len(_marked(marker)) >= 4 and workdir.is_dir()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        left = _wait_gone(marker)
        assert not left, [p.cmdline() for p in left]
        deadline = time.monotonic() + 15
        while workdir.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not workdir.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _marked(marker):
            p.kill()
