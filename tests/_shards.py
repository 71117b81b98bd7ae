"""Shard builders for the report tests.

``data/shard-linux-py3.11.json`` is a real shard: ``harness run --cases 'transform-*'
entry-no-main-guard dataset-open-file-lazy`` on a 2-core Linux x86_64 machine with CPython 3.11
and torch 2.13.0+cpu (only the checkout path in tracebacks was replaced). Other runners are
derived from it the way those platforms differ, per the policy table: a Windows runner has only
``spawn``, so its ``fork``/``forkserver`` cells are ``unsupported``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

DATA = Path(__file__).parent / "data"
LINUX_SHARD = DATA / "shard-linux-py3.11.json"


def linux_shard() -> dict:
    """A fresh copy of the real Linux shard."""
    return json.loads(LINUX_SHARD.read_text(encoding="utf-8"))


def derive(shard: dict, *, os_name: str, python: str, torch: str | None = None,
           methods: tuple[str, ...] = ("fork", "spawn", "forkserver"), default: str | None = None) -> dict:
    """A copy of ``shard`` as if run on another runner.

    Cells under a start method missing from ``methods`` become ``unsupported``, as
    ``harness.run.records.run_one`` records them; everything else keeps its observed values.
    """
    out = copy.deepcopy(shard)
    runner = out["runner"]
    torch = torch or runner["torch"]
    arch = "arm64" if os_name == "macos" else runner["arch"]
    minor = ".".join(python.split(".")[:2])
    runner.update(os=os_name, arch=arch, python=python, torch=torch, start_methods=list(methods),
                  default_method=default or ("spawn" if os_name in ("windows", "macos") else runner["default_method"]),
                  id=f"{os_name}-{arch}-py{minor}-torch{torch}")
    for rec in out["results"]:
        rec["runner"] = runner["id"]
        if rec["method"] != "in-process" and rec["method"] not in methods:
            rec.update(outcome="unsupported", kind=None, root_cause="", warnings=[], matches=True,
                       message=f"start method {rec['method']!r} does not exist on this platform",
                       duration_s=None, first_batch_s=None, wall_s=None, parent_peak_rss_bytes=None,
                       worker_peak_rss_bytes=None, worker_peak_uss_bytes=None, workers_seen=None,
                       exit_code=None)
            rec.pop("stderr_tail", None)
    return out


def windows_shard(shard: dict | None = None) -> dict:
    """The Linux shard as a Windows runner: ``spawn`` only, ``spawn`` by default."""
    return derive(shard or linux_shard(), os_name="windows", python="3.11.9", torch="2.13.0",
                  methods=("spawn",), default="spawn")


def write(path: Path, shard: dict) -> Path:
    """Write ``shard`` as JSON to ``path`` and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(shard, indent=1), encoding="utf-8")
    return path
