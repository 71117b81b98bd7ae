"""Command-line interface: a thin argparse shim over the task functions.

Exit codes (all subcommands): 0 done and everything matched; 1 findings (a mismatch, an
unsafe loader); 2 usage or input error, with one line naming the file or argument;
130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from harness import __version__
from harness._outcomes import METHODS
from harness._policy import PROFILES

__all__ = ["main", "build_parser"]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


#: ``--catalogue`` of run, list, explain and report: repeatable; overrides ``[tool.harness]``.
CATALOGUE_OPTION = dict(
    type=Path, action="append", default=None, metavar="DIR",
    help="a directory of case modules (repeatable; default: the [tool.harness] catalogue of "
    "./pyproject.toml, else the built-in catalogue)",
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``harness`` argument parser with every subcommand."""
    parser = _Parser(prog="harness", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the catalogue under every start method and write a shard")
    run.add_argument("--cases", nargs="+", metavar="ID_OR_GLOB", help="case ids or globs (default: all)")
    run.add_argument("--families", nargs="+", metavar="FAMILY", help="only these families")
    run.add_argument("--methods", nargs="+", metavar="METHOD",
                     help=f"start methods to run (default: all of {', '.join(METHODS)})")
    run.add_argument("--timeout", type=_positive_float, default=60.0, metavar="S",
                     help="per-cell timeout in seconds (default: 60)")
    run.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                     help="cells run in parallel (default: usable CPU count)")
    run.add_argument("--out", type=Path, default=Path("reports/shards"), metavar="DIR",
                     help="shard directory (default: reports/shards)")
    run.add_argument("--catalogue", **CATALOGUE_OPTION)
    run.add_argument("--isolation", choices=("auto", "warm", "fresh"), default="auto",
                     help="warm: fork each cell from a template that has imported torch (Linux); "
                     "fresh: a new interpreter per cell; auto (default): warm where available")
    run.add_argument("--changed", action="store_true",
                     help="run only the cells whose inputs (case files and what they import, the "
                     "harness, Python, torch, platform) differ from the shard in --out; keep the rest")
    run.add_argument("--resume", action="store_true",
                     help="continue the interrupted run whose partial shard is in --out")
    run.add_argument("--profile", choices=sorted(PROFILES), default=None,
                     help="emulate a platform on this machine: its start methods (others are "
                     "unsupported), torch sharing strategy and temp-path length; the shard says so")
    run.add_argument("--timeout-scale", type=_positive_float, default=None, metavar="X",
                     help="multiply every cell's timeout by X on a slow runner "
                     "(default: $HARNESS_TIMEOUT_SCALE or 1)")

    rep = sub.add_parser("report", help="merge shards into matrix.json, COMPATIBILITY.md, matrix.html, "
                         "junit.xml and matrix.png")
    rep.add_argument("--shards", type=Path, default=Path("reports/shards"), metavar="DIR")
    rep.add_argument("--out", type=Path, default=Path("reports"), metavar="DIR")
    rep.add_argument("--catalogue", **CATALOGUE_OPTION)
    rep.add_argument("--summary", type=Path, default=None, metavar="FILE",
                     help="append the compact compatibility table to FILE, e.g. $GITHUB_STEP_SUMMARY "
                     "(kept under 1 MiB, with a short form when larger)")

    lst = sub.add_parser("list", help="list the catalogue's cases")
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.add_argument("--catalogue", **CATALOGUE_OPTION)

    exp = sub.add_parser("explain", help="show a case's code, why it fails where it does, what was "
                         "observed, and the diff to its fix")
    exp.add_argument("case", metavar="CASE", help="a case id (see 'harness list')")
    exp.add_argument("--catalogue", **CATALOGUE_OPTION)
    exp.add_argument("--matrix", type=Path, default=None, metavar="FILE",
                     help="report to read observed outcomes from (default: reports/matrix.json)")

    diag = sub.add_parser("diagnose", help="find every object in your loader that breaks a spawn/forkserver worker "
                          "start: not pickled, not unpickled, or a first batch that cannot come back")
    diag.add_argument("target", metavar="TARGET", nargs="+",
                      help="package.module:attr or path/to/file.py:attr; attr is a DataLoader, a Dataset, "
                      "or a zero-argument callable returning one (several: each is diagnosed in turn)")
    diag.add_argument("--method", choices=("spawn", "forkserver"), default="spawn",
                      help="start method whose worker start is checked (default: spawn)")
    diag.add_argument("--num-workers", type=_positive_int, default=None, metavar="N",
                      help="worker count for the payload total (default: the loader's; 2 for a Dataset)")
    diag.add_argument("--format", choices=("text", "json", "github"), default="text", dest="format",
                      help="text (default); json: one object (a list of them for several targets); github: "
                      "one ::error workflow command per problem, ::warning per hazard, at its file and line")
    diag.add_argument("--json", action="store_const", const="json", dest="format", help="the same as --format json")
    diag.add_argument("--timeout", type=_positive_float, default=60.0, metavar="S",
                      help="kill the process running your code, and its process tree, after S seconds "
                      "(default: 60); its address space by $HARNESS_DIAGNOSE_MEMORY_GIB, in GiB (default: 4; 0: none)")

    cls = sub.add_parser("classify", help="classify a traceback pasted from a failed run (a file, or - for stdin)")
    cls.add_argument("file", metavar="FILE", nargs="?", default="-",
                     help="a text file with the console output, parent and worker tracebacks together "
                     "(default: - reads stdin)")
    cls.add_argument("--json", action="store_true", help="print one JSON object")

    repro = sub.add_parser("reproduce", help="run your script as __main__ under a forced start method",
                           usage="harness reproduce SCRIPT [--method METHOD] [--timeout S] [--json] [-- ARGS ...]",
                           epilog="Everything after -- is passed to the script as sys.argv[1:].")
    repro.add_argument("script", type=Path, metavar="SCRIPT", help="the Python script to run")
    repro.add_argument("--method", default="spawn", metavar="METHOD",
                       help="fork, spawn, forkserver, or a platform: windows, macos, linux, "
                       "linux-py3.14 (default: spawn)")
    repro.add_argument("--timeout", type=_positive_float, default=60.0, metavar="S",
                       help="kill the run and its process tree after S seconds (default: 60)")
    repro.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``harness`` command line; returns the exit code.

    A reader that closes the output early (``harness list --json | head``) ends the command
    quietly, as POSIX tools do, with exit code 141 (128 + SIGPIPE) and no traceback.
    """
    try:
        return _dispatch(argv)
    except BrokenPipeError:
        import os

        try:  # stdout is gone: point it at devnull so the interpreter's final flush is quiet
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


def _dispatch(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv and "reproduce" in argv[: argv.index("--")]:  # reproduce SCRIPT ... -- ARGS
        argv, script_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from harness._run import run_catalogue

        return run_catalogue(
            patterns=args.cases, families=args.families, methods=args.methods, out_dir=args.out,
            timeout_s=args.timeout, jobs=args.jobs, catalogue_dir=args.catalogue,
            isolation=args.isolation, resume=args.resume, changed=args.changed, profile=args.profile,
            timeout_scale=args.timeout_scale,
        )
    if args.command == "report":
        from harness._report import write_report

        return write_report(args.shards, args.out, summary=args.summary, catalogue_dirs=args.catalogue)
    if args.command == "list":
        from harness.inspect.listing import list_cases

        return list_cases(as_json=args.json, catalogue_dir=args.catalogue)
    if args.command == "explain":
        from harness.inspect.explain import explain_command

        return explain_command(args.case, catalogue_dir=args.catalogue, matrix_path=args.matrix)
    if args.command == "diagnose":
        from harness.inspect.diagnose_command import diagnose_command

        return diagnose_command(args.target, method=args.method, output_format=args.format,
                                num_workers=args.num_workers, timeout_s=args.timeout)
    if args.command == "classify":
        from harness.inspect.reproduce import classify_command

        return classify_command(args.file, as_json=args.json)
    if args.command == "reproduce":
        from harness.inspect.reproduce import reproduce_command

        return reproduce_command(args.script, method=args.method, timeout_s=args.timeout,
                                 as_json=args.json, argv=script_args)
    raise AssertionError(args.command)  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
