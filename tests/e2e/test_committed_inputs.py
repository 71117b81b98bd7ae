"""The committed shards carry the input hash of every cell, so ``harness run --changed`` on a
fresh clone runs only what changed since the observation.

For the runners this interpreter is (its own shard, and its emulated macOS and Windows shards),
a real ``harness run --changed`` against a copy of the committed shards must find every cell
unchanged and run none. A change to a case, to the harness code that runs in a cell or to the
classifier then fails this test until the shards are observed again.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.shard.format import runner_info

SHARDS = Path(__file__).resolve().parents[2] / "reports" / "shards"
_PROFILES = [None, "macos", "windows"]


def _runner_id(profile):
    from harness._policy import PROFILES

    return runner_info(PROFILES[profile] if profile else None)["id"]


@pytest.mark.parametrize("profile", _PROFILES, ids=lambda p: p or "native")
def test_a_fresh_clone_reruns_nothing_with_changed(cli, tmp_path, profile):
    shard = SHARDS / f"{_runner_id(profile)}.json"
    if not shard.is_file():
        pytest.skip(f"no committed shard for this runner ({shard.name})")
    observed = json.loads(shard.read_text(encoding="utf-8"))["runner"]
    here = runner_info(None)
    if (observed["python"], observed["torch"]) != (here["python"], here["torch"]):
        # Python's patch release and the torch build are inputs: another one reruns every cell
        pytest.skip(f"observed with Python {observed['python']} and torch {observed['torch']}, "
                    f"not {here['python']} and {here['torch']}")
    out = tmp_path / "shards"
    out.mkdir()
    shutil.copy(shard, out / shard.name)
    args = ["run", "--changed", "--out", str(out), "--jobs", "1"] + (["--profile", profile] if profile else [])
    proc = cli(*args, timeout=600)
    said = re.search(r"--changed: (\d+) cell\(s\) unchanged since they were observed, kept; (\d+) to run", proc.stderr)
    assert said, proc.stderr[-2000:]
    assert int(said.group(2)) == 0, said.group(0)
