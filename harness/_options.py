"""Every option of the ``harness`` command line, declared once with its default and its help.

:data:`COMMANDS` lists the subcommands with their :class:`Option` declarations;
:func:`harness._cli.build_parser` turns them into argparse parsers, and the task functions
import their defaults (:data:`DEFAULT_TIMEOUT_S`, :data:`DEFAULT_WORKERS`, ...) from here, so a
default is written in one place. An option renamed keeps its old spelling as an alias that
still works but is not listed by ``--help`` (``--methods`` and ``--method`` for
``--start-method``).

:func:`resolve_start_method` is the one reading of a start-method value, for the command line,
``harness diagnose`` and ``reproduce`` as functions, and the pytest plugin.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from harness._policy import PROFILES, available_methods, resolve_method_alias
from harness.classify.outcomes import METHODS
from harness.errors import UsageError

_SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

__all__ = [
    "COMMANDS",
    "DEFAULT_MATRIX",
    "DEFAULT_MEMORY_GIB",
    "DEFAULT_REPORT_DIR",
    "DEFAULT_SHARD_DIR",
    "DEFAULT_START_METHOD",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_WORKERS",
    "ENVIRONMENT",
    "GIB",
    "Bounds",
    "Command",
    "Option",
    "bounds",
    "env_number",
    "max_split_parts",
    "parse_number",
    "parse_split",
    "resolve_start_method",
    "scaled_timeout",
]

#: Seconds a cell (``run``), a diagnosis child (``diagnose``) or a script (``reproduce``) may
#: run before its process tree is killed; a case's own ``timeout_s`` wins for its cells.
DEFAULT_TIMEOUT_S = 60.0
#: ``DataLoader`` workers per cell (``num_workers``; ``in-process`` cells use 0), and the
#: worker count ``diagnose`` assumes for a bare ``Dataset``.
DEFAULT_WORKERS = 2
#: GiB of address space ``diagnose``'s child may map beyond what it has once torch is imported
#: (POSIX); ``HARNESS_DIAGNOSE_MEMORY_GIB`` overrides it, ``0`` lifts the bound.
DEFAULT_MEMORY_GIB = 4.0
#: The start method ``diagnose`` and ``reproduce`` check when none is given (Windows, macOS).
DEFAULT_START_METHOD = "spawn"
#: Where ``run`` writes its shard and ``report`` reads the shards.
DEFAULT_SHARD_DIR = Path("reports/shards")
#: Where ``report`` writes ``matrix.json``, ``COMPATIBILITY.md`` and the rest.
DEFAULT_REPORT_DIR = Path("reports")
#: The report ``explain`` reads observed outcomes from.
DEFAULT_MATRIX = DEFAULT_REPORT_DIR / "matrix.json"


def resolve_start_method(
    name: str,
    *,
    option: str = "--start-method",
    platforms: bool = True,
    allowed: Sequence[str] | None = None,
    available: bool = False,
) -> str:
    """The start method ``name`` stands for: ``fork``, ``spawn`` or ``forkserver`` as it is, a
    platform alias (``windows``, ``macos``, ``linux``, ``linux-py3.13``, ``linux-py3.14``, or a
    platform id of :data:`harness._policy.PLATFORMS`) as that platform's default start method
    (:func:`harness._policy.resolve_method_alias`).

    Args:
        name: the value given.
        option: the option or argument the value came from, named in the error.
        platforms: accept platform aliases; without them, ``name`` must be one of ``allowed``
            (default: the matrix columns, ``in-process`` included, as ``harness run`` takes).
        allowed: the start methods accepted, after resolving an alias (default: every one).
        available: also require that this interpreter offers the start method
            (:func:`multiprocessing.get_all_start_methods`).

    Raises:
        UsageError: one line naming ``option``: an unknown name, a method not in ``allowed``,
            or (with ``available``) one this platform does not have.
    """
    if not platforms:
        choices = METHODS if allowed is None else allowed
        if name not in choices:
            hint = ""
            if name in PROFILES:  # a platform: its start methods are what a profile emulates
                hint = f"; to run as on {name}, use --profile {name}"
            raise UsageError(
                f"{option}: unknown start method {name!r} (choose from {', '.join(choices)}){hint}"
            )
        return name
    try:
        method = resolve_method_alias(name)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if allowed is not None and method not in allowed:
        why = "pickles nothing at worker start" if method == "fork" else "is not accepted here"
        raise UsageError(
            f"{option} {name!r} resolves to {method!r}, which {why}; choose one of "
            f"{', '.join(allowed)} or a platform that uses them"
        )
    if available and method not in available_methods():
        raise UsageError(
            f"{option} {name}: start method {method!r} does not exist on this platform"
        )
    return method


#: Bytes in a GiB.
GIB = 1 << 30
_MAX_DIGITS = 30  # longer integers are refused before int() is asked to parse them


@cache
def _schema_property(name: str, *path: str) -> dict[str, Any]:
    """The JSON Schema of one property of ``harness/schemas/<name>.schema.json``, by its path."""
    node: dict[str, Any] = json.loads((_SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    for key in path:
        node = node[key]
    return node


@dataclass(frozen=True)
class Bounds:
    """The values one numeric input may take: an option, or a ``HARNESS_*`` variable.

    Attributes:
        minimum: the smallest value (see ``exclusive``).
        maximum: the largest value accepted.
        integer: whole numbers only (written in decimal digits).
        exclusive: values must be greater than ``minimum``, not equal to it.
        zero: ``0`` is accepted too, with a meaning of its own (no bound), whatever
            ``minimum`` is.
        what: how the accepted range is described when ``minimum`` is not met
            (``"a finite number > 0"``).
    """

    minimum: float
    maximum: float
    integer: bool = False
    exclusive: bool = False
    zero: bool = False
    what: str = "a finite number > 0"


@cache
def _bounds() -> dict[str, Bounds]:
    """Every numeric input's :class:`Bounds`, from the JSON Schemas of the records it ends up
    in, so that no accepted value can make a shard that the schema refuses, or overflow a wait
    (:data:`threading.TIMEOUT_MAX`) or ``setrlimit``."""
    runner = ("properties", "runner", "properties")
    result = ("$defs", "result", "properties")
    timeout_max = min(float(_schema_property("shard", *runner, "timeout_s")["maximum"]), threading.TIMEOUT_MAX)
    scale = _schema_property("shard", *runner, "timeout_scale")
    byte_max = int(_schema_property("shard", *result, "parent_peak_rss_bytes")["maximum"])
    return {
        "timeout": Bounds(0.0, timeout_max, exclusive=True),
        "timeout_scale": Bounds(float(scale["exclusiveMinimum"]), float(scale["maximum"]), exclusive=True),
        "jobs": Bounds(1, _schema_property("shard", *runner, "cpu_count")["maximum"], integer=True, what="> 0"),
        "workers": Bounds(1, _schema_property("shard", *result, "workers_seen")["maximum"], integer=True,
                          what="> 0"),
        # Half the largest byte count a shard holds: the child adds what it has mapped already.
        "memory_gib": Bounds(1 / GIB, (byte_max // 2) / GIB, zero=True,
                             what=f"0 (no bound) or a finite number of GiB from {1 / GIB:.2g} (one byte)"),
    }


def bounds(kind: str) -> Bounds:
    """The :class:`Bounds` of one kind of numeric input.

    Args:
        kind: ``timeout`` (seconds: ``--timeout`` of ``run``, ``diagnose`` and ``reproduce``,
            and a timeout times ``--timeout-scale``), ``timeout_scale`` (``--timeout-scale``,
            ``HARNESS_TIMEOUT_SCALE``), ``jobs`` (``--jobs``), ``workers`` (``--num-workers``)
            or ``memory_gib`` (GiB, ``HARNESS_DIAGNOSE_MEMORY_GIB``).

    Raises:
        KeyError: an unknown kind.
    """
    return _bounds()[kind]


#: The ``HARNESS_*`` environment variables a user sets, each with the kind of number it holds
#: (:func:`bounds`). The others (``HARNESS_CELL_*``, ``HARNESS_CONTAINMENT_TOKEN``,
#: ``HARNESS_SHARING_STRATEGY``) are set by the harness for its own child processes.
ENVIRONMENT: dict[str, str] = {
    "HARNESS_TIMEOUT_SCALE": "timeout_scale",
    "HARNESS_DIAGNOSE_MEMORY_GIB": "memory_gib",
}


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error line: on one line, cut after ``limit`` characters."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text)} characters)"


def _number(value: float) -> str:
    """A bound as written in an error: ``1000000000``, ``0.5``."""
    return f"{value:.12g}"


def _problem(text: str, limits: Bounds, echo: bool = True) -> tuple[float | int | None, str]:
    """``(value, "")`` for an accepted ``text``, else ``(None, what is wrong)``, quoting
    ``text`` unless ``echo`` is false (the caller's label quotes it already)."""
    raw = text.strip()
    text = _shown(text)
    got = f", got {text}" if echo else ""
    what = f": {text}" if echo else ""
    if limits.integer:
        if not re.fullmatch(r"[+-]?[0-9]+", raw):
            return None, f"not an integer{what}"
        if len(raw.lstrip("+-0")) > _MAX_DIGITS:
            return None, f"must be at most {_number(limits.maximum)}{got}"
        value: float | int = int(raw)
    else:
        try:
            value = float(raw)
        except ValueError:
            return None, f"not a number{what}"
    if limits.zero and value == 0:
        return 0, ""
    if not math.isfinite(value) or value < limits.minimum or (limits.exclusive and value == limits.minimum):
        return None, f"must be {limits.what}{got}"
    if value > limits.maximum:
        return None, f"must be at most {_number(limits.maximum)}{got}"
    return value, ""


def parse_number(text: str, kind: str, label: str, *, echo: bool = True) -> float | int:
    """``text`` as a number within :func:`bounds` of ``kind``: the one check of every numeric
    option and ``HARNESS_*`` variable.

    Args:
        text: the value as given (surrounding blanks are ignored).
        kind: see :func:`bounds`.
        label: what the value came from, named in the error (``--timeout``,
            ``HARNESS_TIMEOUT_SCALE='1e308'``).
        echo: quote ``text`` in the error (off when ``label`` quotes it already).

    Returns:
        An ``int`` for integer kinds, else a finite ``float``.

    Raises:
        UsageError: not a number (or not an integer), ``nan`` or infinite, out of bounds
            (negative, zero where zero means nothing, over the maximum); one line naming
            ``label``.
    """
    value, problem = _problem(text, bounds(kind), echo)
    if value is None:
        raise UsageError(f"{label}: {problem}")
    return value


def max_split_parts() -> int:
    """The most parts ``harness run --split K/N`` takes: the shard schema's bound on
    ``runner.split.parts``."""
    return int(_schema_property("shard", "properties", "runner", "properties", "split", "properties",
                                "parts")["maximum"])


def _split_problem(text: str) -> tuple[tuple[int, int] | None, str]:
    """``((part, parts), "")`` for an accepted ``--split`` value, else ``(None, what is wrong)``."""
    shown = _shown(text)
    digits = f"([0-9]{{1,{_MAX_DIGITS}}})"
    found = re.fullmatch(rf"\s*{digits}\s*/\s*{digits}\s*", text)
    if found is None:
        return None, f"not K/N (part K of N parts, such as 2/3): {shown}"
    part, parts = int(found.group(1)), int(found.group(2))
    most = max_split_parts()
    if parts < 1:
        return None, f"N must be at least 1, got {shown}"
    if parts > most:
        return None, f"N must be at most {most}, got {shown}"
    if not 1 <= part <= parts:
        return None, f"K must be from 1 to {parts}, got {shown}"
    return (part, parts), ""


def parse_split(text: str, label: str = "--split") -> tuple[int, int]:
    """A ``harness run --split`` value, ``K/N``: the K-th of N parts of the planned cells.

    Args:
        text: the value as given, such as ``"2/3"`` (blanks around the numbers are ignored).
        label: what the value came from, named in the error.

    Returns:
        ``(part, parts)``, with ``1 <= part <= parts <=`` :func:`max_split_parts`; ``(1, 1)`` is
        the whole catalogue, as without ``--split``.

    Raises:
        UsageError: not two whole numbers joined by ``/`` (``3``, ``a/b``), ``N`` below 1 or
            over the bound, ``K`` outside ``1..N`` (``0/3``, ``4/3``); one line naming ``label``.
    """
    value, problem = _split_problem(str(text))
    if value is None:
        raise UsageError(f"{label}: {problem}")
    return value


def _split_argument(text: str) -> tuple[int, int]:
    """The argparse ``type`` of ``--split`` (its errors read ``argument --split: ...``)."""
    value, problem = _split_problem(text)
    if value is None:
        raise argparse.ArgumentTypeError(problem)
    return value


_split_argument.__name__ = "split"


def env_number(name: str, environ: Mapping[str, str] | None = None) -> float | int | None:
    """The value of the ``HARNESS_*`` variable ``name`` (one of :data:`ENVIRONMENT`), checked
    by :func:`parse_number`; ``None`` when it is unset or blank.

    Raises:
        UsageError: a bad value: ``NAME='VALUE': what is wrong``.
    """
    text = (os.environ if environ is None else environ).get(name, "")
    if not text.strip():
        return None
    return parse_number(text, ENVIRONMENT[name], f"{name}={_shown(text)}", echo=False)


def scaled_timeout(timeout_s: float, scale: float) -> float:
    """``timeout_s * scale``, the timeout a cell gets, checked against :func:`bounds` ``timeout``.

    Raises:
        UsageError: the product is over the largest timeout (one line naming both).
    """
    limit = bounds("timeout").maximum
    product = timeout_s * scale
    if not math.isfinite(product) or product > limit:
        raise UsageError(f"--timeout {_number(timeout_s)} times a timeout scale of {_number(scale)} is over "
                         f"the largest timeout, {_number(limit)} s")
    return product


def _argument(kind: str) -> Callable[[str], Any]:
    """An argparse ``type`` for a number of ``kind`` (its errors read ``argument --x: ...``)."""

    def convert(text: str) -> float | int:
        value, problem = _problem(text, bounds(kind))
        if value is None:
            raise argparse.ArgumentTypeError(problem)
        return value

    convert.__name__ = kind
    return convert


class _RecordFlag(argparse.Action):
    """Store the value as ``store`` does, and which spelling gave it in ``<dest>_flag``, so an
    error about the value names the option as the user wrote it (``--method`` or
    ``--start-method``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_flag", option_string)


@dataclass(frozen=True)
class Option:
    """One option (or positional argument) of a subcommand.

    Attributes:
        flags: its spellings for ``--help`` (``("--timeout",)``), or its name when positional.
        help: the ``--help`` text; ``{default}`` in it is replaced by :attr:`default`.
        default: the value when not given.
        aliases: older spellings that still work, not shown by ``--help``.
        settings: the rest of :meth:`argparse.ArgumentParser.add_argument`'s keywords
            (``type``, ``metavar``, ``nargs``, ``choices``, ``action``, ``dest``, ``const``).
    """

    flags: tuple[str, ...]
    help: str
    default: Any = None
    aliases: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds the value."""
        return str(self.settings.get("dest") or self.flags[0].lstrip("-").replace("-", "_"))

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Declare this option, and its hidden aliases, on ``parser``."""
        shown = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        kwargs = {**self.settings, "help": self.help.replace("{default}", shown)}
        if self.settings.get("action") not in ("store_const", "store_true"):
            kwargs.setdefault("default", self.default)
        elif self.settings.get("action") == "store_true":
            kwargs["default"] = False
        if self.aliases:
            kwargs = {**kwargs, "dest": self.dest, "action": _RecordFlag}
        parser.add_argument(*self.flags, **kwargs)
        if self.aliases:
            parser.add_argument(
                *self.aliases, **{**kwargs, "default": argparse.SUPPRESS, "help": argparse.SUPPRESS}
            )


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help, and its options in ``--help`` order."""

    name: str
    help: str
    options: tuple[Option, ...]
    usage: str | None = None
    epilog: str | None = None


def _timeout(help: str) -> Option:
    """``--timeout S``: ``run``, ``diagnose`` and ``reproduce`` each say what it bounds."""
    return Option(
        ("--timeout",), help, DEFAULT_TIMEOUT_S, settings={"type": _argument("timeout"), "metavar": "S"}
    )


def _start_method(alias: str, help: str, default: str | None, dest: str, **settings: Any) -> Option:
    """``--start-method``, with ``alias``, the spelling it replaced, still accepted."""
    return Option(
        ("--start-method",),
        f"{help}; also spelled {alias}",
        default,
        (alias,),
        {"metavar": "METHOD", "dest": dest, **settings},
    )


CATALOGUE = Option(
    ("--catalogue",),
    "a directory of case modules (repeatable; default: the [tool.harness] "
    "catalogue of ./pyproject.toml, else the built-in catalogue)",
    settings={"type": Path, "action": "append", "metavar": "DIR"},
)
JSON_OBJECT = Option(("--json",), "print one JSON object", settings={"action": "store_true"})
_PLATFORM_NAMES = "fork, spawn, forkserver, or a platform: windows, macos, linux, linux-py3.14"

RUN = Command(
    "run",
    "run the catalogue under every start method and write a shard",
    (
        Option(
            ("--cases",),
            "case ids or globs (default: all)",
            settings={"nargs": "+", "metavar": "ID_OR_GLOB"},
        ),
        Option(
            ("--families",), "only these families", settings={"nargs": "+", "metavar": "FAMILY"}
        ),
        _start_method(
            "--methods",
            f"start methods to run (default: all of {', '.join(METHODS)})",
            None,
            "methods",
            nargs="+",
        ),
        _timeout("per-cell timeout in seconds (default: {default})"),
        Option(
            ("--jobs",),
            "cells run in parallel (default: usable CPU count)",
            settings={"type": _argument("jobs"), "metavar": "N"},
        ),
        Option(
            ("--out",),
            "shard directory (default: {default})",
            DEFAULT_SHARD_DIR,
            settings={"type": Path, "metavar": "DIR"},
        ),
        CATALOGUE,
        Option(
            ("--isolation",),
            "warm: fork each cell from a template that has imported torch (Linux); "
            "fresh: a new interpreter per cell; auto (default): warm where available",
            "auto",
            settings={"choices": ("auto", "warm", "fresh")},
        ),
        Option(
            ("--changed",),
            "run only the cells whose inputs (case files and what they import, the "
            "harness, Python, torch, platform) differ from the shard in --out; keep the rest",
            settings={"action": "store_true"},
        ),
        Option(
            ("--resume",),
            "continue the interrupted run whose partial shard is in --out",
            settings={"action": "store_true"},
        ),
        Option(
            ("--profile",),
            "emulate a platform on this machine: its start methods (others are "
            "unsupported), torch sharing strategy and temp-path length; the shard says so",
            settings={"choices": sorted(PROFILES)},
        ),
        Option(
            ("--timeout-scale",),
            "multiply every cell's timeout by X on a slow runner "
            "(default: $HARNESS_TIMEOUT_SCALE or 1)",
            settings={"type": _argument("timeout_scale"), "metavar": "X"},
        ),
        Option(
            ("--split",),
            "run only part K of N of the planned cells (one CI job each), balanced by the "
            "durations of this runner's shards in --out; each part writes its own shard, "
            "and 'harness report' merges them into one column (see docs/ci/split.md)",
            settings={"type": _split_argument, "metavar": "K/N"},
        ),
    ),
)

REPORT = Command(
    "report",
    "merge shards into matrix.json, COMPATIBILITY.md, matrix.html, junit.xml and matrix.png",
    (
        Option(
            ("--shards",),
            "shard directory (default: {default})",
            DEFAULT_SHARD_DIR,
            settings={"type": Path, "metavar": "DIR"},
        ),
        Option(
            ("--out",),
            "report directory (default: {default})",
            DEFAULT_REPORT_DIR,
            settings={"type": Path, "metavar": "DIR"},
        ),
        CATALOGUE,
        Option(
            ("--summary",),
            "append the compact compatibility table to FILE, e.g. $GITHUB_STEP_SUMMARY "
            "(kept under 1 MiB, with a short form when larger)",
            settings={"type": Path, "metavar": "FILE"},
        ),
    ),
)

LIST = Command(
    "list",
    "list the catalogue's cases",
    (
        Option(("--json",), "print a JSON array", settings={"action": "store_true"}),
        CATALOGUE,
    ),
)

EXPLAIN = Command(
    "explain",
    "show a case's code, why it fails where it does, what was observed, and the diff to its fix",
    (
        Option(("case",), "a case id (see 'harness list')", settings={"metavar": "CASE"}),
        CATALOGUE,
        Option(
            ("--matrix",),
            f"report to read observed outcomes from (default: {DEFAULT_MATRIX})",
            settings={"type": Path, "metavar": "FILE"},
        ),
    ),
)

DIAGNOSE = Command(
    "diagnose",
    "find every object in your loader that breaks a spawn/forkserver worker "
    "start: not pickled, not unpickled, or a first batch that cannot come back",
    (
        Option(
            ("target",),
            "package.module:attr or path/to/file.py:attr; attr is a DataLoader, a Dataset, or a "
            "zero-argument callable returning one (several: each is diagnosed in turn)",
            settings={"metavar": "TARGET", "nargs": "+"},
        ),
        _start_method(
            "--method",
            "start method whose worker start is checked: spawn, forkserver, or a platform "
            "that uses one (windows, macos, linux-py3.14; default: {default})",
            DEFAULT_START_METHOD,
            "method",
        ),
        Option(
            ("--num-workers",),
            "worker count for the payload total (default: the loader's; "
            f"{DEFAULT_WORKERS} for a Dataset)",
            settings={"type": _argument("workers"), "metavar": "N"},
        ),
        Option(
            ("--format",),
            "text (default); json: one object (a list of them for several targets); github: "
            "one ::error workflow command per problem, ::warning per hazard, at its file and line",
            "text",
            settings={"choices": ("text", "json", "github"), "dest": "format"},
        ),
        Option(
            ("--json",),
            "the same as --format json",
            settings={"action": "store_const", "const": "json", "dest": "format"},
        ),
        _timeout(
            "kill the process running your code, and its process tree, after S seconds (default: "
            "{default}); its address space by $HARNESS_DIAGNOSE_MEMORY_GIB, in GiB (default: "
            f"{DEFAULT_MEMORY_GIB:g}; 0: none)"
        ),
        Option(
            ("--summary",),
            "also append a Markdown summary of every target to FILE, whatever the format, "
            "e.g. $GITHUB_STEP_SUMMARY",
            settings={"type": Path, "metavar": "FILE"},
        ),
    ),
)

CLASSIFY = Command(
    "classify",
    "classify a traceback pasted from a failed run (a file, or - for stdin)",
    (
        Option(
            ("file",),
            "a text file with the console output, parent and worker tracebacks together "
            "(default: - reads stdin)",
            "-",
            settings={"metavar": "FILE", "nargs": "?"},
        ),
        JSON_OBJECT,
    ),
)

REPRODUCE = Command(
    "reproduce",
    "run your script as __main__ under a forced start method",
    (
        Option(
            ("script",), "the Python script to run", settings={"type": Path, "metavar": "SCRIPT"}
        ),
        _start_method(
            "--method", f"{_PLATFORM_NAMES} (default: {{default}})", DEFAULT_START_METHOD, "method"
        ),
        _timeout("kill the run and its process tree after S seconds (default: {default})"),
        Option(("--output",), "show the end of the script's own output on a pass too "
               "(on a failure it is always shown)", settings={"action": "store_true"}),
        JSON_OBJECT,
    ),
    usage="harness reproduce SCRIPT [--start-method METHOD] [--timeout S] [--output] [--json] [-- ARGS ...]",
    epilog="Everything after -- is passed to the script as sys.argv[1:].",
)

LINT = Command(
    "lint",
    "check Python files and notebooks for what a spawn or forkserver worker start cannot take, "
    "without running them",
    (
        Option(
            ("paths",),
            "files and folders (.py and .ipynb; default: [tool.harness.lint] paths, else .)",
            settings={"metavar": "PATH", "nargs": "*"},
        ),
        Option(
            ("--format",),
            "text (default); json: one object; github: workflow commands; sarif: SARIF 2.1.0",
            "text",
            settings={"choices": ("text", "json", "github", "sarif"), "dest": "format"},
        ),
        Option(("--json",), "the same as --format json",
               settings={"action": "store_const", "const": "json", "dest": "format"}),
        Option(("--select",), "rule codes or prefixes to report, comma-separated (default: all, "
               "or [tool.harness.lint] select)", settings={"action": "append", "metavar": "CODES"}),
        Option(("--ignore",), "rule codes or prefixes never reported, comma-separated",
               settings={"action": "append", "metavar": "CODES"}),
        Option(("--fix",), "rewrite the .py files where a fix is proven (HL101, HL102, HL103, "
               "HL301, HL302), then report what is left", settings={"action": "store_true"}),
        Option(("--diff",), "print the fixes as a unified diff and write nothing (exit 1 when "
               "there is one)", settings={"action": "store_true"}),
        Option(("--summary",), "also append a Markdown table of the findings to FILE, whatever "
               "the format, e.g. $GITHUB_STEP_SUMMARY (not with --diff)",
               settings={"type": Path, "metavar": "FILE"}),
    ),
)

#: The subcommands, in ``--help`` order.
COMMANDS: tuple[Command, ...] = (RUN, REPORT, LIST, EXPLAIN, DIAGNOSE, CLASSIFY, REPRODUCE, LINT)
