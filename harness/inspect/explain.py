"""``harness explain CASE``: one case's code, why it fails where it does, what was observed,
and the diff that repairs it.

The case is read like every other catalogue access, without importing it (see
:mod:`harness.catalogue.discover`); observed outcomes come from the latest report's
``matrix.json`` (written by ``harness report``), never from running anything.
"""

from __future__ import annotations

import ast
import difflib
import sys
import textwrap
from pathlib import Path
from typing import Any, TextIO

from harness._escape import terminal
from harness._options import DEFAULT_MATRIX
from harness.catalogue.discover import (
    Case,
    Catalogue,
    CatalogueError,
    default_catalogue_dir,
    open_catalogue,
)
from harness.catalogue.literal import case_statement
from harness.classify.outcomes import METHODS, outcome_label
from harness.errors import UsageError
from harness.report.breaks import default_view_lines
from harness.report.merge import validate_matrix
from harness.shard.jsonfile import JSONFileError, load_json_file

__all__ = ["DEFAULT_MATRIX", "code_lines", "explain_case", "explain_command", "fix_diff", "observed_lines"]

_WIDTH = 100


def _mib(value: int | None) -> str:
    return f"{value / 2**20:.0f} MiB" if value else "-"


def _seconds(value: float | None) -> str:
    return f"{value:.2f} s" if value is not None else "-"


_CASE_MARK = "CASE = {...}  # metadata: harness list --json\n"


def code_lines(source: str) -> list[str]:
    """The lines of a case module with its ``CASE = {...}`` literal folded into one line.

    The metadata differs between every case and its fix, so leaving it out keeps a diff to
    what the repair changes in the code.
    """
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return lines
    stmt = case_statement(tree)
    if stmt is None:
        return lines
    start, end = stmt.lineno - 1, stmt.end_lineno or stmt.lineno
    return [*lines[:start], _CASE_MARK, *lines[end:]]


def _shown(case: Case) -> str:
    """The case's file relative to its catalogue root (its own path when outside it)."""
    return case.path.relative_to(case.root).as_posix() if case.path.is_relative_to(case.root) else str(case.path)


def fix_diff(case: Case, fix: Case) -> str:
    """Unified diff (:func:`difflib.unified_diff`) from the case's code to its fix's code.

    Both ``CASE`` literals are folded to one line first (see :func:`code_lines`).

    Args:
        case: the bad case.
        fix: the good case named by ``case.fix``.

    Returns:
        The diff text, file names relative to the catalogue root; empty when the code matches.

    Raises:
        OSError: a source file cannot be read.
    """
    old = code_lines(case.path.read_text(encoding="utf-8"))
    new = code_lines(fix.path.read_text(encoding="utf-8"))
    lines = difflib.unified_diff(old, new, fromfile=_shown(case), tofile=_shown(fix))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def observed_lines(case_id: str, matrix: dict[str, Any]) -> list[str]:
    """What the report observed for ``case_id``: one block per runner.

    Args:
        case_id: the case.
        matrix: a ``matrix.json`` document (``results`` is a list of shard result records).

    Returns:
        Lines of text: per runner, every method's outcome (``outcome/kind``), a mark where it
        contradicts the expectation or the case is broken, then the root cause of each cell
        that did not pass and the costs of the cells that did. Empty when the report has no
        result for the case. The report's text is untrusted: each line is passed through
        :func:`harness._escape.terminal`, so it is one line with no control character.
    """
    by_runner: dict[str, list[dict[str, Any]]] = {}
    for rec in matrix.get("results", []):
        if rec.get("case") == case_id:
            by_runner.setdefault(str(rec.get("runner", "?")), []).append(rec)
    lines: list[str] = []
    order = {m: i for i, m in enumerate(METHODS)}
    for runner, recs in by_runner.items():
        recs.sort(key=lambda r: order.get(str(r.get("method")), len(order)))
        lines.append(f"{runner}:")
        for rec in recs:
            mark = ""
            if rec.get("broken"):
                mark = "  [broken case]"
            elif rec.get("matches") is False:
                mark = f"  [contradicts expected {outcome_label(rec.get('expected', '?'), rec.get('expected_kind'))}]"
            lines.append(f"  {rec.get('method', '?'):<11} {outcome_label(rec.get('outcome', '?'), rec.get('kind'))}{mark}")
            if rec.get("outcome") == "pass":
                cost = (f"first batch {_seconds(rec.get('first_batch_s'))}, run {_seconds(rec.get('duration_s'))}, "
                        f"main RSS {_mib(rec.get('parent_peak_rss_bytes'))}, "
                        f"largest worker RSS {_mib(rec.get('worker_peak_rss_bytes'))}")
                if rec.get("worker_peak_uss_bytes"):
                    cost += f" (private {_mib(rec.get('worker_peak_uss_bytes'))})"
                lines.append(f"{'':14}{cost}")
                for warning in rec.get("warnings") or []:
                    lines.append(f"{'':14}warning: {warning.splitlines()[0] if warning else ''}")
            else:
                cause = rec.get("root_cause") or rec.get("message") or ""
                if cause:
                    lines.append(f"{'':14}{cause}")
    return [terminal(line, one_line=True) for line in lines]


def _load_matrix(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(matrix, None)``, or ``(None, reason)`` when it is absent or unusable."""
    if not path.exists():
        if Path("reports/shards").is_dir():  # a clone of the harness, or a project with its shards
            return None, f"no report at {path}; 'harness report' renders one from the shards in reports/shards/ (or run 'harness run' first to observe this case here)"
        return None, f"no report at {path}; 'harness run --cases CASE' then 'harness report' make one here"
    try:
        data = load_json_file(path)
    except JSONFileError as exc:
        return None, f"{path}: cannot read the report: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None, f"{path}: not a harness matrix.json (no results list)"
    problems = validate_matrix(data)
    if problems:
        return None, f"{path}: not a valid harness matrix.json ({' '.join(problems[0].split())[:200]})"
    return data, None


def _wrap(text: str, indent: str = "  ") -> str:
    return textwrap.fill(text, _WIDTH, initial_indent=indent, subsequent_indent=indent)


def _expected(case: Case) -> str:
    """Each method's expected outcome, then each ``expect_when`` entry."""
    lines = [f"  {m:<11} {outcome_label(case.expect[m], case.expect_kind.get(m))}" for m in METHODS]
    for entry in case.expect_when:
        where = ", ".join(f"{key} {entry[key]}" for key in ("python", "sharing_strategy") if key in entry)
        changes = ", ".join(f"{m} {outcome_label(o, entry.get('expect_kind', {}).get(m))}"
                            for m, o in entry.get("expect", {}).items())
        lines.append(f"  where {where}: {changes}")
    return "".join(f"{line}\n" for line in lines)


def _built_in(case: Case) -> bool:
    """Whether ``case`` is one of the built-in catalogue's (whose observations ship with it)."""
    try:
        return case.path.resolve().is_relative_to(default_catalogue_dir().resolve())
    except CatalogueError:
        return False


def _observed(case: Case, matrix: dict[str, Any] | None, matrix_note: str | None) -> str:
    """What the latest report observed, or why there is nothing to show."""
    if matrix is None:  # a built-in case: the committed matrix's view ships with the package
        note = (matrix_note or "no report").replace("--cases CASE", f"--cases {case.id}")
        return _wrap(note) + "\n" + _packaged_view(case)
    lines = observed_lines(case.id, matrix)
    if lines:
        return "".join(f"  {line}\n" for line in lines)
    said = (f"  the report ({terminal(str(matrix.get('generated_utc', 'undated')), one_line=True)}) "
            f"has no result for this case; run 'harness run --cases {case.id}' then 'harness report'\n")
    return said + _packaged_view(case)


def _packaged_view(case: Case) -> str:
    """The committed matrix's default view of a built-in case, as shipped (``""`` for others)."""
    packaged = default_view_lines(case.id) if _built_in(case) else []
    if not packaged:
        return ""
    return ("  the default view of the committed matrix, packaged with the harness:\n"
            + "".join(f"  {terminal(ln, one_line=True)}\n" for ln in packaged))


def _code(case: Case) -> str:
    """The case's source, indented.

    Raises:
        OSError: the file cannot be read.
    """
    source = case.path.read_text(encoding="utf-8")
    return textwrap.indent(source, "  ", lambda line: True) + ("" if source.endswith("\n") else "\n")


def _fix(case: Case, catalogue: Catalogue) -> str:
    """The fix with its why and the diff to it, or which cases this one fixes.

    Raises:
        OSError: a source file cannot be read.
    """
    if case.fix:
        fix = catalogue.by_id()[case.fix]
        diff = fix_diff(case, fix)
        return f"  {fix.id}: {fix.title}\n" + _wrap(fix.why, "    ") + "\n\n" + (
            diff or "  (the fix's source is identical)\n")
    fixes = sorted(c.id for c in catalogue.cases if c.fix == case.id)
    if fixes:
        return f"  none needed: this is the fix for {', '.join(fixes)}\n"
    return "  none needed: every start method is expected to pass\n"


def explain_case(case: Case, catalogue: Catalogue, matrix: dict[str, Any] | None, matrix_note: str | None,
                 out: TextIO) -> None:
    """Write the explanation of ``case`` to ``out``: its header, expected outcomes, why, sources,
    what the latest report observed, its code, and its fix.

    Args:
        case: the case to explain.
        catalogue: the catalogue it belongs to (for its fix and the cases it fixes).
        matrix: the latest ``matrix.json`` document, or ``None``.
        matrix_note: why there is no matrix (printed in its place), or ``None``.
        out: where the text goes.

    Raises:
        OSError: the case's or its fix's source cannot be read.
    """
    kind = "script case, runs as __main__" if case.script else "module case"
    out.write(f"{case.id}: {case.title}\n")
    out.write(f"  family {case.family}; {kind}; {case.path}\n\n")
    out.write("Expected\n" + _expected(case))
    out.write("\nWhy\n" + _wrap(case.why) + "\n")
    out.write("\nSources\n" + "".join(f"  {src}\n" for src in case.sources))
    out.write("\nObserved (latest report)\n" + _observed(case, matrix, matrix_note))
    out.write(f"\nCode ({case.path.name})\n" + _code(case))
    out.write("\nFix\n" + _fix(case, catalogue))


def explain_command(case_id: str, catalogue_dir: Path | list[Path] | None = None, matrix_path: Path | None = None,
                    out: TextIO | None = None) -> int:
    """``harness explain CASE``; returns the exit code.

    Args:
        case_id: the case id.
        catalogue_dir: catalogue directories (default: the project's ``[tool.harness]
            catalogue``, else the built-in one).
        matrix_path: the report to read observations from (default: ``reports/matrix.json``).
        out: where the explanation goes (default: stdout).

    Returns:
        0 when explained (a missing report is said in place of the observations).

    Raises:
        UsageError: an unknown case id, or an explicitly given report that cannot be read.
        CatalogueError: an unreadable catalogue, or an unreadable case or fix file.
    """
    out = out or sys.stdout
    catalogue = open_catalogue(catalogue_dir)
    by_id = catalogue.by_id()
    case = by_id.get(case_id)
    if case is None:
        close = difflib.get_close_matches(case_id, list(by_id), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see 'harness list'"
        raise UsageError(f"CASE: unknown case {case_id!r}{hint}")
    if case.fix and case.fix not in by_id:
        raise CatalogueError(f"{case.path}: fix {case.fix!r} names no case in the catalogue")
    path = Path(matrix_path) if matrix_path is not None else DEFAULT_MATRIX
    matrix, note = _load_matrix(path)
    if matrix is None and matrix_path is not None and path.exists():
        raise UsageError(note)
    try:
        explain_case(case, catalogue, matrix, note, out)
    except BrokenPipeError:
        raise  # the reader went away (``| head``): not the case file's fault
    except OSError as exc:
        raise CatalogueError(f"{getattr(exc, 'filename', None) or case.path}: cannot read: {exc.strerror or exc}") from None
    return 0
