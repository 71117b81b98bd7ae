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


@pytest.mark.parametrize("shard", sorted(SHARDS.glob("*.json")), ids=lambda p: p.stem)
def test_every_committed_result_carries_the_hash_of_the_inputs_here(shard):
    """Every runner's shard, whatever Python it was observed on: ``--changed`` computes a cell's
    hash from the shard's runner and this tree (:class:`harness.run.inputs.InputHasher`), so on a
    fresh clone each committed result must carry exactly that hash, or it would be rerun."""
    from harness.catalogue.discover import discover
    from harness.classify.outcomes import METHODS
    from harness.run.inputs import InputHasher
    from harness.run.plan import plan

    data = json.loads(shard.read_text(encoding="utf-8"))
    runner = data["runner"]
    hasher = InputHasher(runner)
    specs = plan(discover().cases, METHODS, runner["timeout_s"],
                 timeout_scale=runner.get("timeout_scale", 1.0), profile=(runner.get("profile") or {}).get("id"))
    expected = {s.key: hasher.cell(s.case, s.method, s.num_workers, s.timeout_s) for s in specs}
    stale = sorted(f"{r['case']} [{r['method']}]" for r in data["results"]
                   if r.get("inputs") != expected.get((r["case"], r["method"])))
    assert len(data["results"]) == len(expected)
    assert stale == [], f"{len(stale)} of {len(data['results'])} results would rerun: {stale[:5]}"
