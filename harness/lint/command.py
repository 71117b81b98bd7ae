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

from harness.errors import UsageError

__all__ = ["lint_command"]


def _codes(values: Sequence[str] | None, option: str) -> tuple[str, ...]:
    from harness.lint.rules import check_codes

    codes = tuple(c.strip() for v in values or () for c in v.split(",") if c.strip())
    try:
        return check_codes(codes, option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def lint_command(paths: Sequence[str | Path], *, output_format: str = "text", select: Sequence[str] | None = None,
                 ignore: Sequence[str] | None = None) -> int:
    """Lint ``paths`` (default: ``[tool.harness.lint] paths``, else ``.``) and print the findings.

    Args:
        paths: files and folders.
        output_format: one of :data:`harness.lint.output.FORMATS`.
        select, ignore: rule codes or prefixes (comma-separated or repeated); they replace
            the configuration's.

    Returns:
        The exit code (0, 1, or 2 for a path that does not exist).

    Raises:
        UsageError: an unknown rule code.
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
    try:
        result = lint_paths(targets, select=chosen_select, ignore=chosen_ignore, exclude=config.exclude)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    for line in result.errors:
        say(line, command="lint")
    text = render(result, output_format)
    try:
        if sys.stdout is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 1 if result.findings or result.errors else 0
