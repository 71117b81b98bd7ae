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
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn, TextIO

from harness import __version__
from harness._options import COMMANDS, env_number, resolve_start_method, scaled_timeout
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


#: Commands whose only result is what they print: with standard output closed, they have
#: nothing to do, and say so (exit 2). The others still run: their exit code (a verdict, a
#: mismatch) and their files are the result, and a closed standard output discards only the text.
_PRINTING_ONLY = frozenset({"list", "explain"})


def _reopen_closed_streams() -> set[str]:
    """Open the null device on each of standard input, output and error that the process was
    started without (``harness list >&-``): Python then has ``sys.stdout`` as ``None``, and the
    next file the harness opened would take the free descriptor, so that a child process's
    output, or this process's, would land in a shard or a result file.

    Returns:
        The names (``"stdin"``, ``"stdout"``, ``"stderr"``) of the streams that were closed.
    """
    closed: set[str] = set()
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            stream = open(fd, "r" if fd == 0 else "w", closefd=False,  # noqa: SIM115 - lives as long as sys
                          encoding="utf-8", errors="backslashreplace")
        except OSError:
            continue
        setattr(sys, name, stream)
        closed.add(name)
    return closed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``harness`` command line; returns the exit code.

    A :class:`~harness.errors.HarnessError` is printed as one line, ``harness <command>:
    <message>``, and ends the command with its exit code (2; 130 for an interrupted run). Ctrl-C,
    SIGTERM and SIGHUP stop any command the same way (exit 130), once: more of them while it
    cleans up are ignored. A reader that closes the output early (``harness list --json |
    head``) ends the command quietly, as POSIX tools do, with exit code 141 (128 + SIGPIPE) and
    no traceback.

    A command started with standard output closed (``>&-``) says so in one line on standard
    error: ``list`` and ``explain``, which only print, stop there with exit code 2; the others
    run and keep their own exit code (a safe ``diagnose`` is still 0). Standard output that
    cannot be written at the end (a full disk) is one line too; ``list`` and ``explain`` then
    exit 2. With standard error closed, the error lines are lost, never sent to standard
    output, and the exit code is the same.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and args[0] in {c.name for c in COMMANDS} else ""
    closed = _reopen_closed_streams()
    watched = _watch_stdout() if "stdout" not in closed else None
    if "stdout" in closed and command:
        if command in _PRINTING_ONLY:
            say("standard output is closed: nothing to print to", command=command)
            return UsageError.exit_code
        say("note: standard output is closed; what this command prints is discarded, its exit "
            "code and files are not", command=command)
    try:
        with _interrupt_on_signals():
            code = _dispatch(args, stdin_closed="stdin" in closed)
    except HarnessError as exc:
        say(str(exc), command=command)
        return exc.exit_code
    except KeyboardInterrupt:
        say("interrupted", command=command)
        return Interrupted.exit_code
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except OSError as exc:
        if watched is None or watched.error is not exc:
            raise
        return _unwritable(exc, command, UsageError.exit_code)
    return _flushed(code, command)


class _WatchedOutput(io.RawIOBase):
    """Standard output's file descriptor, remembering the error a write failed with, so that
    :func:`main` can tell a full disk under ``harness list >out`` from any other ``OSError``."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int:
        try:
            return os.write(self.fd, data)
        except OSError as exc:
            self.error = exc
            raise


def _watch_stdout() -> _WatchedOutput | None:
    """Put :class:`_WatchedOutput` under ``sys.stdout`` when it is this process's own standard
    output and not a terminal (a file or a pipe, where a write can fail); else ``None``."""
    stream: TextIO | None = sys.stdout
    if stream is not sys.__stdout__ or stream is None:
        return None
    try:
        if stream.fileno() != 1 or os.isatty(1):
            return None
        stream.flush()
    except (OSError, ValueError, AttributeError):
        return None
    raw = _WatchedOutput(1)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors,
                                  line_buffering=stream.line_buffering)
    return raw


def _quiet_stdout() -> None:
    """Point standard output at the null device, so that the interpreter's final flush of a
    broken stream is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _flushed(code: int, command: str) -> int:
    """``code`` once standard output is flushed; a failure to write it (a full disk, a closed
    pipe) is one line on standard error, and exit code 2 for a command that only prints."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except (OSError, ValueError) as exc:
        return _unwritable(exc, command, UsageError.exit_code if command in _PRINTING_ONLY else code)
    return code


def _unwritable(exc: Exception, command: str, code: int) -> int:
    """Say that standard output cannot be written, silence it, and return ``code``."""
    _quiet_stdout()
    reason = getattr(exc, "strerror", None) or exc
    say(f"cannot write standard output: {reason}", command=command)
    return code


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
    scale = args.timeout_scale
    if scale is None:
        scale = env_number("HARNESS_TIMEOUT_SCALE")
    scale = 1.0 if scale is None else float(scale)
    scaled_timeout(args.timeout, scale)
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
        timeout_scale=scale,
        split=args.split,
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
    try:
        env_number("HARNESS_DIAGNOSE_MEMORY_GIB")
    except UsageError as exc:  # diagnose's own lines read "harness diagnose: error: ..."
        say(f"error: {exc}", command="diagnose")
        return exc.exit_code
    return diagnose_command(
        args.target,
        method=args.method,
        output_format=args.format,
        num_workers=args.num_workers,
        timeout_s=args.timeout,
        summary=args.summary,
    )


def _classify(args: argparse.Namespace) -> int:
    from harness.inspect.reproduce import classify_command

    if args.file == "-" and args.stdin_closed:
        raise UsageError("standard input is closed: give the FILE to classify, or pipe the text in")
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
        show_output=args.output,
    )


def _lint(args: argparse.Namespace) -> int:
    from harness.lint.command import lint_command

    return lint_command(args.paths, output_format=args.format, select=args.select, ignore=args.ignore,
                        fix=args.fix, diff=args.diff, summary=args.summary)


#: The task function of each subcommand of :data:`harness._options.COMMANDS`.
_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "report": _report,
    "list": _list,
    "explain": _explain,
    "diagnose": _diagnose,
    "classify": _classify,
    "reproduce": _reproduce,
    "lint": _lint,
}


#: Commands that run or load user loaders, and so need PyTorch in this environment.
_NEEDS_TORCH = frozenset({"run", "diagnose", "reproduce"})


def _dispatch(argv: list[str], stdin_closed: bool = False) -> int:
    script_args: list[str] = []
    if "--" in argv and "reproduce" in argv[: argv.index("--")]:  # reproduce SCRIPT ... -- ARGS
        argv, script_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = build_parser().parse_args(argv)
    args.script_args = script_args
    args.stdin_closed = stdin_closed
    if args.command in _NEEDS_TORCH:
        import importlib.util

        try:
            missing = importlib.util.find_spec("torch") is None
        except (ImportError, ValueError):  # a broken or blocked install
            missing = True
        if missing:
            raise UsageError("PyTorch is not installed in this environment (python -m pip install torch); "
                             "lint, list, explain, classify and report run without it")
    return _HANDLERS[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
