"""``harness run``: discover → select → run cells in isolation → write this runner's shard."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from harness._catalogue import Case, CatalogueError, discover, select
from harness._outcomes import METHODS
from harness._progress import Progress
from harness._runner import DEFAULT_WORKERS, mark_broken, plan, run_cells
from harness._shard import SCHEMA_VERSION, runner_info, shard_filename, write_json_atomic

__all__ = ["case_table", "run_catalogue"]


def case_table(cases: list[Case]) -> dict[str, dict]:
    """Case metadata embedded in a shard, so a report needs no catalogue checkout."""
    return {
        c.id: {
            "family": c.family,
            "title": c.title,
            "why": c.why,
            "fix": c.fix,
            "expect": c.expect,
            "expect_kind": c.expect_kind,
            "script": c.script,
            "sources": list(c.sources),
        }
        for c in cases
    }


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run_catalogue(
    *,
    patterns: list[str] | None,
    families: list[str] | None,
    methods: list[str] | None,
    out_dir: Path,
    timeout_s: float,
    jobs: int | None,
    catalogue_dir: Path | None = None,
    num_workers: int = DEFAULT_WORKERS,
) -> int:
    """Run the selected cells and write the shard; returns the exit code.

    Returns:
        0 when every observed cell matched its expectation, 1 on any mismatch or broken case,
        2 for input errors (unknown method, selection that matches nothing, unreadable case
        modules: these are reported and the other cases still run), 130 when interrupted.
    """
    for m in methods or ():
        if m not in METHODS:
            print(f"harness run: --methods: unknown start method {m!r} (choose from {', '.join(METHODS)})",
                  file=sys.stderr)
            return 2
    try:
        catalogue = discover(catalogue_dir)
        cases = select(catalogue.cases, patterns, families)
    except CatalogueError as exc:
        print(f"harness run: {exc}", file=sys.stderr)
        return 2
    for line in catalogue.errors:
        print(f"harness run: {line}", file=sys.stderr)
    if not cases:
        print("harness run: no cases selected", file=sys.stderr)
        return 2
    jobs = jobs or _usable_cpus()
    runner = runner_info(isolation="fresh", timeout_s=timeout_s)
    shard_path = Path(out_dir) / shard_filename(runner)
    specs = plan(cases, methods or METHODS, timeout_s, num_workers)
    by_id = {c.id: c for c in cases}
    records: list[dict] = []
    stop = threading.Event()
    progress = Progress(total=len(specs))

    def save(complete: bool) -> None:
        write_json_atomic(shard_path, {
            "schema_version": SCHEMA_VERSION,
            "complete": complete,
            "runner": runner,
            "cases": case_table(cases),
            "results": sorted(records, key=lambda r: (r["case"], METHODS.index(r["method"]))),
        })

    def done(rec: dict) -> None:
        records.append(rec)
        progress.advance(rec)
        save(complete=False)

    def interrupt(signum, frame):  # noqa: ARG001
        stop.set()
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, interrupt) if threading.current_thread() is threading.main_thread() else None
    t0 = time.monotonic()
    try:
        with progress:
            run_cells(specs, runner["id"], jobs, on_done=done, stop=stop)
    except KeyboardInterrupt:
        stop.set()
        save(complete=False)
        print(f"harness run: interrupted; partial shard with {len(records)} of {len(specs)} cells "
              f"written to {shard_path}", file=sys.stderr)
        return 130
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    for line in mark_broken(records, by_id):
        print(f"harness run: {line}", file=sys.stderr)
    save(complete=True)
    wall = time.monotonic() - t0
    bad = [r for r in records if not r["matches"]]
    print(f"harness run: {len(records)} cells in {wall:.1f} s on {jobs} job(s); "
          f"{len(bad)} contradict expectations; shard: {shard_path}")
    for r in bad:
        print(f"  MISMATCH {r['case']} [{r['method']}]: expected {r['expected']}"
              f"{'/' + r['expected_kind'] if r.get('expected_kind') else ''}, observed {r['outcome']}"
              f"{'/' + r['kind'] if r['kind'] else ''}: {r['root_cause'] or r['message']}")
    if catalogue.errors:
        return 2
    return 1 if bad else 0
