"""``harness report``: merge shards → matrix.json, COMPATIBILITY.md, matrix.html, junit.xml,
matrix.png, and optionally the compact table appended to a CI job summary.

A pipeline of small steps over one :class:`_Report`, in the manner of nox's ``workflow.execute``:
each step returns ``None`` to go on, or an ``int`` to end the run with that exit code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness._escape import terminal
from harness._progress import say
from harness.catalogue.config import ConfigError
from harness.catalogue.config import catalogue_dirs as project_catalogue_dirs
from harness.catalogue.discover import CatalogueError, discover
from harness.child.fileio import write_atomic
from harness.report import JSONObject
from harness.report.heatmap import MISSING_NOTE, render_heatmap
from harness.report.junit import junit_xml
from harness.report.markdown import render_markdown
from harness.report.merge import load_shards, merge, validate_matrix
from harness.report.page import render_html
from harness.report.summary import SUMMARY_LIMIT_BYTES, render_summary
from harness.report.views import contradiction

__all__ = ["write_report", "append_summary"]


def _write_bytes(path: Path, data: bytes) -> None:
    write_atomic(path, data)


def _say(line: str) -> None:
    say(line, command="report")


def _matrix_json(matrix: JSONObject) -> bytes:
    """``matrix.json``: strict JSON (no NaN) in ASCII, so any string, a lone surrogate
    included, round-trips as a ``\\uXXXX`` escape."""
    return (json.dumps(matrix, indent=1, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def append_summary(matrix: JSONObject, path: Path, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> int:
    """Append the compact compatibility table to ``path`` (e.g. ``$GITHUB_STEP_SUMMARY``).

    The budget is ``limit_bytes`` minus what the file already holds, since GitHub's 1 MiB
    limit applies to the whole file of one step.

    Returns:
        The number of bytes appended.

    Raises:
        ValueError: too little room is left in the file for even the short form.
    """
    path = Path(path)
    used = path.stat().st_size if path.exists() else 0
    text = render_summary(matrix, limit_bytes - used - 1) + "\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(text)
    return len(text.encode("utf-8"))


@dataclass
class _Report:
    """What the steps of one ``harness report`` share: its options, then what each step made."""

    shard_dir: Path
    out_dir: Path
    summary: Path | None
    catalogue_dirs: list[Path] | None
    shards: list[tuple[Path, JSONObject]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # one line per rejected shard
    matrix: JSONObject = field(default_factory=dict)
    invalid: bool = False  # the matrix does not match its schema (a bug of the merge)
    written: list[str] = field(default_factory=list)  # what the verdict line lists
    summary_failed: bool = False


def _load(state: _Report) -> int | None:
    if not state.shard_dir.is_dir():
        _say(f"--shards {state.shard_dir}: shard directory does not exist; run 'harness run' first")
        return 2
    notes: list[str] = []
    state.shards, state.rejected = load_shards(state.shard_dir, notes)
    for line in notes:
        _say(line)
    for line in state.rejected:
        _say(f"rejected {line}")
    if not state.shards:
        _say(f"no valid shard in {state.shard_dir}; run 'harness run' first")
        return 2
    return None


def _coverage(state: _Report) -> int | None:
    """Name the project's cases that no shard has a result for (see :func:`write_report`)."""
    try:
        dirs = project_catalogue_dirs(state.catalogue_dirs)
        if dirs is None:
            return None
        catalogue = discover(dirs, import_root=Path.cwd())
    except (ConfigError, CatalogueError) as exc:
        _say(str(exc))
        return 2
    for line in catalogue.errors:
        _say(line)
    observed = {r["case"] for _, shard in state.shards for r in shard["results"]}
    for case in catalogue.cases:
        if case.id not in observed:
            _say(f"{case.path}: case {case.id!r} has no result in any shard; run 'harness run --cases {case.id}'")
    return None


def _merge(state: _Report) -> int | None:
    state.matrix = merge(state.shards, state.rejected)
    problems = validate_matrix(state.matrix)
    if problems:  # a bug in the merge, not bad input: say where, and still write the files
        _say(f"matrix.json does not match matrix.schema.json: {problems[0]}")
        state.invalid = True
    return None


def _write(state: _Report) -> int | None:
    """Write the report's files into ``--out``; a directory that cannot be made or written (read
    only, a file in its way, a full disk) is one line naming it and the file, exit 2."""
    out = state.out_dir
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _say(f"--out {out}: cannot create the report directory ({exc.strerror or exc})")
        return 2
    matrix = state.matrix
    name = "matrix.json"
    try:
        _write_bytes(out / name, _matrix_json(matrix))
        name = "COMPATIBILITY.md"
        _write_bytes(out / name, render_markdown(matrix).encode("utf-8"))
        name = "junit.xml"
        _write_bytes(out / name, junit_xml(matrix))
        name = "matrix.png"
        drawn = render_heatmap(matrix, out / name)
        if not drawn:
            _say(MISSING_NOTE)
        name = "matrix.html"
        _write_bytes(out / name, render_html(matrix, heatmap="matrix.png" if drawn else None).encode("utf-8"))
    except OSError as exc:
        _say(f"--out {out}: cannot write {name} ({exc.strerror or exc})")
        return 2
    state.written = ["matrix.json", "COMPATIBILITY.md", "matrix.html", "junit.xml"] + (["matrix.png"] if drawn else [])
    return None


def _summary(state: _Report) -> int | None:
    if state.summary is None:
        return None
    try:
        size = append_summary(state.matrix, state.summary)
    except (OSError, ValueError) as exc:
        _say(f"--summary {state.summary}: cannot append: {exc}")
        state.summary_failed = True
        return None
    state.written.append(f"{size} bytes appended to {state.summary}")
    return None


def _verdict(state: _Report) -> int:
    matrix = state.matrix
    mismatches = [r for r in matrix["results"] if not r["matches"]]
    files = sum(len(r.get("split_shards") or [r.get("shard")]) for r in matrix["runners"])
    shards = f"{len(state.shards)} shard(s)" if files == len(state.shards) else \
        f"{files} shard file(s) of {len(state.shards)} runner(s)"
    lines = [f"harness report: {shards}, {len(matrix['results'])} cells, "
             f"{len(mismatches)} contradict expectations -> {state.out_dir}: {', '.join(state.written)}"]
    broken = sorted({(r["case"], r["runner"]) for r in mismatches if r.get("broken")})
    for case, runner in broken:
        lines.append(f"  BROKEN {case} on {runner}: its in-process control did not pass (a case defect, not a finding)")
    for r in mismatches:
        if r.get("broken"):
            continue
        lines.append(f"  MISMATCH {r['case']} [{r['method']}] on {r['runner']}: {contradiction(r)}")
    for line in lines:
        print(terminal(line, one_line=True))
    if state.rejected or state.summary_failed or state.invalid:
        return 2
    return 1 if mismatches else 0


_STEPS: tuple[Callable[[_Report], int | None], ...] = (_load, _coverage, _merge, _write, _summary)


def write_report(shard_dir: Path, out_dir: Path, summary: Path | None = None,
                 catalogue_dirs: list[Path] | None = None) -> int:
    """Merge every shard in ``shard_dir`` and write the report files into ``out_dir``.

    Args:
        shard_dir: directory of ``*.json`` shards.
        out_dir: where ``matrix.json``, ``COMPATIBILITY.md``, ``matrix.html``, ``junit.xml`` and
            (with matplotlib) ``matrix.png`` go.
        summary: a file to append the compact compatibility table to, such as the file named
            by ``$GITHUB_STEP_SUMMARY``; kept under GitHub's 1 MiB per-step limit.
        catalogue_dirs: a project's catalogue (``--catalogue``; default its ``[tool.harness]
            catalogue``): each of its cases that no shard has a result for is named in one
            line, so a case added but never run does not go unnoticed. The built-in
            catalogue is not checked (shards carry their own case tables).

    Shards are read as by :func:`harness.shard.format.read_shard` (regular files only, bounded in
    size and depth, strict JSON); a ``matrix.json`` this command wrote into ``shard_dir`` (when
    ``out_dir`` is the same directory) is skipped with a note. Every string reaches the outputs
    through :mod:`harness._escape`; ``matrix.json`` is ASCII JSON without NaN, so any string,
    lone surrogates included, round-trips.

    Returns:
        0 when every shard was valid and every observed cell matched its expectation; 1 when
        some observed cell contradicts its expectation; 2 when any shard was rejected (each is
        named on stderr, in one line), no valid shard was found, or the summary could not be
        appended. The report still covers the valid shards.
    """
    state = _Report(Path(shard_dir), Path(out_dir), Path(summary) if summary is not None else None,
                    catalogue_dirs)
    for step in _STEPS:
        code = step(state)
        if code is not None:
            return code
    return _verdict(state)
