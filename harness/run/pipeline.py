"""``harness run``: discover → select → run cells in isolation → write this runner's shard."""

from __future__ import annotations

import datetime as _dt
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

from harness._options import resolve_start_method
from harness._policy import profile as _profile
from harness._progress import Progress, say
from harness.catalogue.discover import Case, CatalogueError, open_catalogue, select
from harness.classify.outcomes import METHODS
from harness.errors import Interrupted, UsageError
from harness.run.cells import (
    DEFAULT_WORKERS,
    emulated_temp_dir,
    kill_live_cells,
    mark_broken,
    plan,
    resolve_isolation,
    run_cells,
)
from harness.run.containment import watchdog_cpu_s
from harness.run.inputs import InputHasher
from harness.run.sampler import peak_report_cpu_s
from harness.run.schedule import durations, estimate, longest_first
from harness.run.warm import Template
from harness.shard.format import ShardError, read_shard, runner_info, shard_filename
from harness.shard.save import SaveError, ShardWriter, set_aside

__all__ = ["SAVE_EVERY_S", "case_table", "resolve_timeout_scale", "run_catalogue"]

#: Seconds between two writes of the partial shard while cells finish (plus one at the end
#: and one on interrupt): rewriting hundreds of records after every cell costs seconds.
SAVE_EVERY_S = 2.0


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
            "expect_when": [dict(e) for e in c.expect_when],
            "script": c.script,
            "sources": list(c.sources),
        }
        for c in cases
    }


def resolve_timeout_scale(value: float | None) -> float:
    """The timeout multiplier: ``value``, else ``HARNESS_TIMEOUT_SCALE``, else 1.

    Raises:
        UsageError: not a finite number > 0 (one line naming the option or variable).
    """
    if value is None:
        text = os.environ.get("HARNESS_TIMEOUT_SCALE", "").strip()
        if not text:
            return 1.0
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"HARNESS_TIMEOUT_SCALE: not a number: {text!r}") from None
        where = "HARNESS_TIMEOUT_SCALE"
    else:
        where = "--timeout-scale"
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{where}: must be a finite number > 0, got {value!r}")
    return float(value)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _overhead_cpu_s(template: Template | None) -> dict:
    """CPU seconds (user + system) the harness's own processes used so far: this process (its
    memory samplers, watchers, progress and saves), the warm template (not its cells) and the
    containment watchdog, and the cells' processes' own memory-peak reports
    (:func:`~harness.run.sampler.peak_report_cpu_s`); ``total`` is their sum. The rest of the
    cells and their workers is the work."""
    own = os.times()
    parts = {"harness": own.user + own.system, "template": template.cpu_s() if template else 0.0,
             "watchdog": watchdog_cpu_s(), "reports": peak_report_cpu_s()}
    return {k: round(v, 3) for k, v in {**parts, "total": sum(parts.values())}.items()}


def _previous_shard(path: Path) -> tuple[dict | None, str | None]:
    """The shard already at ``path``: ``(data, None)``, ``(None, None)`` if absent, or ``(None, error line)``."""
    if not path.exists():
        return None, None
    try:
        return read_shard(path), None
    except ShardError as exc:
        return None, str(exc)


def run_catalogue(
    *,
    patterns: list[str] | None,
    families: list[str] | None,
    methods: list[str] | None,
    out_dir: Path,
    timeout_s: float,
    jobs: int | None,
    catalogue_dir: Path | list[Path] | None = None,
    num_workers: int = DEFAULT_WORKERS,
    isolation: str | None = "auto",
    resume: bool = False,
    changed: bool = False,
    profile: str | None = None,
    timeout_scale: float | None = None,
) -> int:
    """Run the selected cells and write the shard; returns the exit code.

    Args:
        patterns, families, methods: the selection (``None``: everything).
        out_dir: shard directory; the shard's name comes from the runner.
        timeout_s: per-cell timeout in seconds (a case's own ``timeout_s`` wins).
        jobs: cells using the CPU at once (default: the usable CPU count).
        catalogue_dir: catalogue directories (``--catalogue``, repeatable); ``None``: the
            project's ``[tool.harness] catalogue``, else the built-in one
            (:func:`harness.catalogue.discover.open_catalogue`).
        num_workers: DataLoader workers per cell (not for ``in-process``).
        isolation: ``auto`` (``warm`` on Linux, else ``fresh``), ``warm`` or ``fresh``;
            recorded in the shard's ``runner.isolation``.
        resume: continue the shard already in ``out_dir``: keep its results, run only the
            selected cells it lacks. Its isolation and timeout must match. Without it, a
            shard already in ``out_dir`` keeps the cells this selection does not run (a
            narrower run replaces only its own cells).
        changed: run only the selected cells whose input hash (:mod:`harness.run.inputs`)
            differs from their record in the shard already in ``out_dir``; the others are
            kept as they are, marked ``carried_over`` with their ``observed_utc``.
        profile: emulate a platform (``macos``, ``windows``; :data:`harness._policy.PROFILES`):
            its start methods (others are ``unsupported``), its torch sharing strategy, and
            its temp-directory length (the run's ``TMPDIR`` is made that long). The shard's
            runner says what it emulates, and its cells are ``emulated``, never ``observed``.
        timeout_scale: multiplies every cell's timeout, for slow runners; default
            ``HARNESS_TIMEOUT_SCALE`` or 1. Recorded in the shard's runner.

    Cells start longest first, by their ``wall_s`` in the shard already in ``out_dir`` when
    there is one (:mod:`harness.run.schedule`). The shard is rewritten (atomically) as cells
    finish, at most every :data:`SAVE_EVERY_S` seconds, with ``complete: false``; an
    interrupt (Ctrl-C, SIGTERM, SIGHUP) kills every running cell and the template, writes
    the partial shard and raises :class:`~harness.errors.Interrupted`.

    Returns:
        0 when every observed cell matched its expectation, 1 on any mismatch or broken case,
        2 when case modules could not be read (each is named, the other cases still run) or
        the shard could not be saved.

    Raises:
        UsageError: bad input, before any cell runs (unknown method, a selection that matches
            nothing, an unusable catalogue, nothing to resume), one line.
        Interrupted: stopped by a signal, after the partial shard was written (exit 130).
    """
    def fail(line: str) -> NoReturn:
        raise UsageError(line)

    if changed and resume:
        return fail("--changed and --resume: choose one")
    for m in methods or ():
        resolve_start_method(m, platforms=False)
    try:
        mode = resolve_isolation(isolation)
    except ValueError as exc:
        return fail(f"--isolation: {exc}")
    try:
        emulating = _profile(profile) if profile else None
        scale = resolve_timeout_scale(timeout_scale)
    except ValueError as exc:
        return fail(str(exc))
    if isolation == "warm" and mode != "warm":
        say("--isolation warm needs Linux; cells start fresh interpreters here", command="run")
    try:
        catalogue = open_catalogue(catalogue_dir)
    except CatalogueError as exc:
        return fail(str(exc))
    # A broken case module is named first, so that selecting it by its id shows why it is
    # not there, not only that the id "matches no case".
    for line in catalogue.errors:
        say(line, command="run")
    try:
        cases = select(catalogue.cases, patterns, families)
    except CatalogueError as exc:
        hint = f" ({len(catalogue.errors)} case module(s) could not be read: see above)" if catalogue.errors else ""
        return fail(f"{exc}{hint}")
    if not cases:
        return fail("no cases selected")
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fail(f"--out {out_dir}: cannot create the shard directory ({exc.strerror or exc})")
    jobs = jobs or _usable_cpus()
    runner = runner_info(emulating, isolation=mode, timeout_s=timeout_s, timeout_scale=scale)
    shard_path = Path(out_dir) / shard_filename(runner)
    previous, problem = _previous_shard(shard_path)
    specs = plan(cases, methods or METHODS, timeout_s, num_workers, timeout_scale=scale,
                 profile=emulating.id if emulating else None)
    by_id = {c.id for c in catalogue.cases}
    table = case_table(cases)
    owned = {s.key for s in specs}
    records: list[dict] = []
    if resume:
        if previous is None:
            return fail(f"--resume: {problem or f'{shard_path}: no shard to resume'}")
        old = previous["runner"]
        for key, value in (("isolation", mode), ("timeout_s", timeout_s), ("timeout_scale", scale)):
            if key in old and old[key] != value:
                return fail(f"--resume: {shard_path} was run with {key} {old[key]!r}, "
                            f"not {value!r}; resume with the same options")
        runner = dict(old)
        records = [r for r in previous["results"] if r["case"] in by_id and (r["case"], r["method"]) in owned]
        finished = {(r["case"], r["method"]) for r in records}
        specs = [s for s in specs if s.key not in finished]
    elif problem:
        moved = set_aside(shard_path)
        say(f"{problem}; kept as {moved.name}, not overwritten", command="run")
    hasher = InputHasher(runner)
    inputs = {s.key: hasher.cell(s.case, s.method, s.num_workers, s.timeout_s) for s in specs}
    if changed:
        before = {(r["case"], r["method"]): r for r in (previous or {}).get("results", ())}
        same = [before[s.key] for s in specs if s.key in before and before[s.key].get("inputs") == inputs[s.key]]
        records = [{**r, "carried_over": True} for r in same]
        unchanged = {(r["case"], r["method"]) for r in same}
        specs = [s for s in specs if s.key not in unchanged]
        say(f"--changed: {len(unchanged)} cell(s) unchanged since they were observed, kept; "
            f"{len(specs)} to run", command="run")
    gone = sorted({r["case"] for r in (previous or {}).get("results", ()) if r["case"] not in by_id})
    if gone:
        say(f"dropping the results of {len(gone)} case(s) no longer in the catalogue: "
            f"{', '.join(gone[:10])}{' ...' if len(gone) > 10 else ''}", command="run")
    kept = sum(1 for r in (previous or {}).get("results", ()) if r["case"] in by_id
               and (r["case"], r["method"]) not in owned)
    if kept and not resume:
        # A narrower run (--cases, --start-method) replaces only the cells it runs: the other cells
        # already observed in this runner's shard are kept, never silently dropped.
        say(f"keeping {kept} cell(s) of {shard_path} that this selection does not run", command="run")
    writer = ShardWriter(shard_path, runner=runner, table=table, owned=owned, initial=previous,
                         drop_cases=set(gone), warn=lambda line: say(line, command="run"))
    known = durations(previous)
    specs = longest_first(specs, known)
    expected = {s.key: estimate(s, known) for s in specs}
    planned = len(records) + len(specs)
    lock = threading.Lock()
    stop = threading.Event()
    last_save = [0.0]
    save_failed: list[str] = []

    def save(finished: bool, finalize=None) -> list[dict] | None:
        with lock:
            mine = list(records)
        try:
            merged = writer.save(mine, finished=finished, finalize=finalize)
        except SaveError as exc:
            if str(exc) not in save_failed:
                save_failed.append(str(exc))
                say(str(exc), command="run")
            return None
        finally:
            last_save[0] = time.monotonic()
        save_failed.clear()
        return merged

    progress = Progress(total=len(specs), expected_s=list(expected.values()),
                        done=len(records), jobs=jobs)

    def done(rec: dict) -> None:
        rec["inputs"] = inputs[(rec["case"], rec["method"])]
        rec["observed_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with lock:
            records.append(rec)
        progress.advance(rec, expected[(rec["case"], rec["method"])])
        if time.monotonic() - last_save[0] >= SAVE_EVERY_S:
            save(finished=False)

    def interrupt(signum, frame):  # noqa: ARG001
        # The first signal stops the run; more signals while it cleans up (a second Ctrl-C)
        # are ignored, so the cleanup that kills every cell and writes the shard completes.
        if stop.is_set():
            return
        stop.set()
        raise KeyboardInterrupt

    handled = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        old_handlers = {sig: signal.signal(sig, interrupt) for sig in handled}
    if save(finished=False) is None:  # nothing is run that could not be saved
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
        return 2
    long_temp = emulated_temp_dir(emulating) if emulating and specs else None
    template = Template() if mode == "warm" and specs else None
    t0 = time.monotonic()
    try:
        if template is not None:
            template.start()
        with progress:
            run_cells(specs, runner["id"], jobs, on_done=done, stop=stop, isolation=mode,
                      template=template)
        runner["overhead_cpu_s"] = _overhead_cpu_s(template)
    except KeyboardInterrupt:
        stop.set()
        kill_live_cells()
        if template is not None:
            template.close()
        save(finished=False)
        raise Interrupted(f"interrupted; partial shard with {len(records)} of {planned} cells "
                          f"written to {shard_path}; continue with --resume") from None
    finally:
        if template is not None:
            template.close()
        if long_temp is not None:
            long_temp.close()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    fresh = sum(1 for r in records if r.get("isolation") == "fresh")
    if mode == "warm" and fresh:
        say(f"the warm template failed during the run; {fresh} cell(s) ran in fresh "
            "interpreters (each record says which)", command="run")
        runner["isolation_fallback"] = {"fresh_cells": fresh}
    broken_lines: list[str] = []
    cases_by_id = {c.id: c for c in catalogue.cases}
    merged = save(finished=True, finalize=lambda rs: broken_lines.extend(
        mark_broken([r for r in rs if r["case"] in cases_by_id], cases_by_id)))
    for line in broken_lines:
        say(line, command="run")
    wall = time.monotonic() - t0
    if merged is None:
        return 2
    # A broken case is a defect of the case (named above, one line each), not a start-method
    # finding, so its cells are not listed as mismatches; it still makes the run fail.
    broken = sorted({r["case"] for r in merged if r.get("broken")})
    bad = [r for r in merged if not r["matches"] and not r.get("broken")]
    say(f"{len(records)} cells in {wall:.1f} s on {jobs} job(s), {mode} isolation; "
        f"{len(bad)} of {len(merged)} in the shard contradict expectations"
        f"{f', {len(broken)} broken case(s)' if broken else ''}; shard: {shard_path}", stream=sys.stdout, command="run")
    for r in bad:
        say(f"  MISMATCH {r['case']} [{r['method']}]: expected {r['expected']}"
            f"{'/' + r['expected_kind'] if r.get('expected_kind') else ''}, observed {r['outcome']}"
            f"{'/' + r['kind'] if r['kind'] else ''}: {r['root_cause'] or r['message']}", stream=sys.stdout)
    if catalogue.errors:
        return 2
    return 1 if bad or broken else 0
