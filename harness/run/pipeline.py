"""``harness run``: discover → select → run cells in isolation → write this runner's shard."""

from __future__ import annotations

import datetime as _dt
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._options import DEFAULT_WORKERS, resolve_start_method
from harness._policy import Platform
from harness._policy import profile as _profile
from harness._progress import Progress, say
from harness.catalogue.discover import Case, Catalogue, CatalogueError, open_catalogue, select
from harness.classify.outcomes import METHODS
from harness.errors import Interrupted, UsageError
from harness.run.containment import watchdog_cpu_s
from harness.run.inputs import InputHasher
from harness.run.launch import kill_live_cells
from harness.run.plan import CellSpec, emulated_temp_dir, plan, resolve_isolation
from harness.run.pool import run_cells
from harness.run.records import mark_broken
from harness.run.sampler import peak_report_cpu_s
from harness.run.schedule import durations, estimate, longest_first
from harness.run.split import SplitPlan, choose_split, newest_records, runner_shards
from harness.run.warm import Template
from harness.shard.format import ShardError, read_shard, runner_info, shard_filename, split_filename
from harness.shard.save import SaveError, ShardWriter, set_aside

__all__ = ["SAVE_EVERY_S", "RunOptions", "case_table", "resolve_timeout_scale", "run_catalogue"]

#: Seconds between two writes of the partial shard while cells finish (plus one at the end
#: and one on interrupt): rewriting hundreds of records after every cell costs seconds.
SAVE_EVERY_S = 5.0


def case_table(cases: list[Case]) -> dict[str, dict[str, Any]]:
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
    """The timeout multiplier: ``value``, else ``HARNESS_TIMEOUT_SCALE``, else 1; both checked
    by the one numeric check of :func:`harness._options.parse_number` (its ``timeout_scale``
    bounds, which the shard schema holds).

    Raises:
        UsageError: out of bounds, not a number, nan or infinite (one line naming the option or
            variable).
    """
    from harness._options import env_number, parse_number

    if value is None:
        scale = env_number("HARNESS_TIMEOUT_SCALE")
        return 1.0 if scale is None else float(scale)
    return float(parse_number(repr(float(value)) if isinstance(value, (int, float)) else str(value),
                              "timeout_scale", "--timeout-scale"))


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _overhead_cpu_s(template: Template | None) -> dict[str, float]:
    """CPU seconds (user + system) the harness's own processes used so far: this process (its
    memory samplers, watchers, progress and saves), the warm template (not its cells) and the
    containment watchdog, and the cells' processes' own memory-peak reports
    (:func:`~harness.run.sampler.peak_report_cpu_s`); ``total`` is their sum. The rest of the
    cells and their workers is the work."""
    own = os.times()
    parts = {"harness": own.user + own.system, "template": template.cpu_s() if template else 0.0,
             "watchdog": watchdog_cpu_s(), "reports": peak_report_cpu_s()}
    return {k: round(v, 3) for k, v in {**parts, "total": sum(parts.values())}.items()}


def _previous_shard(path: Path) -> tuple[dict[str, Any] | None, str | None]:
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
    split: tuple[int, int] | str | None = None,
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
        split: ``(part, parts)`` or ``"K/N"`` (``--split``): run only the cases that part
            ``K`` of ``N`` gets (:mod:`harness.run.split`: every cell of a case in one part,
            balanced by the durations of this runner's shards in ``out_dir``), into its own
            shard, ``<runner>.split-K-of-N.json``, that holds exactly that part and records
            it in ``runner.split``. ``--changed`` compares with the newest record of each cell
            in any of this runner's shards in ``out_dir``; ``--resume`` continues that part's
            shard with the same parts. ``None`` or ``1/1``: the whole selection.

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
            nothing, an unusable catalogue, nothing to resume, a ``split`` that is not ``K/N``
            with ``1 <= K <= N``), one line.
        Interrupted: stopped by a signal, after the partial shard was written (exit 130).
    """
    options = RunOptions(
        patterns=patterns, families=families, methods=methods, out_dir=Path(out_dir),
        timeout_s=timeout_s, jobs=jobs, catalogue_dir=catalogue_dir, num_workers=num_workers,
        isolation=isolation, resume=resume, changed=changed, profile=profile,
        timeout_scale=timeout_scale, split=split,
    )
    state = _Run(options)
    for step in (_check_options, _select, _plan, _split, _reuse_previous, _order):
        step(state)
    code = _execute(state)
    if code is not None:
        return code
    return _summarise(state)


@dataclass(frozen=True)
class RunOptions:
    """What ``harness run`` was asked for (see :func:`run_catalogue` for each field)."""

    patterns: list[str] | None
    families: list[str] | None
    methods: list[str] | None
    out_dir: Path
    timeout_s: float
    jobs: int | None
    catalogue_dir: Path | list[Path] | None
    num_workers: int
    isolation: str | None
    resume: bool
    changed: bool
    profile: str | None
    timeout_scale: float | None
    split: tuple[int, int] | str | None = None


@dataclass
class _Run:
    """What the steps of one ``harness run`` share: its options, then what each step made."""

    options: RunOptions
    mode: str = "fresh"  # the isolation this run gets
    emulating: Platform | None = None
    scale: float = 1.0
    catalogue: Catalogue | None = None
    cases: list[Case] = field(default_factory=list)
    jobs: int = 1
    runner: dict[str, Any] = field(default_factory=dict)
    shard_path: Path = Path()
    previous: dict[str, Any] | None = None
    problem: str | None = None  # why the shard already in --out is unreadable
    specs: list[CellSpec] = field(default_factory=list)
    owned: set[tuple[str, str]] = field(default_factory=set)  # every cell this selection owns
    records: list[dict[str, Any]] = field(default_factory=list)  # this run's and kept results
    inputs: dict[tuple[str, str], str] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)  # cases of the old shard no longer in the catalogue
    expected: dict[tuple[str, str], float] = field(default_factory=dict)
    merged: list[dict[str, Any]] = field(default_factory=list)  # the shard's results when done
    wall_s: float = 0.0
    parts: tuple[int, int] | None = None  # (K, N) of --split K/N with N > 1
    split: SplitPlan | None = None
    family: list[dict[str, Any]] = field(default_factory=list)  # this runner's other shards in --out (split runs)

    @property
    def cases_by_id(self) -> dict[str, Case]:
        assert self.catalogue is not None
        return {c.id: c for c in self.catalogue.cases}


def _say(line: str) -> None:
    say(line, command="run")


def _check_options(state: _Run) -> None:
    """Reject contradictory or malformed options before anything runs."""
    o = state.options
    if o.changed and o.resume:
        raise UsageError("--changed and --resume: choose one")
    for m in o.methods or ():
        resolve_start_method(m, platforms=False)
    try:
        state.mode = resolve_isolation(o.isolation)
    except ValueError as exc:
        raise UsageError(f"--isolation: {exc}") from None
    state.emulating = _profile(o.profile) if o.profile else None
    state.scale = resolve_timeout_scale(o.timeout_scale)
    if o.split is not None:
        from harness._options import parse_split

        part, parts = parse_split(o.split) if isinstance(o.split, str) else parse_split(f"{o.split[0]}/{o.split[1]}")
        state.parts = (part, parts) if parts > 1 else None
    if o.isolation == "warm" and state.mode != "warm":
        _say("--isolation warm needs Linux; cells start fresh interpreters here")


def _select(state: _Run) -> None:
    """Open the catalogue and select the cases; a broken case module is named first, so that
    selecting it by its id shows why it is not there, not only that the id matches nothing."""
    o = state.options
    try:
        state.catalogue = open_catalogue(o.catalogue_dir)
    except CatalogueError as exc:
        raise UsageError(str(exc)) from None
    for line in state.catalogue.errors:
        _say(line)
    if not state.catalogue.cases and not state.catalogue.errors:
        given = o.catalogue_dir if isinstance(o.catalogue_dir, (list, tuple)) else [o.catalogue_dir]
        where = ", ".join(str(d) for d in given if d) or "the catalogue"
        raise UsageError(f"{where}: no case modules found (a module with a CASE dict and run(cell); "
                         "see 'How to add a case' in the docs, docs/authoring.md)")
    try:
        state.cases = select(state.catalogue.cases, o.patterns, o.families)
    except CatalogueError as exc:
        errors = state.catalogue.errors
        hint = f" ({len(errors)} case module(s) could not be read: see above)" if errors else ""
        raise UsageError(f"{exc}{hint}") from None
    if not state.cases:
        raise UsageError("no cases selected")


def _plan(state: _Run) -> None:
    """The runner, its shard's path and what is already there, and one spec per cell."""
    o = state.options
    try:
        o.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {o.out_dir}: cannot create the shard directory ({exc.strerror or exc})") from None
    state.jobs = o.jobs or _usable_cpus()
    state.runner = runner_info(state.emulating, isolation=state.mode, timeout_s=o.timeout_s,
                               timeout_scale=state.scale)
    state.shard_path = o.out_dir / (split_filename(state.runner, *state.parts) if state.parts
                                    else shard_filename(state.runner))
    state.previous, state.problem = _previous_shard(state.shard_path)
    if state.parts:
        state.family = [shard for _, shard in runner_shards(o.out_dir, state.runner, skip=state.shard_path)]
    state.specs = plan(state.cases, o.methods or METHODS, o.timeout_s, o.num_workers,
                       timeout_scale=state.scale,
                       profile=state.emulating.id if state.emulating else None)
    state.owned = {s.key for s in state.specs}


def _split(state: _Run) -> None:
    """``--split K/N``: keep only the cases dealt to part K (:func:`harness.run.split.choose_split`)."""
    if state.parts is None:
        return
    part, parts = state.parts
    shards = [*state.family, *([state.previous] if state.previous else [])]
    chosen = choose_split(state.specs, part, parts, shards, state.previous if state.options.resume else None)
    mine = set(chosen.cases)
    state.split = chosen
    state.cases = [c for c in state.cases if c.id in mine]
    state.specs = [s for s in state.specs if s.case.id in mine]
    state.owned = {s.key for s in state.specs}
    state.runner["split"] = chosen.record()
    share, total = chosen.seconds()
    how = {"new": f"weighed by the durations in {len(shards)} shard(s) of this runner" if shards
           else "weighed by estimates per start method (no shard of this runner in --out)",
           "joined": "joining the split run under way in --out", "resumed": "as the shard resumed"}[chosen.basis]
    _say(f"--split {part}/{parts}: {len(state.cases)} of {len(chosen.weights)} case(s), {len(state.specs)} cell(s), "
         f"about {share:.1f} s of {total:.1f} s ({how})")
    whole = state.options.out_dir / shard_filename(state.runner)
    if whole.exists():
        _say(f"--split: {whole} is this runner's whole shard; 'harness report' refuses split shards beside it "
             "(give the parts an --out of their own, or move it)")


def _previous_results(state: _Run) -> list[dict[str, Any]]:
    return list((state.previous or {}).get("results", ()))


def _prior_records(state: _Run) -> dict[tuple[str, str], dict[str, Any]]:
    """Each cell's last record: in the shard already at ``state.shard_path``, and for a split
    run in any of this runner's shards in ``--out`` (the newest of each cell)."""
    if state.split is None:
        return {(r["case"], r["method"]): r for r in _previous_results(state)}
    return newest_records([state.previous, *state.family])


def _resume(state: _Run) -> None:
    """``--resume``: keep the old shard's results of this selection, run only what it lacks."""
    o = state.options
    if state.previous is None:
        raise UsageError(f"--resume: {state.problem or f'{state.shard_path}: no shard to resume'}")
    old = state.previous["runner"]
    for key, value in (("isolation", state.mode), ("timeout_s", o.timeout_s), ("timeout_scale", state.scale)):
        if key in old and old[key] != value:
            raise UsageError(f"--resume: {state.shard_path} was run with {key} {old[key]!r}, "
                             f"not {value!r}; resume with the same options")
    state.runner = dict(old)
    if state.split is not None:
        state.runner["split"] = state.split.record()
    by_id = state.cases_by_id
    state.records = [r for r in _previous_results(state)
                     if r["case"] in by_id and (r["case"], r["method"]) in state.owned]
    finished = {(r["case"], r["method"]) for r in state.records}
    state.specs = [s for s in state.specs if s.key not in finished]


def _keep_unchanged(state: _Run) -> None:
    """``--changed``: keep every cell whose inputs hash equals its record's, run the rest."""
    before = _prior_records(state)
    same = [before[s.key] for s in state.specs
            if s.key in before and before[s.key].get("inputs") == state.inputs[s.key]]
    state.records = [{**r, "carried_over": True} for r in same]
    unchanged = {(r["case"], r["method"]) for r in same}
    never = sum(1 for s in state.specs if s.key not in before)
    state.specs = [s for s in state.specs if s.key not in unchanged]
    _say(f"--changed: {len(unchanged)} cell(s) unchanged since they were observed, kept; "
         f"{len(state.specs)} to run ({len(state.specs) - never} changed, {never} never observed "
         f"in {'the shards of this runner' if state.split else state.shard_path.name})")


def _reuse_previous(state: _Run) -> None:
    """What the shard already in ``--out`` contributes: resumed or unchanged cells, the cells
    a narrower selection keeps; an unreadable one is set aside, never overwritten."""
    o = state.options
    if o.resume:
        _resume(state)
    elif state.problem:
        moved = set_aside(state.shard_path)
        _say(f"{state.problem}; kept as {moved.name}, not overwritten")
    hasher = InputHasher(state.runner)
    state.inputs = {s.key: hasher.cell(s.case, s.method, s.num_workers, s.timeout_s) for s in state.specs}
    if o.changed:
        _keep_unchanged(state)
    by_id = state.cases_by_id
    state.gone = sorted({r["case"] for r in _previous_results(state) if r["case"] not in by_id})
    if state.gone:
        _say(f"dropping the results of {len(state.gone)} case(s) no longer in the catalogue: "
             f"{', '.join(state.gone[:10])}{' ...' if len(state.gone) > 10 else ''}")
    kept = sum(1 for r in _previous_results(state)
               if r["case"] in by_id and (r["case"], r["method"]) not in state.owned)
    if kept and not o.resume and state.split is not None:
        # A split shard holds exactly its part: the other parts' shards hold the other cells.
        _say(f"dropping {kept} cell(s) of {state.shard_path} that are not in part "
             f"{state.split.part} of {state.split.parts} now")
    elif kept and not o.resume:
        # A narrower run (--cases, --start-method) replaces only the cells it runs: the other
        # cells already observed in this runner's shard are kept, never silently dropped.
        _say(f"keeping {kept} cell(s) of {state.shard_path} that this selection does not run")


def _order(state: _Run) -> None:
    """Longest cells first, by the durations the old shard recorded (:mod:`harness.run.schedule`)."""
    known = durations({"results": list(_prior_records(state).values())})
    state.specs = longest_first(state.specs, known)
    state.expected = {s.key: estimate(s, known) for s in state.specs}


class _Cells:
    """Runs the planned cells, saving the shard as they finish (:data:`SAVE_EVERY_S`) and once
    more at the end or on an interrupt."""

    def __init__(self, state: _Run) -> None:
        self.state = state
        self.writer = ShardWriter(state.shard_path, runner=state.runner,
                                  table=case_table(state.cases), owned=state.owned,
                                  initial=state.previous, drop_cases=set(state.gone), warn=_say,
                                  exclusive=state.split is not None)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_save = 0.0
        self.save_failed: list[str] = []
        self.progress = Progress(total=len(state.specs), expected_s=list(state.expected.values()),
                                 done=len(state.records), jobs=state.jobs)

    def save(self, finished: bool, finalize: Callable[[list[dict[str, Any]]], None] | None = None,
             compact: bool = False) -> list[dict[str, Any]] | None:
        """Merge this run's records into the shard on disk; ``None`` if it could not be written
        (said once per distinct error)."""
        with self.lock:
            mine = list(self.state.records)
        try:
            merged = self.writer.save(mine, finished=finished, finalize=finalize, compact=compact)
        except SaveError as exc:
            if str(exc) not in self.save_failed:
                self.save_failed.append(str(exc))
                _say(str(exc))
            return None
        finally:
            self.last_save = time.monotonic()
        self.save_failed.clear()
        return merged

    def done(self, rec: dict[str, Any]) -> None:
        """One cell finished: stamp it, count it, save now and then."""
        key = (rec["case"], rec["method"])
        rec["inputs"] = self.state.inputs[key]
        rec["observed_utc"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.lock:
            self.state.records.append(rec)
        self.progress.advance(rec, self.state.expected[key])
        if time.monotonic() - self.last_save >= SAVE_EVERY_S:
            self.save(finished=False, compact=True)

    def interrupt(self, signum: int, frame: object) -> None:
        """Signal handler: the first signal stops the run; more signals while it cleans up (a
        second Ctrl-C) are ignored, so the cleanup that kills every cell and writes the shard
        completes."""
        if self.stop.is_set():
            return
        self.stop.set()
        raise KeyboardInterrupt

    def run(self, template: Template | None) -> None:
        """Run every planned cell (:func:`~harness.run.pool.run_cells`); on an interrupt kill
        them all, save the partial shard and raise :class:`~harness.errors.Interrupted`."""
        state = self.state
        try:
            if template is not None:
                template.start()
            with self.progress:
                run_cells(state.specs, state.runner["id"], state.jobs, on_done=self.done,
                          stop=self.stop, isolation=state.mode, template=template)
            state.runner["overhead_cpu_s"] = _overhead_cpu_s(template)
        except KeyboardInterrupt:
            self.stop.set()
            kill_live_cells()
            if template is not None:
                template.close()
            self.save(finished=False)
            planned = len(state.records) + len(state.specs)
            raise Interrupted(f"interrupted; partial shard with {len(state.records)} of {planned} cells "
                              f"written to {state.shard_path}; continue with --resume") from None


_HANDLED = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())


def _execute(state: _Run) -> int | None:
    """Run the cells with the run's signal handlers, the emulated temp folder and the warm
    template in place, then save the finished shard; an exit code if nothing could be saved."""
    cells = _Cells(state)
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        old_handlers = {sig: signal.signal(sig, cells.interrupt) for sig in _HANDLED}
    long_temp = template = None
    try:
        if cells.save(finished=False) is None:  # nothing is run that could not be saved
            return 2
        long_temp = emulated_temp_dir(state.emulating) if state.emulating and state.specs else None
        template = Template() if state.mode == "warm" and state.specs else None
        t0 = time.monotonic()
        cells.run(template)
    finally:
        if template is not None:
            template.close()
        if long_temp is not None:
            long_temp.close()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    merged = _finish(state, cells)
    state.wall_s = time.monotonic() - t0
    if merged is None:
        return 2
    state.merged = merged
    return None


def _finish(state: _Run, cells: _Cells) -> list[dict[str, Any]] | None:
    """Record a warm run's fallback to fresh cells, mark broken cases, save the finished shard."""
    fresh = sum(1 for r in state.records if r.get("isolation") == "fresh")
    if state.mode == "warm" and fresh:
        _say(f"the warm template failed during the run; {fresh} cell(s) ran in fresh "
             "interpreters (each record says which)")
        state.runner["isolation_fallback"] = {"fresh_cells": fresh}
    broken_lines: list[str] = []
    by_id = state.cases_by_id
    merged = cells.save(finished=True, finalize=lambda rs: broken_lines.extend(
        mark_broken([r for r in rs if r["case"] in by_id], by_id)))
    for line in broken_lines:
        _say(line)
    return merged


def _summarise(state: _Run) -> int:
    """The verdict line, one line per contradiction, and the exit code."""
    # A broken case is a defect of the case (named when the shard was saved), not a
    # start-method finding, so its cells are not listed as mismatches; it still fails the run.
    merged = state.merged
    broken = sorted({r["case"] for r in merged if r.get("broken")})
    bad = [r for r in merged if not r["matches"] and not r.get("broken")]
    say(f"{len(state.records)} cells in {state.wall_s:.1f} s on {state.jobs} job(s), {state.mode} isolation; "
        f"{len(bad)} of {len(merged)} in the shard contradict expectations"
        f"{f', {len(broken)} broken case(s)' if broken else ''}; shard: {state.shard_path}",
        stream=sys.stdout, command="run")
    for r in bad:
        say(f"  MISMATCH {r['case']} [{r['method']}]: expected {r['expected']}"
            f"{'/' + r['expected_kind'] if r.get('expected_kind') else ''}, observed {r['outcome']}"
            f"{'/' + r['kind'] if r['kind'] else ''}: {r['root_cause'] or r['message']}", stream=sys.stdout)
    assert state.catalogue is not None
    if state.catalogue.errors:
        return 2
    return 1 if bad or broken else 0
