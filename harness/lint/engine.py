"""``harness lint`` over files: analyse each, name the catalogue case of each hit, drop what is
suppressed or not selected.

A hit becomes a :class:`Finding` with the case whose ``CASE['matches']['static']`` declaration
matches it most specifically (:meth:`harness.inspect.hints.Hints.case_for_hit`), that case's fix,
and where the committed matrix shows it failing by default (:func:`harness.report.breaks.describe_breaks`).

Suppressions: ``# harness: ignore[HL101]`` (several codes or prefixes separated by commas) or
a bare ``# harness: ignore``, in a comment on the line of the finding.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.lint.analyze import Hit, ModuleAnalysis
from harness.lint.rules import RULES, selected
from harness.lint.sources import Source, SourceError, iter_files, read_source, split_lines

if TYPE_CHECKING:  # pragma: no cover
    from harness.inspect.hints import Hints

__all__ = ["Finding", "LintResult", "lint_paths", "lint_source"]

#: ``# harness: ignore`` or ``# harness: ignore[HL101, HL2]`` (codes or prefixes), in a comment.
_SUPPRESS = re.compile(r"#\s*harness:\s*ignore(?:\[((?:\s*HL[0-9]{0,3}\s*,?)+)\])?(?![\w\[])")
#: A module where none of these appear can give no hit (every rule needs a DataLoader, a class
#: whose base is named ``...Dataset``, or a worker start by name): it is not even parsed (parsing is most of the cost
#: on a large tree), so a syntax error there goes unreported, as it cannot hide a finding.
_RELEVANT = re.compile(r"DataLoader|class\s+\w+\s*\([^)]*Dataset\b|"
                       r"\b(?:spawn|start_processes|Pool|Process|ProcessPoolExecutor)\s*\(")


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


def _comments(text: str) -> dict[int, list[str]]:
    """The comments of a module by line (tokenized, so a ``#`` inside a string is no comment)."""
    out: dict[int, list[str]] = {}
    if "harness:" not in text:
        return out
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.setdefault(tok.start[0], []).append(tok.string)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return out


def _suppressed(comments: dict[int, list[str]], line: int, code: str) -> bool:
    for comment in comments.get(line, ()):
        for match in _SUPPRESS.finditer(comment):
            codes = match.group(1)
            if codes is None or any(code.startswith(c.strip()) for c in codes.split(",") if c.strip()):
                return True
    return False


def _column(lines: list[str], line: int, byte_column: int) -> int:
    """A 1-based character column from :mod:`ast`'s 1-based UTF-8 byte column."""
    if not 1 <= line <= len(lines):
        return byte_column
    return len(lines[line - 1].encode("utf-8")[: byte_column - 1].decode("utf-8", "replace")) + 1


def _message(hit: Hit) -> str:
    reach = f"; it reaches {hit.reaches}" if hit.reaches and hit.rule not in ("HL301",) else ""
    wrapped = f" (inside {', '.join(hit.within)})" if hit.within else ""
    zero = "; num_workers=0 here: it fails once workers are used" if hit.workers == "zero" else ""
    return f"{hit.detail}{reach}{wrapped}{zero}"


def lint_source(source: Source, *, select: Sequence[str] = (), ignore: Sequence[str] = (),
                hints: Hints | None = None) -> list[Finding]:
    """The findings in one source.

    Raises:
        SourceError: it does not parse.
    """
    from harness.report.breaks import describe_breaks

    if source.path.suffix == ".pyi" or not _RELEVANT.search(source.text):  # a stub runs nothing
        return []
    try:
        tree = ast.parse(source.text, filename=str(source.path))
    except SyntaxError as exc:
        if exc.lineno is None:
            raise SourceError(f"{source.path}: does not parse ({exc.msg}); not checked") from None
        cell, line = source.locate(exc.lineno)
        where = f"cell {cell}, line {line}" if cell else f"line {exc.lineno}"
        raise SourceError(f"{source.path}: does not parse ({where}: {exc.msg}); not checked") from None
    except ValueError as exc:  # a NUL byte
        raise SourceError(f"{source.path}: does not parse ({exc}); not checked") from None
    except (RecursionError, MemoryError) as exc:
        raise SourceError(f"{source.path}: does not parse ({type(exc).__name__}: nested too deeply "
                          "or too large); not checked") from None
    try:
        hits = ModuleAnalysis(tree, notebook=source.notebook).hits
    except RecursionError:
        raise SourceError(f"{source.path}: nested too deeply to analyse; not checked") from None
    out = []
    comments = _comments(source.text)
    lines = split_lines(source.text)
    for hit in hits:
        if not selected(hit.rule, tuple(select), tuple(ignore)) or _suppressed(comments, hit.line, hit.rule):
            continue
        case = hints.case_for_hit(hit) if hints is not None else None
        level = RULES[hit.rule].level
        if hit.workers == "zero":
            level = "warning"
        cell, line = source.locate(hit.line)
        out.append(Finding(
            path=source.path, line=line, column=_column(lines, hit.line, hit.column), cell=cell,
            rule=hit.rule, level=level,
            message=_message(hit), case=case.id if case else "", fix=(case.fix or "") if case else "",
            breaks=describe_breaks(case.id) if case else "", hit=hit))
    return out


def lint_paths(paths: Iterable[Path], *, select: Sequence[str] = (), ignore: Sequence[str] = (),
               exclude: Sequence[str] = (), hints: Hints | None = None) -> LintResult:
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
    files = list(iter_files(list(paths), exclude))  # a bad path is an error before anything is read
    result = LintResult()
    for path in files:
        try:
            source = read_source(path)
            result.errors.extend(source.problems)
            result.findings.extend(lint_source(source, select=select, ignore=ignore, hints=hints))
        except SourceError as exc:
            result.errors.append(str(exc))
            continue
        result.files += 1
    result.findings.sort(key=lambda f: (str(f.path), f.cell or 0, f.line, f.column, f.rule))
    return result
