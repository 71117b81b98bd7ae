"""``python -m benchmarks``: the catalogue against its speed floor; writes ``reports/bench.json``.

Measured side by side in one invocation, each with the real command line in a subprocess:

* ``wall_s``: ``harness run`` over the selected catalogue (default: all of it) with warm
  cells and ``--jobs`` = the usable cores, from process start to exit;
* ``work_s``: the sum over its cells of each cell's own measured work, ``duration_s``: from
  the case's first line (dataset and loader creation) to its last batch, with worker start
  and shutdown (the cell measures it, :mod:`harness.child.cell`);
* ``cores``; ``floor_s`` = ``work_s`` / ``cores``; ``ratio`` = ``wall_s`` / ``floor_s``;
* ``naive_s``: the same cells, each in a new interpreter (``isolation="fresh"``), strictly
  one after the other (one job, and no overlap of an idle cell with the next); run through
  the harness's runner in this process, so it pays no ``harness`` start-up;
  ``speedup`` = ``naive_s`` / ``wall_s``;
* ``cpu_s``: the CPU time (user + system) of every process of the warm run, the harness and
  everything it started (``getrusage(RUSAGE_CHILDREN)`` around it); ``cpu_floor_s`` =
  ``cpu_s`` / ``cores``, the least wall time that much CPU work can take;
  ``cpu_ratio`` = ``wall_s`` / ``cpu_floor_s`` (how close the scheduler runs to the machine);
* ``overhead_cpu_s``: the CPU time of the harness's own processes (the harness, with its
  memory samplers, the warm template without its cells, the containment watchdog), as the
  run records it in its shard (``runner.overhead_cpu_s``); ``overhead_fraction`` of ``cpu_s``;
* ``incremental_s``: after the warm runs, one case file of the (copied) catalogue is edited
  and ``harness run --changed`` reruns its cells into the last warm run's shard; its wall
  time, ``incremental_fraction`` of ``wall_s``, and whether the merged shard equals the full
  run cell for cell (``incremental.incremental_identical``);
* ``cells``.

The warm run is repeated (``--repeat``, default 2) and medians are reported (``ratio`` and
``floor_s`` from the median ``wall_s`` and ``work_s``); every run is kept under ``runs``.
Each run starts in an empty shard directory, as on a clean clone or in CI, so cells are
ordered by the per-method defaults of :mod:`harness.run.schedule`. The load average before and
after is recorded: other work on the machine slows both sides.

When ``benchmarks/bench_diagnose.py`` is present its ``run_benchmark()`` result is added
under ``diagnose``, and ``benchmarks/bench_guard.py``'s (``pytest --check-loaders`` on 50
small loaders against the same session without it, target ratio <= 1.25; ``harness diagnose``
with four targets against one, <= 1.3) under ``guard``. Exit status: 0 when every target is met, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["TARGETS", "bench_catalogue", "main", "run_harness", "run_naive"]

#: ratio, cpu_ratio, overhead_fraction (of cpu_s) and incremental_fraction (of wall_s) at
#: most; speedup at least.
TARGETS = {"ratio": 1.25, "speedup": 3.0, "cpu_ratio": 1.10, "overhead_fraction": 0.02,
           "incremental_fraction": 0.05}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def run_harness(out: Path, isolation: str, jobs: int, selection: list[str]) -> dict:
    """Run ``harness run`` once in a subprocess; return its timing and cells.

    Returns:
        ``{"isolation", "jobs", "wall_s", "work_s", "cells", "untimed_cells", "untimed_wall_s",
        "exit_code", "outcomes": {"case/method": "outcome/kind"}}``; ``work_s`` sums the
        cells' ``duration_s`` (cells killed at their timeout have none: they are counted in
        ``untimed_*``).

    Raises:
        RuntimeError: the run failed to write a shard (exit status 2 or worse).
    """
    env = dict(os.environ, CI="true")  # quiet: no progress bar, no line per cell
    cmd = [sys.executable, "-m", "harness", "run", "--isolation", isolation, "--jobs", str(jobs),
           "--out", str(out), *selection]
    cpu0 = _children_cpu_s()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    cpu = _children_cpu_s() - cpu0
    shards = list(out.glob("*.json"))
    if proc.returncode not in (0, 1) or len(shards) != 1:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: "
                           f"{(proc.stderr.strip().splitlines() or [''])[-1]}")
    shard = json.loads(shards[0].read_text(encoding="utf-8"))
    results = shard["results"]
    untimed = [r for r in results if r.get("duration_s") is None and r["outcome"] != "unsupported"]
    return {
        "isolation": shard["runner"].get("isolation", isolation),
        "jobs": jobs,
        "wall_s": round(wall, 3),
        "work_s": round(sum(r["duration_s"] or 0.0 for r in results), 3),
        "cells": len(results),
        "untimed_cells": len(untimed),
        "untimed_wall_s": round(sum(r.get("wall_s") or 0.0 for r in untimed), 3),
        "exit_code": proc.returncode,
        "cpu_s": round(cpu, 3),
        "overhead_cpu_s": (shard["runner"].get("overhead_cpu_s") or {}).get("total"),
        "outcomes": {f"{r['case']}/{r['method']}": f"{r['outcome']}/{r['kind']}" for r in results},
    }


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of every terminated, waited-for descendant of this process
    (``getrusage(RUSAGE_CHILDREN)``): the harness, which reaps its cells, the template, which
    reaps its forks, and the orphans the harness adopts as a subreaper. 0 where unavailable."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_incremental(out: Path, case_file: Path, jobs: int, selection: list[str]) -> dict:
    """Edit one case file of the catalogue copy that ``selection`` names and time
    ``harness run --changed`` into the shard a full run of that copy left in ``out``.

    Returns:
        ``{"incremental_s", "rerun_cells", "incremental_identical"}``: the wall time, the
        cells it ran, and whether the merged shard equals the full run's in every cell's
        outcome and kind.
    """
    (shard_path,) = out.glob("*.json")
    before = json.loads(shard_path.read_text(encoding="utf-8"))
    case_file.write_text(case_file.read_text(encoding="utf-8") + "\n# edited by the benchmark\n", encoding="utf-8")
    env = dict(os.environ, CI="true")
    cmd = [sys.executable, "-m", "harness", "run", "--isolation", "warm", "--jobs", str(jobs), "--out", str(out),
           "--changed", *selection]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr.strip().splitlines() or [''])[-1]}")
    after = json.loads(shard_path.read_text(encoding="utf-8"))

    def cells(shard: dict) -> dict:
        return {(r["case"], r["method"]): (r["outcome"], r["kind"]) for r in shard["results"]}

    return {
        "incremental_s": round(wall, 3),
        "rerun_cells": sum(1 for r in after["results"] if not r.get("carried_over")),
        "incremental_identical": cells(before) == cells(after),
    }


def run_naive(selection: list[str]) -> dict:
    """The naive baseline: the same cells, each in a fresh interpreter, strictly one at a time.

    Runs through the harness's own runner (``isolation="fresh"``, one job, no hand-over of an
    idle cell's slot, so a hanging cell holds the machine for its whole timeout as a serial
    harness would), in this process, so no ``harness`` start-up is counted.

    Returns:
        The same keys as :func:`run_harness`.
    """
    from harness._cli import build_parser
    from harness.catalogue.discover import discover, select
    from harness.classify.outcomes import METHODS
    from harness.run.plan import plan
    from harness.run.pool import run_cells

    args = build_parser().parse_args(["run", *selection])
    cases = select(discover(args.catalogue).cases, args.cases, args.families)
    specs = plan(cases, args.methods or METHODS, args.timeout)
    t0 = time.perf_counter()
    results = run_cells(specs, "naive", 1, isolation="fresh", park_idle=False)
    wall = time.perf_counter() - t0
    untimed = [r for r in results if r.get("duration_s") is None and r["outcome"] != "unsupported"]
    return {
        "isolation": "fresh",
        "jobs": 1,
        "wall_s": round(wall, 3),
        "work_s": round(sum(r["duration_s"] or 0.0 for r in results), 3),
        "cells": len(results),
        "untimed_cells": len(untimed),
        "untimed_wall_s": round(sum(r.get("wall_s") or 0.0 for r in untimed), 3),
        "exit_code": None,
        "outcomes": {f"{r['case']}/{r['method']}": f"{r['outcome']}/{r['kind']}" for r in results},
    }


def bench_catalogue(repeat: int = 3, naive_repeat: int = 1, selection: list[str] | None = None,
                    jobs: int | None = None) -> dict:
    """Measure the catalogue warm (``repeat`` times) and naive (``naive_repeat`` times).

    Args:
        repeat: warm runs; medians are reported.
        naive_repeat: fresh-interpreter serial runs; the median is reported.
        selection: extra ``harness run`` arguments (``--cases ...``); default: everything.
        jobs: parallel cells for the warm runs (default: the usable cores).

    Returns:
        The figures described in the module docstring, plus ``runs``, ``naive_runs``,
        ``outcomes_identical`` (warm and naive gave every cell the same outcome and kind),
        ``load_before``/``load_after`` (1, 5, 15-minute load averages) and ``targets``.
    """
    selection = list(selection or [])
    cores = _cores()
    jobs = jobs or cores
    load_before = _load()
    runs: list[dict] = []
    naive: list[dict] = []
    incremental: dict = {}
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        # The runs use a copy of the catalogue, so the incremental run can edit one of its files.
        selection, copy, edited = _catalogue_copy(selection, Path(tmp))
        # Interleaved, so a change in machine load hits both sides.
        plan = ["warm"] + ["fresh"] * min(1, naive_repeat) + ["warm"] * (repeat - 1) + \
            ["fresh"] * max(0, naive_repeat - 1)
        last_warm = None
        for i, mode in enumerate(plan):
            out = Path(tmp) / f"{i}-{mode}"
            if mode == "warm":
                runs.append(run_harness(out, "warm", jobs, selection))
                last_warm = out
            else:
                naive.append(run_naive(selection))
            print(f"bench: {mode} run {i + 1}/{len(plan)}: {runs[-1]['wall_s'] if mode == 'warm' else naive[-1]['wall_s']:.1f} s",
                  file=sys.stderr, flush=True)
        if edited is not None and last_warm is not None:
            incremental = run_incremental(last_warm, edited, jobs, selection)
            incremental["edited"] = edited.name
            print(f"bench: --changed after editing {edited.name}: {incremental['incremental_s']:.1f} s", file=sys.stderr)
    wall = statistics.median(r["wall_s"] for r in runs)
    work = statistics.median(r["work_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    overheads = [r["overhead_cpu_s"] for r in runs if r.get("overhead_cpu_s") is not None]
    overhead = statistics.median(overheads) if overheads else None
    floor = work / cores
    cpu_floor = cpu / cores
    naive_s = statistics.median(r["wall_s"] for r in naive) if naive else None
    outcomes = [r.pop("outcomes") for r in runs + naive]
    result = {
        "wall_s": round(wall, 3),
        "work_s": round(work, 3),
        "cores": cores,
        "floor_s": round(floor, 3),
        "ratio": round(wall / floor, 4) if floor else None,
        "naive_s": round(naive_s, 3) if naive_s is not None else None,
        "speedup": round(naive_s / wall, 4) if naive_s else None,
        "cpu_s": round(cpu, 3),
        "cpu_floor_s": round(cpu_floor, 3),
        "cpu_ratio": round(wall / cpu_floor, 4) if cpu_floor else None,
        "overhead_cpu_s": round(overhead, 3) if overhead is not None else None,
        "overhead_fraction": round(overhead / cpu, 4) if overhead is not None and cpu else None,
        "incremental_s": incremental.get("incremental_s"),
        "incremental_fraction": round(incremental["incremental_s"] / wall, 4) if incremental else None,
        "incremental": incremental,
        "cells": runs[0]["cells"],
        "jobs": jobs,
        "isolation": runs[0]["isolation"],
        "outcomes_identical": all(o == outcomes[0] for o in outcomes),
        "runs": runs,
        "naive_runs": naive,
        "load_before": load_before,
        "load_after": _load(),
        "python": sys.version.split()[0],
        "targets": dict(TARGETS),
    }
    checks = [
        result["ratio"] is not None and result["ratio"] <= TARGETS["ratio"],
        result["speedup"] is None or result["speedup"] >= TARGETS["speedup"],
        result["outcomes_identical"],
        result["cpu_ratio"] is None or result["cpu_ratio"] <= TARGETS["cpu_ratio"],
        result["overhead_fraction"] is None or result["overhead_fraction"] <= TARGETS["overhead_fraction"],
        not incremental or (result["incremental_fraction"] <= TARGETS["incremental_fraction"]
                            and incremental["incremental_identical"]),
    ]
    result["ok"] = all(checks)
    return result


def _catalogue_copy(selection: list[str], tmp: Path) -> tuple[list[str], Path, Path | None]:
    """Copy the selected catalogue (``--catalogue DIR`` in ``selection``, else the built-in one)
    into ``tmp`` under the same directory name, and point ``selection`` at the copy.

    Returns:
        ``(selection, copy, case file to edit)``: the file of the first selected case whose
        expected outcome is ``pass`` under every start method (a typical edit), else of the
        first selected case; ``None`` when nothing is selected.
    """
    import shutil

    from harness._cli import build_parser
    from harness.catalogue.discover import default_catalogue_dir, discover, select

    args = build_parser().parse_args(["run", *selection])
    source = Path(args.catalogue[0]) if args.catalogue else default_catalogue_dir()
    copy = tmp / "catalogue" / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    rest, skip = [], False
    for arg in selection:
        if skip:
            skip = False
        elif arg == "--catalogue":
            skip = True
        else:
            rest.append(arg)
    rest = [*rest, "--catalogue", str(copy)]
    cases = select(discover(copy).cases, args.cases, args.families)
    good = [c for c in cases if set(c.expect.values()) == {"pass"} and not c.expect_when]
    chosen = (good or cases)[:1]
    return rest, copy, chosen[0].path if chosen else None


def _diagnose_benchmark() -> dict | None:
    """``benchmarks.bench_diagnose.run_benchmark()`` when that module exists, else ``None``."""
    if importlib.util.find_spec("benchmarks.bench_diagnose") is None:
        return None
    from benchmarks import bench_diagnose

    return bench_diagnose.run_benchmark()


def _guard_benchmark() -> dict:
    """``benchmarks.bench_guard.run_benchmark()``: the pytest guard's cost ratio."""
    from benchmarks import bench_guard

    return bench_guard.run_benchmark()


def _table(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="harness run: catalogue against its floor")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    rows = [
        ("cells", f"{result['cells']}", ""),
        ("cores", f"{result['cores']}", ""),
        ("wall_s (warm, median)", f"{result['wall_s']:.1f}", ""),
        ("work_s (sum of cell durations)", f"{result['work_s']:.1f}", ""),
        ("floor_s = work_s / cores", f"{result['floor_s']:.1f}", ""),
        ("ratio = wall_s / floor_s", f"{result['ratio']:.3f}", f"<= {TARGETS['ratio']}"),
    ]
    if result["naive_s"] is not None:
        rows += [("naive_s (fresh, serial)", f"{result['naive_s']:.1f}", ""),
                 ("speedup = naive_s / wall_s", f"{result['speedup']:.2f}", f">= {TARGETS['speedup']}")]
    rows += [("cpu_s (all processes)", f"{result['cpu_s']:.1f}", ""),
             ("cpu_floor_s = cpu_s / cores", f"{result['cpu_floor_s']:.1f}", ""),
             ("cpu_ratio = wall_s / cpu_floor_s", f"{result['cpu_ratio']:.3f}" if result["cpu_ratio"] else "-",
              f"<= {TARGETS['cpu_ratio']}")]
    if result["overhead_cpu_s"] is not None:
        rows += [("overhead_cpu_s (harness, template, watchdog, reports)",
                  f"{result['overhead_cpu_s']:.1f} ({100 * (result['overhead_fraction'] or 0):.1f} % of cpu_s)",
                  f"<= {100 * TARGETS['overhead_fraction']:.0f} %")]
    if result["incremental_s"] is not None:
        rows += [(f"incremental_s (--changed after editing {result['incremental']['edited']})",
                  f"{result['incremental_s']:.1f} ({100 * result['incremental_fraction']:.1f} % of wall_s, "
                  f"{result['incremental']['rerun_cells']} cells)", f"<= {100 * TARGETS['incremental_fraction']:.0f} %"),
                 ("incremental shard equals the full run", "yes" if result["incremental"]["incremental_identical"] else "NO", "yes")]
    rows += [("same outcomes warm and fresh", "yes" if result["outcomes_identical"] else "NO", "yes"),
             ("load average before / after", f"{result['load_before']} / {result['load_after']}", "")]
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    diag = result.get("diagnose")
    if diag:
        dt = Table(title="harness diagnose on a large dataset")
        dt.add_column("figure")
        dt.add_column("value", justify="right")
        for key, value in diag.items():
            if not isinstance(value, (dict, list)):
                dt.add_row(key, str(value))
        console.print(dt)
    guard = result.get("guard")
    if guard:
        gt = Table(title="pytest --check-loaders against the same session without it")
        for column in ("suite", "plain_s (median)", "guarded_s (median)", "ratio", "target"):
            gt.add_column(column, justify="right" if column != "suite" else "left")
        gt.add_row(f"{guard['loaders']} tests, a loader each", f"{guard['suite']['plain_s']:.2f}",
                   f"{guard['suite']['guarded_s']:.2f}", f"{guard['suite']['ratio']:.3f}", f"<= {guard['target_ratio']}")
        if guard.get("downstream"):
            d = guard["downstream"]
            gt.add_row("tests/data/guarded (sample project)", f"{d['plain_s']:.2f}", f"{d['guarded_s']:.2f}",
                       f"{d['ratio']:.3f}", "")
        if guard.get("diagnose"):
            d = guard["diagnose"]
            gt.add_row("harness diagnose: 4 targets against 1", f"{d['one_s']:.2f}", f"{d['four_s']:.2f}",
                       f"{d['ratio']:.3f}", f"<= {guard['diagnose_target_ratio']}")
        console.print(gt)
    lint = result.get("lint")
    if lint:
        lt = Table(title=f"harness lint on {lint['files']} files ({lint['tree']})")
        for column in ("tool", "s (median)", "files/s", "target"):
            lt.add_column(column, justify="right" if column != "tool" else "left")
        lt.add_row("harness lint", f"{lint['lint_s']:.2f}", f"{lint['lint_files_per_s']:.0f}", f"<= {lint['target_s']:g} s")
        if lint["torchfix_s"] is not None:
            lt.add_row("torchfix", f"{lint['torchfix_s']:.2f}", f"{lint['torchfix_files_per_s']:.0f}",
                       f"ratio {lint['ratio']:.3f} <= {lint['target_ratio']:g}")
        else:
            lt.add_row("torchfix", "not installed", "", "pip install torchfix")
        console.print(lt)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks [--repeat N] [--naive-repeat N] [--no-naive] [--skip-diagnose]
    [--skip-guard] [--out PATH] [-- HARNESS_RUN_ARGS]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="warm runs (default 2); medians reported")
    parser.add_argument("--naive-repeat", type=int, default=1, help="fresh serial runs (default 1)")
    parser.add_argument("--no-naive", action="store_true", help="skip the fresh serial run")
    parser.add_argument("--jobs", type=int, default=None, help="parallel cells (default: usable cores)")
    parser.add_argument("--skip-diagnose", action="store_true", help="skip the diagnose benchmark")
    parser.add_argument("--skip-guard", action="store_true", help="skip the pytest --check-loaders benchmark")
    parser.add_argument("--skip-lint", action="store_true", help="skip the harness lint benchmark")
    parser.add_argument("--out", type=Path, default=Path("reports/bench.json"))
    parser.add_argument("harness_args", nargs="*", help="after --: harness run selection, e.g. --cases 'transform-*'")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.naive_repeat < 1:
        print("python -m benchmarks: --repeat and --naive-repeat must be >= 1", file=sys.stderr)
        return 2
    result = bench_catalogue(repeat=args.repeat, naive_repeat=0 if args.no_naive else args.naive_repeat,
                             selection=args.harness_args, jobs=args.jobs)
    if not args.skip_diagnose:
        diag = _diagnose_benchmark()
        if diag is not None:
            result["diagnose"] = diag
            result["ok"] = bool(result["ok"] and diag.get("ok", True))
    if not args.skip_guard:
        result["guard"] = _guard_benchmark()
        result["ok"] = bool(result["ok"] and result["guard"]["ok"])
    if not args.skip_lint:
        from benchmarks import bench_lint

        lint = result["lint"] = bench_lint.run_benchmark()
        lint["ok"] = lint["lint_s"] <= lint["target_s"] and (lint["ratio"] is None or lint["ratio"] <= lint["target_ratio"])
        result["ok"] = bool(result["ok"] and lint["ok"])
    from harness.shard.format import write_json_atomic

    write_json_atomic(args.out, result)
    _table(result)
    print(f"bench: wrote {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
