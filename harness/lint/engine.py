"""``harness lint`` over files: analyse each, name the catalogue case of each hit, drop what is
suppressed or not selected.

A hit becomes a :class:`Finding` with the case whose ``CASE['matches']['static']`` declaration
matches it most specifically (:meth:`harness.inspect.hints.Hints.case_for_hit`), that case's fix,
and where the committed matrix shows it failing by default (:func:`harness.report.breaks.describe_breaks`).

Suppressions: ``# harness: ignore[HL101]`` (several codes separated by commas) or a bare
``# harness: ignore`` on the line of the finding.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.lint.analyze import Hit, ModuleAnalysis
from harness.lint.rules import RULES, selected
from harness.lint.sources import Source, SourceError, iter_files, read_source

__all__ = ["Finding", "LintResult", "lint_paths", "lint_source"]

_SUPPRESS = re.compile(r"#\s*harness:\s*ignore(?:\[([A-Z0-9,\s]*)\])?")


@dataclass(frozen=True)
class Finding:
    """One reported hit.

    Attributes:
        path: the file.
        line: 1-based line in the file (for a notebook, in its cell).
        column: 1-based column.
        cell: a notebook's cell (1-based among all its cells), or ``None``.
        rule: the rule code.
        level: ``error`` or ``warning`` (a hazard, or a loader with ``num_workers=0``).
        message: one line: what is wrong and what it reaches.
        case: the catalogue case it stands for, or ``""`` when none matches.
        fix: that case's fix case, or ``""``.
        breaks: where the committed matrix shows that case failing by default (``Windows
            (spawn: error/pickle, emulated); ...``), or ``""``.
        hit: the analysis hit behind it.
    """

    path: Path
    line: int
    column: int
    cell: int | None
    rule: str
    level: str
    message: str
    case: str
    fix: str
    breaks: str
    hit: Hit


@dataclass
class LintResult:
    """The findings of one ``harness lint`` run.

    Attributes:
        findings: sorted by file, cell, line and column.
        files: how many files were read and parsed.
        errors: one line per file that could not be read or parsed (those files are skipped).
    """

    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    errors: list[str] = field(default_factory=list)


def _suppressed(source: Source, line: int, code: str) -> bool:
    lines = source.text.splitlines()
    if not 1 <= line <= len(lines):
        return False
    for match in _SUPPRESS.finditer(lines[line - 1]):
        codes = match.group(1)
        if codes is None or code in {c.strip() for c in codes.split(",")}:
            return True
    return False


def _message(hit: Hit) -> str:
    reach = f"; it reaches {hit.reaches}" if hit.reaches and hit.rule not in ("HL301",) else ""
    wrapped = f" (inside {', '.join(hit.within)})" if hit.within else ""
    zero = "; num_workers=0 here: it fails once workers are used" if hit.workers == "zero" else ""
    return f"{hit.detail}{reach}{wrapped}{zero}"


def lint_source(source: Source, *, select: Sequence[str] = (), ignore: Sequence[str] = (),
                hints=None) -> list[Finding]:
    """The findings in one source.

    Raises:
        SourceError: it does not parse.
    """
    from harness.report.breaks import describe_breaks

    try:
        tree = ast.parse(source.text, filename=str(source.path))
    except SyntaxError as exc:
        cell, line = source.locate(exc.lineno or 0)
        where = f"cell {cell}, line {line}" if cell else f"line {exc.lineno}"
        raise SourceError(f"{source.path}: does not parse ({where}: {exc.msg}); not checked") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SourceError(f"{source.path}: does not parse ({type(exc).__name__}); not checked") from None
    try:
        hits = ModuleAnalysis(tree, notebook=source.notebook).hits
    except RecursionError:
        raise SourceError(f"{source.path}: nested too deeply to analyse; not checked") from None
    out = []
    for hit in hits:
        if not selected(hit.rule, tuple(select), tuple(ignore)) or _suppressed(source, hit.line, hit.rule):
            continue
        case = hints.case_for_hit(hit) if hints is not None else None
        level = RULES[hit.rule].level
        if hit.workers == "zero":
            level = "warning"
        cell, line = source.locate(hit.line)
        out.append(Finding(
            path=source.path, line=line, column=hit.column, cell=cell, rule=hit.rule, level=level,
            message=_message(hit), case=case.id if case else "", fix=(case.fix or "") if case else "",
            breaks=describe_breaks(case.id) if case else "", hit=hit))
    return out


def lint_paths(paths: Iterable[Path], *, select: Sequence[str] = (), ignore: Sequence[str] = (),
               exclude: Sequence[str] = (), hints=None) -> LintResult:
    """Lint every ``.py`` and ``.ipynb`` file under ``paths``.

    Args:
        paths: files and folders (:func:`harness.lint.sources.iter_files`).
        select, ignore: rule codes or prefixes (:func:`harness.lint.rules.selected`).
        exclude: globs of files to leave out of folders.
        hints: the catalogue's :class:`~harness.inspect.hints.Hints` (default: the built-in
            catalogue plus the project's own, :func:`~harness.inspect.hints.catalogue_hints`).

    Raises:
        SourceError: a given path does not exist (before anything is read).
    """
    if hints is None:
        from harness.inspect.hints import catalogue_hints

        hints = catalogue_hints()
    paths = list(paths)
    for given in paths:
        if not given.exists():
            raise SourceError(f"{given}: no such file or folder")
    result = LintResult()
    for path in iter_files(paths, exclude):
        try:
            source = read_source(path)
            result.findings.extend(lint_source(source, select=select, ignore=ignore, hints=hints))
        except SourceError as exc:
            result.errors.append(str(exc))
            continue
        result.files += 1
    result.findings.sort(key=lambda f: (str(f.path), f.cell or 0, f.line, f.column, f.rule))
    return result
