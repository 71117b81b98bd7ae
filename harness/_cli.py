"""Command-line interface: a thin argparse shim over the task functions.

Exit codes (all subcommands): 0 done and everything matched; 1 findings (a mismatch, an
unsafe loader); 2 usage or input error, with one line naming the file or argument;
130 interrupted.

Errors end here, in one place: :func:`main` catches every :class:`harness.errors.HarnessError`
(a usage error of argparse included) and prints it as one line, ``harness <command>:
<message>``, exiting with its exit code (2, or 130 for :class:`~harness.errors.Interrupted`).
The options themselves are declared in :mod:`harness._options`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from harness import __version__
from harness._options import COMMANDS, resolve_start_method
from harness._progress import say
from harness.errors import HarnessError, Interrupted, UsageError

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are :class:`~harness.errors.UsageError`, printed by :func:`main`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The ``harness`` argument parser with every subcommand of :data:`harness._options.COMMANDS`.

    A usage error raises :class:`~harness.errors.UsageError` (not ``SystemExit``); ``--help``
    and ``--version`` exit 0 as argparse does.
    """
    parser = _Parser(prog="harness", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        sub_parser = sub.add_parser(
            command.name, help=command.help, usage=command.usage, epilog=command.epilog
        )
        for option in command.options:
            option.add_to(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``harness`` command line; returns the exit code.

    A :class:`~harness.errors.HarnessError` is printed as one line, ``harness <command>:
    <message>``, and ends the command with its exit code (2; 130 for an interrupted run). Ctrl-C,
    SIGTERM and SIGHUP stop any command the same way (exit 130), once: more of them while it
    cleans up are ignored. A reader that closes the output early (``harness list --json |
    head``) ends the command quietly, as POSIX tools do, with exit code 141 (128 + SIGPIPE) and
    no traceback.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and args[0] in {c.name for c in COMMANDS} else ""
    try:
        with _interrupt_on_signals():
            return _dispatch(args)
    except HarnessError as exc:
        say(str(exc), command=command)
        return exc.exit_code
    except KeyboardInterrupt:
        say("interrupted", command=command)
        return Interrupted.exit_code
    except BrokenPipeError:
        try:  # stdout is gone: point it at devnull so the interpreter's final flush is quiet
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


@contextmanager
def _interrupt_on_signals() -> Iterator[None]:
    """Turn the first SIGINT, SIGTERM or SIGHUP into ``KeyboardInterrupt`` in the main thread,
    and ignore the ones after it, so that a command's cleanup (killing its process trees,
    writing a partial shard) is not cut short by a second Ctrl-C. Restores the handlers after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = threading.Event()

    def interrupt(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - a signal handler
        if not stopping.is_set():
            stopping.set()
            raise KeyboardInterrupt

    signals = [signal.SIGINT, signal.SIGTERM] + (
        [signal.SIGHUP] if hasattr(signal, "SIGHUP") else []
    )
    old = {sig: signal.signal(sig, interrupt) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _start_method_flag(args: argparse.Namespace) -> str:
    """The spelling of the start-method option that was used (``--start-method`` if none)."""
    return (
        getattr(args, "methods_flag", None)
        or getattr(args, "method_flag", None)
        or "--start-method"
    )


def _run(args: argparse.Namespace) -> int:
    from harness.run.pipeline import run_catalogue

    for method in args.methods or ():
        resolve_start_method(method, option=_start_method_flag(args), platforms=False)
    return run_catalogue(
        patterns=args.cases,
        families=args.families,
        methods=args.methods,
        out_dir=args.out,
        timeout_s=args.timeout,
        jobs=args.jobs,
        catalogue_dir=args.catalogue,
        isolation=args.isolation,
        resume=args.resume,
        changed=args.changed,
        profile=args.profile,
        timeout_scale=args.timeout_scale,
    )


def _report(args: argparse.Namespace) -> int:
    from harness.report.pipeline import write_report

    return write_report(args.shards, args.out, summary=args.summary, catalogue_dirs=args.catalogue)


def _list(args: argparse.Namespace) -> int:
    from harness.inspect.listing import list_cases

    return list_cases(as_json=args.json, catalogue_dir=args.catalogue)


def _explain(args: argparse.Namespace) -> int:
    from harness.inspect.explain import explain_command

    return explain_command(args.case, catalogue_dir=args.catalogue, matrix_path=args.matrix)


def _diagnose(args: argparse.Namespace) -> int:
    from harness.inspect.diagnose import DIAGNOSE_METHODS
    from harness.inspect.diagnose_command import diagnose_command

    resolve_start_method(args.method, option=_start_method_flag(args), allowed=DIAGNOSE_METHODS)
    return diagnose_command(
        args.target,
        method=args.method,
        output_format=args.format,
        num_workers=args.num_workers,
        timeout_s=args.timeout,
    )


def _classify(args: argparse.Namespace) -> int:
    from harness.inspect.reproduce import classify_command

    return classify_command(args.file, as_json=args.json)


def _reproduce(args: argparse.Namespace) -> int:
    from harness.inspect.reproduce import reproduce_command

    resolve_start_method(args.method, option=_start_method_flag(args), available=True)
    return reproduce_command(
        args.script,
        method=args.method,
        timeout_s=args.timeout,
        as_json=args.json,
        argv=args.script_args,
    )


#: The task function of each subcommand of :data:`harness._options.COMMANDS`.
_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "report": _report,
    "list": _list,
    "explain": _explain,
    "diagnose": _diagnose,
    "classify": _classify,
    "reproduce": _reproduce,
}


def _dispatch(argv: list[str]) -> int:
    script_args: list[str] = []
    if "--" in argv and "reproduce" in argv[: argv.index("--")]:  # reproduce SCRIPT ... -- ARGS
        argv, script_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = build_parser().parse_args(argv)
    args.script_args = script_args
    return _HANDLERS[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
