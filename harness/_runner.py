"""Run cells in isolation: one fresh process and process group per cell, under a watchdog.

Flow: plan cells (case × method) → launch each in its own process → sample its memory and
enforce the timeout → kill whatever is left of its tree → classify → record. The harness
process never imports case code; see :mod:`harness._cell` for the cell side.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness._catalogue import Case
from harness._classify import Observation, Verdict, classify
from harness._outcomes import IN_PROCESS
from harness._policy import available_methods
from harness._proctree import TreeSampler, kill_tree

__all__ = ["CellSpec", "DEFAULT_TIMEOUT_S", "DEFAULT_WORKERS", "launch_cell", "plan", "record_for", "run_cells"]

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_WORKERS = 2
SAMPLE_INTERVAL_S = 0.05


@dataclass(frozen=True)
class CellSpec:
    """One cell to run: a case under one method, with its worker count and timeout (seconds)."""

    case: Case
    method: str
    num_workers: int
    timeout_s: float

    @property
    def key(self) -> tuple[str, str]:
        """``(case id, method)``, unique within a runner."""
        return (self.case.id, self.method)

    def to_child(self) -> dict:
        """The JSON-able spec the cell process reads."""
        return {
            "case": self.case.id,
            "module": self.case.module,
            "path": str(self.case.path),
            "root": str(self.case.root),
            "script": self.case.script,
            "method": self.method,
            "num_workers": self.num_workers,
        }


@dataclass
class CellRun:
    """What launching one cell produced: the raw observation plus measured costs."""

    observation: Observation
    wall_s: float
    parent_peak_rss: int
    worker_peak_rss: int
    worker_peak_uss: int
    workers_seen: int
    leftovers: list[int]


def plan(cases: Iterable[Case], methods: Iterable[str], timeout_s: float,
         num_workers: int = DEFAULT_WORKERS) -> list[CellSpec]:
    """Every (case, method) cell, in-process control first for each case."""
    methods = list(methods)
    return [
        CellSpec(case, m, 0 if m == IN_PROCESS else num_workers, case.timeout_s or timeout_s)
        for case in cases
        for m in methods
    ]


def _child_env(spec: CellSpec, workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HARNESS_CELL_METHOD"] = spec.method
    env["HARNESS_CELL_WORKERS"] = str(spec.num_workers)
    # Case temp files land in the cell's own folder, removed with it.
    for var in ("TMPDIR", "TEMP", "TMP"):
        env[var] = str(workdir)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(spec.case.root), env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    return env


def launch_cell(spec: CellSpec) -> CellRun:
    """Run one cell in a fresh interpreter and process group; wait, watch and clean up.

    The cell is killed with its whole tree when ``spec.timeout_s`` expires. Afterwards every
    process that belonged to it is killed too (workers, forkserver, resource tracker).
    """
    workdir = Path(tempfile.mkdtemp(prefix=f"harness-{spec.case.id}-{spec.method}-"))
    result_path = workdir / "result.json"
    stderr_path = workdir / "stderr.txt"
    kwargs: dict = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    t0 = time.monotonic()
    with open(stderr_path, "wb") as err, open(workdir / "stdout.txt", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness._cell", json.dumps(spec.to_child()), str(result_path)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=workdir,
            env=_child_env(spec, workdir), **kwargs,
        )
        sampler = TreeSampler(proc.pid)
        with _LIVE_LOCK:
            _LIVE[proc.pid] = sampler
        timed_out = False
        while True:
            try:
                proc.wait(timeout=SAMPLE_INTERVAL_S)
                break
            except subprocess.TimeoutExpired:
                sampler.sample()
                if time.monotonic() - t0 > spec.timeout_s:
                    timed_out = True
                    kill_tree(proc.pid, sampler.procs.values())
                    proc.wait()
                    break
        wall = time.monotonic() - t0
        leftovers = kill_tree(proc.pid, sampler.procs.values())
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
    result = None
    if result_path.exists():
        try:
            result = json.loads(result_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            result = None
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    shutil.rmtree(workdir, ignore_errors=True)
    return CellRun(
        observation=Observation(proc.returncode, timed_out, result, stderr),
        wall_s=wall,
        parent_peak_rss=sampler.parent_peak_rss,
        worker_peak_rss=sampler.worker_peak_rss,
        worker_peak_uss=sampler.worker_peak_uss,
        workers_seen=len(sampler.workers_seen),
        leftovers=leftovers,
    )


def _matches(case: Case, method: str, verdict: Verdict) -> bool:
    """Whether an observed verdict agrees with the case's expectation.

    ``skipped`` and ``unsupported`` never contradict an expectation. Where ``expect_kind``
    names a kind for an ``error`` cell, the kind must match too.
    """
    if verdict.outcome in ("skipped", "unsupported"):
        return True
    if verdict.outcome != case.expect[method]:
        return False
    want_kind = case.expect_kind.get(method)
    return not (verdict.outcome == "error" and want_kind and verdict.kind != want_kind)


def record_for(spec: CellSpec, runner_id: str, verdict: Verdict, run: CellRun | None) -> dict:
    """The shard result record for one cell (see ``shard.schema.json``)."""
    res = run.observation.result if run else None
    rec = {
        "runner": runner_id,
        "case": spec.case.id,
        "family": spec.case.family,
        "method": spec.method,
        "outcome": verdict.outcome,
        "kind": verdict.kind,
        "message": verdict.message,
        "root_cause": verdict.root_cause,
        "duration_s": round(res["duration_s"], 4) if res and res.get("duration_s") is not None else None,
        "first_batch_s": round(res["first_batch_s"], 4) if res and res.get("first_batch_s") is not None else None,
        "wall_s": round(run.wall_s, 4) if run else None,
        "parent_peak_rss_bytes": run.parent_peak_rss if run else None,
        "worker_peak_rss_bytes": run.worker_peak_rss if run else None,
        "worker_peak_uss_bytes": run.worker_peak_uss if run else None,
        "workers_seen": run.workers_seen if run else None,
        "warnings": list(res.get("warnings", [])) if res else [],
        "expected": spec.case.expect[spec.method],
        "expected_kind": spec.case.expect_kind.get(spec.method),
        "matches": _matches(spec.case, spec.method, verdict),
        "broken": False,
        "exit_code": run.observation.returncode if run else None,
    }
    if run and verdict.outcome not in ("pass", "unsupported", "skipped"):
        rec["stderr_tail"] = run.observation.stderr[-4000:]
    return rec


def run_one(spec: CellSpec, runner_id: str) -> dict:
    """Run (or mark ``unsupported``) one cell and return its record."""
    if spec.method != IN_PROCESS and spec.method not in available_methods():
        verdict = Verdict("unsupported", None, f"start method {spec.method!r} does not exist on this platform", "")
        return record_for(spec, runner_id, verdict, None)
    run = launch_cell(spec)
    return record_for(spec, runner_id, classify(run.observation), run)


def mark_broken(records: list[dict], cases: dict[str, Case]) -> list[str]:
    """Flag every record of a case whose in-process control did not pass.

    Returns one line per broken case, naming its file and its control's error.
    """
    lines = []
    for rec in records:
        if rec["method"] != IN_PROCESS or rec["outcome"] in ("pass", "skipped"):
            continue
        case = cases[rec["case"]]
        if case.expect[IN_PROCESS] != "pass":
            continue
        for other in records:
            if other["case"] == rec["case"]:
                other["broken"] = True
                other["matches"] = False
        lines.append(f"{case.path}: broken case {case.id!r}: in-process control gave "
                     f"{rec['outcome']}: {rec['message'] or rec['root_cause']}")
    return lines


_LIVE: dict[int, TreeSampler] = {}
_LIVE_LOCK = threading.Lock()


def kill_live_cells() -> None:
    """Kill every cell process tree still running (used on interrupt)."""
    with _LIVE_LOCK:
        live = list(_LIVE.items())
    for pid, sampler in live:
        kill_tree(pid, sampler.procs.values())


def run_cells(specs: list[CellSpec], runner_id: str, jobs: int,
              on_done: Callable[[dict], None] | None = None,
              stop: threading.Event | None = None) -> list[dict]:
    """Run ``specs`` on ``jobs`` parallel slots; ``on_done(record)`` after each cell.

    On ``KeyboardInterrupt`` (or when ``stop`` is set) no new cell starts, running cells are
    killed with their trees and are not recorded, and the interrupt propagates.
    """
    stop = stop or threading.Event()
    lock = threading.Lock()
    records: list[dict] = []

    def task(spec: CellSpec) -> None:
        if stop.is_set():
            return
        rec = run_one(spec, runner_id)
        if stop.is_set():
            return
        with lock:
            records.append(rec)
            if on_done:
                on_done(rec)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        for fut in [pool.submit(task, s) for s in specs]:
            fut.result()
    except BaseException:
        stop.set()
        kill_live_cells()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return records
