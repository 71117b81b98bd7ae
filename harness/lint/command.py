"""``harness lint [PATH ...]``: the command around :func:`harness.lint.engine.lint_paths`.

Exit codes, as for every command: 0 no finding, 1 findings (warnings included), 2 usage (a
path that does not exist, an unknown rule code, an unusable ``[tool.harness.lint]``). A file
that cannot be read or parsed is one line on stderr naming it; the others are still checked,
and the exit code is at least 1 (the file was not checked, so it is not known to be clean).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from harness.lint.engine import LintResult

__all__ = ["lint_command"]


def _codes(values: Sequence[str] | None, option: str) -> tuple[str, ...]:
    from harness.lint.rules import check_codes

    codes = tuple(c.strip() for v in values or () for c in v.split(",") if c.strip())
    try:
        return check_codes(codes, option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def lint_command(paths: Sequence[str | Path], *, output_format: str = "text", select: Sequence[str] | None = None,
                 ignore: Sequence[str] | None = None, fix: bool = False, diff: bool = False,
                 summary: Path | None = None) -> int:
    """Lint ``paths`` (default: ``[tool.harness.lint] paths``, else ``.``) and print the findings.

    Args:
        paths: files and folders.
        output_format: one of :data:`harness.lint.output.FORMATS`.
        select, ignore: rule codes or prefixes (comma-separated or repeated); they replace
            the configuration's.
        fix: first rewrite what :mod:`harness.lint.fix` can prove (:mod:`harness.lint.rewrite`),
            saying on stderr what was fixed and why the rest was not; then lint what is left.
        diff: print the fixes as a unified diff on stdout and write nothing; the exit code is 1
            when there is a diff (or a file could not be read), else 0.
        summary: a file to append a Markdown table of the findings to
            (:func:`harness.lint.output.render_summary`), whatever the format, e.g. the job
            summary ``$GITHUB_STEP_SUMMARY`` of a GitHub Actions step; not with ``diff``.

    Returns:
        The exit code (0, 1, or 2 for a path that does not exist, or a summary that cannot be
        written). With ``fix``: 1 when findings remain.

    Raises:
        UsageError: an unknown rule code, or ``summary`` with ``diff``.
        ConfigError: the project's ``pyproject.toml`` is unusable.
    """
    from harness._progress import say
    from harness.catalogue.config import load_config
    from harness.lint.engine import lint_paths
    from harness.lint.output import render
    from harness.lint.sources import SourceError

    if any(str(p) == "" for p in paths):
        raise UsageError("an empty path was given (use . for the current folder)")
    given = [Path(p) for p in paths]
    config = load_config().lint
    chosen_select = _codes(select, "--select") if select else config.select
    chosen_ignore = _codes(ignore, "--ignore") if ignore else config.ignore
    targets = given or list(config.paths) or [Path(".")]
    if fix and diff:
        raise UsageError("--fix and --diff: choose one (--diff shows what --fix would write)")
    if diff and summary is not None:
        raise UsageError("--summary and --diff: --diff reports no findings to summarize")
    if fix or diff:
        from harness.lint.rewrite import rewrite_paths

        try:
            report = rewrite_paths(targets, write=fix, select=chosen_select, ignore=chosen_ignore,
                                   exclude=config.exclude)
        except SourceError as exc:
            raise UsageError(str(exc)) from None
        for line in report.notes:
            say(line, command="lint")
        verb = "fixed" if fix else "would fix"
        say(f"{verb} {report.fixed} finding(s) in {report.files} file(s)", command="lint")
        if diff:
            for line in report.errors:
                say(line, command="lint")
            _write(report.diff)
            return 1 if report.diff or report.errors else 0
        for line in report.errors:
            say(line, command="lint")
        if report.errors:
            result = lint_paths(targets, select=chosen_select, ignore=chosen_ignore, exclude=config.exclude)
            _write(render(result, output_format))
            return 1 if _summary(summary, result) else 2
    try:
        result = lint_paths(targets, select=chosen_select, ignore=chosen_ignore, exclude=config.exclude)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    for line in result.errors:
        say(line, command="lint")
    _write(render(result, output_format))
    if not _summary(summary, result):
        return 2
    return 1 if result.findings or result.errors else 0


def _summary(path: Path | None, result: LintResult) -> bool:
    """Append :func:`harness.lint.output.render_summary` to ``path`` (nothing when ``None``);
    ``False`` (and one line on stderr) when it cannot be written."""
    from harness._progress import say
    from harness.lint.output import render_summary

    if path is None:
        return True
    try:
        with Path(path).open("a", encoding="utf-8") as f:
            f.write(render_summary(result))
    except OSError as exc:
        say(f"error: --summary {path}: {exc.strerror or exc}", command="lint")
        return False
    return True


def _write(text: str) -> None:
    try:
        if sys.stdout is not None and text:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BrokenPipeError:
        pass
