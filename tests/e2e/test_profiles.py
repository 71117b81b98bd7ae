"""Platform profiles: macOS and Windows emulated on Linux (``harness run --profile``), short
cell temp paths, timeout scaling, and the profile in ``reproduce``.

Expected values come from the platforms' documented behaviour: Windows has only ``spawn``
(CPython docs, "Contexts and start methods"); macOS and Windows share tensors through
``file_system`` (``torch/multiprocessing/__init__.py``); AF_UNIX paths are limited to 104
bytes on macOS and 108 on Linux (``sun_path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness._policy import PROFILES, available_methods, platform_of, profile
from harness.run.plan import SHORT_TEMP_ROOT, cell_temp_root

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="emulation runs on Linux")


def records(out: Path) -> tuple[dict, dict[tuple[str, str], dict]]:
    (path,) = list(out.glob("*.json"))
    shard = json.loads(path.read_text(encoding="utf-8"))
    return shard, {(r["case"], r["method"]): r for r in shard["results"]}


def test_profiles_live_in_the_policy_table():
    assert set(PROFILES) == {"macos", "windows"}
    for name in PROFILES:
        assert profile(name) is platform_of(name, (3, 12))  # the same row as the platform column
        assert profile(name).sharing_strategy == "file_system"
    assert platform_of("linux", (3, 12)).sharing_strategy == "file_descriptor"
    assert available_methods(profile("windows")) == ["spawn"]
    assert profile("macos").temp_dir_chars == 49  # /var/folders/xx/<28 chars>/T/
    with pytest.raises(ValueError, match="unknown profile 'solaris'"):
        profile("solaris")


def test_cell_temp_root_stays_short_under_a_long_temp_dir():
    long = "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/"
    assert cell_temp_root(long) == SHORT_TEMP_ROOT
    assert cell_temp_root("/tmp") == "/tmp"


def test_why_short_roots_matter_forkserver_under_a_long_tmpdir_fails(tmp_path):
    """Without a short root, the forkserver's listener socket path is too long (the failure a
    macOS runner would show); the same start under a short TMPDIR works."""
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    code = textwrap.dedent("""
        import multiprocessing as mp
        if __name__ == "__main__":
            p = mp.get_context("forkserver").Process(target=print)
            p.start(); p.join(); print("ok", p.exitcode)
    """)
    script = tmp_path / "fs.py"
    script.write_text(code, encoding="utf-8")
    bad = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, TMPDIR=str(deep)))
    assert "AF_UNIX path too long" in bad.stderr
    good = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, TMPDIR=cell_temp_root(str(deep))))
    assert "ok 0" in good.stdout, good.stderr


def test_windows_profile_has_only_spawn_and_says_what_it_emulates(tmp_path, cli):
    proc = cli("run", "--profile", "windows", "--cases", "transform-lambda", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    shard, got = records(tmp_path)
    runner = shard["runner"]
    assert runner["os"] == "linux" and runner["emulates"] == "windows" and runner["id"].endswith("-as-windows")
    assert runner["start_methods"] == ["spawn"] and runner["default_method"] == "spawn"
    assert runner["profile"]["sharing_strategy"] == "file_system"
    assert got[("transform-lambda", "fork")]["outcome"] == "unsupported"
    assert got[("transform-lambda", "forkserver")]["outcome"] == "unsupported"
    assert (got[("transform-lambda", "spawn")]["outcome"], got[("transform-lambda", "spawn")]["kind"]) == ("error", "pickle")


def test_macos_profile_long_tmpdir_and_file_system_strategy(tmp_path, cli):
    """Under the macOS profile the run's TMPDIR is as long as a macOS runner's, yet forkserver
    cells start (short cell roots); the torch.Generator case gives what file_system sharing
    gives: every worker unpickles the same generator state (wrong), not a dead worker."""
    proc = cli("run", "--profile", "macos", "--cases", "transform-toplevel-def", "dataset-torch-generator",
               "--start-method", "forkserver", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shard, got = records(tmp_path)
    assert shard["runner"]["profile"]["temp_dir_chars"] == 49
    assert got[("transform-toplevel-def", "forkserver")]["outcome"] == "pass"
    gen = got[("dataset-torch-generator", "forkserver")]
    assert (gen["outcome"], gen["expected"], gen["matches"]) == ("wrong", "wrong", True)


def test_timeout_scale_multiplies_every_cell_timeout(tmp_path, cli):
    proc = cli("run", "--cases", "transform-toplevel-def", "--start-method", "in-process", "--out", str(tmp_path),
               env={"HARNESS_TIMEOUT_SCALE": "2.5"})
    assert proc.returncode == 0, proc.stderr
    shard, _ = records(tmp_path)
    assert shard["runner"]["timeout_scale"] == 2.5
    bad = cli("run", "--cases", "transform-toplevel-def", "--out", str(tmp_path), env={"HARNESS_TIMEOUT_SCALE": "fast"})
    assert bad.returncode == 2 and bad.stderr.strip() == "harness run: HARNESS_TIMEOUT_SCALE='fast': not a number"


def test_reproduce_as_windows_applies_the_profile(tmp_path, cli):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import torch.multiprocessing
        if torch.multiprocessing.get_sharing_strategy() != "file_system":
            raise SystemExit("sharing strategy is " + torch.multiprocessing.get_sharing_strategy())
    """), encoding="utf-8")

    def reproduce(method: str) -> dict:
        proc = cli("reproduce", str(script), "--start-method", method, "--json", timeout=120)
        return json.loads(proc.stdout)

    as_windows = reproduce("windows")
    assert (as_windows["method"], as_windows["outcome"]) == ("spawn", "pass")
    plain_spawn = reproduce("spawn")  # the start method alone is not the platform
    assert plain_spawn["outcome"] == "error" and "file_descriptor" in plain_spawn["root_cause"]
