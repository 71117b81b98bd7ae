"""``harness diagnose TARGET [TARGET ...]``: each target diagnosed in its own child process.

The user's code (import, factory, pickling, loading, first batch) runs in a child process
(``python -m harness.inspect.diagnose_child``) in its own session or process group, started in the
current directory, with a timeout after which the child's whole process tree is killed, and,
on POSIX, a bound on the child's address space (:data:`DEFAULT_MEMORY_GIB` more than the
interpreter has mapped once torch is imported; ``HARNESS_DIAGNOSE_MEMORY_GIB`` changes it, 0
lifts it). The child writes its diagnosis as JSON (:func:`harness.inspect.diagnose.diagnosis_to_child`).

Targets are diagnosed one after the other, and the command exits with the worst: 0 all safe
(hazards do not count); 1 any unsafe, or a target's own code ended its child process
(``os._exit``, a signal) before it could report, one line naming the target and the exit
status; 2 any target cannot be built, or its diagnosis did not finish within ``--timeout`` or
the memory bound (one line each; no verdict; the other targets are still diagnosed and
reported); 130 interrupted (Ctrl-C, SIGTERM: the child's tree is killed first, and no later
target runs). Standard output carries the diagnoses (``--format text``, ``json`` or
``github``); every other outcome is one line on standard error (and, with ``github``, also an
``::error`` command on standard output). What the user's code prints goes to standard error,
so JSON output stays parseable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from harness._escape import terminal
from harness._options import DEFAULT_MEMORY_GIB, DEFAULT_TIMEOUT_S
from harness._progress import say as _say
from harness.errors import Interrupted, UsageError
from harness.inspect.diagnose import Diagnosis, diagnosis_from_child, resolve_method
from harness.inspect.output import github_command

__all__ = [
    "DEFAULT_MEMORY_GIB",
    "DEFAULT_TIMEOUT_S",
    "FORMATS",
    "MEMORY_ENV",
    "ChildRun",
    "diagnose_command",
    "memory_limit_bytes",
    "run_child",
    "run_children",
]

#: ``harness diagnose --format`` choices.
FORMATS = ("text", "json", "github")

MEMORY_ENV = "HARNESS_DIAGNOSE_MEMORY_GIB"


def memory_limit_bytes(environ: Mapping[str, str] | None = None) -> int | None:
    """Bytes of address space the diagnosis child may map beyond its start, or ``None``.

    Read from ``HARNESS_DIAGNOSE_MEMORY_GIB`` (GiB, a number; ``0`` lifts the bound), default
    :data:`DEFAULT_MEMORY_GIB`. Applied only on POSIX (``resource.RLIMIT_AS``).

    Raises:
        UsageError: the variable is out of the bounds of :func:`harness._options.parse_number`
            (``memory_gib``), not a number, nan or infinite (also a ``ValueError``).
    """
    from harness._options import env_number

    gib = env_number(MEMORY_ENV, environ)
    if gib is None:
        gib = DEFAULT_MEMORY_GIB
    return int(gib * (1 << 30)) if gib > 0 else None


@dataclass
class ChildRun:
    """How the diagnosis child ended.

    Attributes:
        result: what the child wrote (``{"kind": "diagnosis" | "target-error" | "memory" |
            "error", ...}``; see :mod:`harness.inspect.diagnose_child`), or ``None`` when it ended
            without writing it.
        returncode: its exit status (negative: killed by that signal), or ``None``.
        timed_out: it ran past the timeout and its tree was killed.
        stage: the last step it announced (``"calling make_loader()"``), or ``""``.
    """

    result: dict[str, Any] | None
    returncode: int | None
    timed_out: bool
    stage: str


def _child_pythonpath(env: dict[str, str]) -> None:
    """Let the child import this harness when it runs from a checkout that is not installed.

    The folder holding the ``harness`` package is appended to ``PYTHONPATH`` unless it is a
    site-packages folder (which the child has anyway, after the standard library: on
    ``PYTHONPATH`` it would come first, and an old backport there could shadow the stdlib).
    """
    import site

    import harness

    root = os.path.realpath(Path(harness.__file__).resolve().parent.parent)
    sites = (
        [*site.getsitepackages(), site.getusersitepackages()]
        if hasattr(site, "getsitepackages")
        else []
    )
    if root in {os.path.realpath(d) for d in sites}:
        return
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, root])


def _popen_options() -> dict[str, Any]:
    """The child in its own session (POSIX) or process group (Windows), its standard output
    sent to this process's standard error."""
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL}
    if sys.platform == "win32":
        options["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        options["start_new_session"] = True
    try:
        options["stdout"] = (
            sys.__stderr__.fileno() if sys.__stderr__ is not None else subprocess.DEVNULL
        )
    except (OSError, ValueError):
        options["stdout"] = subprocess.DEVNULL
    return options


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait for ``proc``, then kill its whole tree; whether it ran past ``timeout_s``."""
    from harness.run import containment as _containment
    from harness.run.sampler import kill_tree

    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        return True
    finally:  # also on KeyboardInterrupt: nothing the user's code started outlives this
        kill_tree(proc.pid)
        proc.wait()
        _containment.untrack(proc.pid)
    return False


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_stage(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


#: Seconds between looks at the child's result files.
POLL_S = 0.02


def run_children(
    targets: Sequence[str], method: str, num_workers: int | None, timeout_s: float, memory_bytes: int | None
) -> Iterator[ChildRun]:
    """Diagnose ``targets`` in ``python -m harness.inspect.diagnose_child``: one child for all
    of them (one torch import), each target with ``timeout_s`` of its own; one
    :class:`ChildRun` per target, in order.

    The child runs in the current directory, in its own session (POSIX) or process group
    (Windows), with its standard output sent to this process's standard error. A target that
    runs past ``timeout_s``, or whose code ends the child, is reported so; the child's whole
    process tree is killed (:func:`harness.run.sampler.kill_tree`) and a new child takes the
    targets after it. When the iteration ends, or on ``KeyboardInterrupt``, the tree is
    killed; the containment watchdog (:mod:`harness.run.containment`) kills it too if this
    process is killed first.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM while waiting (the tree is killed first).
    """
    pending = list(targets)
    while pending:
        runs, consumed = _one_child(pending, method, num_workers, timeout_s, memory_bytes)
        yield from runs
        pending = pending[consumed:]


def _one_child(
    targets: list[str], method: str, num_workers: int | None, timeout_s: float, memory_bytes: int | None
) -> tuple[list[ChildRun], int]:
    """Run one child over ``targets`` until it finishes them or one of them stops it:
    ``(one ChildRun per target it got to, how many)``."""
    import shutil
    import tempfile
    import time

    from harness.child.safe_path import module_command
    from harness.run import containment as _containment
    from harness.run.sampler import kill_tree

    workdir = Path(tempfile.mkdtemp(prefix="hd-"))
    _containment.track_dir(workdir)  # removed by the watchdog if this process is killed
    results = [workdir / f"result-{i}.json" for i in range(len(targets))]
    stages = [workdir / f"stage-{i}.txt" for i in range(len(targets))]
    spec = {"targets": targets, "method": method, "num_workers": num_workers, "memory_bytes": memory_bytes,
            "results": [str(p) for p in results], "stages": [str(p) for p in stages]}
    env = _containment.child_env()
    _child_pythonpath(env)
    runs: list[ChildRun] = []
    proc = None
    try:
        # started without the current directory on sys.path: the target's folder is put there
        # when the target is imported, after the harness's own imports (harness.child.safe_path)
        proc = subprocess.Popen(module_command("harness.inspect.diagnose_child", json.dumps(spec)),
                                env=env, **_popen_options())
        _containment.track(proc.pid)
        for i in range(len(targets)):
            deadline = time.monotonic() + timeout_s
            while not results[i].exists():
                ended = proc.poll() is not None
                if ended and not results[i].exists():
                    runs.append(ChildRun(None, proc.returncode, False, _read_stage(stages[i])))
                    return runs, i + 1
                if time.monotonic() > deadline:
                    kill_tree(proc.pid)
                    proc.wait()
                    runs.append(ChildRun(None, proc.returncode, True, _read_stage(stages[i])))
                    return runs, i + 1
                time.sleep(POLL_S)
            runs.append(ChildRun(_read_json(results[i]), None, False, _read_stage(stages[i])))
        return runs, len(targets)
    finally:  # also on KeyboardInterrupt: nothing the user's code started outlives this
        if proc is not None:
            kill_tree(proc.pid)
            proc.wait()
            _containment.untrack(proc.pid)
        shutil.rmtree(workdir, ignore_errors=True)
        _containment.untrack_dir(workdir)


def run_child(
    target: str, method: str, num_workers: int | None, timeout_s: float, memory_bytes: int | None
) -> ChildRun:
    """:func:`run_children` for one target.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM while waiting (the tree is killed first).
    """
    return next(iter(run_children([target], method, num_workers, timeout_s, memory_bytes)))


def _gib(n: int | None) -> str:
    return f"{(n or 0) / (1 << 30):g} GiB"


def _ended(returncode: int | None, memory: int | None) -> str:
    """``exited with status 3`` or ``was killed by signal SIGKILL``, with a word on the memory
    bound for the signals a failed allocation in C code ends with."""
    if returncode is None or returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    bound = ""
    if memory and name in ("SIGABRT", "SIGSEGV", "SIGBUS"):
        bound = f" (its address space was limited to {_gib(memory)} more than at start; {MEMORY_ENV} changes it)"
    return f"was killed by signal {name}{bound}"


def _outcome(
    target: str, run: ChildRun, timeout_s: float, memory: int | None
) -> tuple[int, Diagnosis | None, str]:
    """``(exit code, diagnosis or None, one-line error or "")`` for one target's child run."""
    while_ = f" while {run.stage}" if run.stage else ""
    if run.timed_out:
        return (
            2,
            None,
            (
                f"harness diagnose: error: {target}: timed out after {timeout_s:g} s{while_}; the process "
                "tree running it was killed (a longer --timeout gives it more time)"
            ),
        )
    result = run.result
    if result is None:
        return (
            1,
            None,
            (
                f"harness diagnose: {target}: UNSAFE: the process running it "
                f"{_ended(run.returncode, memory)}{while_}, before it could report: the target's own code "
                "ended it"
            ),
        )
    kind = result.get("kind")
    if kind == "diagnosis":
        diagnosis = diagnosis_from_child(result["diagnosis"])
        return (0 if diagnosis.safe else 1), diagnosis, ""
    message = result.get("message", "")
    if kind == "memory" or "MemoryError" in message:
        limit = (
            f" (limit: {_gib(memory)} more than at start; set {MEMORY_ENV} to change it, 0 lifts it)"
            if memory
            else ""
        )
        return (
            2,
            None,
            f"harness diagnose: error: {target}: ran out of memory{while_}{limit}: {message}",
        )
    if kind == "target-error":
        return 2, None, f"harness diagnose: error: {message}"
    return 2, None, f"harness diagnose: error: {target}: {message}"


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the command like Ctrl-C (killing the child's tree), in the main thread."""

    def interrupt(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - a handler's signature
        raise KeyboardInterrupt

    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


@dataclass(frozen=True)
class _Settings:
    """What every target is diagnosed with."""

    fmt: str
    method: str
    num_workers: int | None
    timeout_s: float
    memory: int | None


def _report(
    one: str, first: bool, run: ChildRun, settings: _Settings
) -> tuple[int, dict[str, Any]]:
    """Print one target's diagnosis (or its one-line error); ``(exit code, its JSON entry)``."""
    code, diagnosis, error = _outcome(one, run, settings.timeout_s, settings.memory)
    if error or diagnosis is None:
        _say(error)
        if settings.fmt == "github":
            print(github_command("error", error, "harness diagnose"))
        return code, {"target": one, "error": error}
    if (
        settings.fmt == "text"
    ):  # names and messages come from the user's code: no escape sequence reaches the terminal
        print(("" if first else "\n") + terminal(diagnosis.format_text()))
    elif settings.fmt == "github" and (diagnosis.findings or diagnosis.hazards):
        print(diagnosis.format_github())
    sys.stdout.flush()
    return code, diagnosis.to_json()


def _groups(targets: list[str]) -> list[list[str]]:
    """Consecutive targets diagnosed by one child, each notebook on its own (its own kernel)."""
    out: list[list[str]] = []
    for t in targets:
        if _is_notebook(t) or not out or _is_notebook(out[-1][0]):
            out.append([t])
        else:
            out[-1].append(t)
    return out


def _is_notebook(target: str) -> bool:
    from harness.notebook.kernel_run import notebook_target

    return notebook_target(target) is not None


def _print_diagnosis(diagnosis: Diagnosis, first: bool, settings: _Settings) -> None:
    if settings.fmt == "text":  # names and messages come from the user's code: no escape sequence
        print(("" if first else "\n") + terminal(diagnosis.format_text()))
    elif settings.fmt == "github" and (diagnosis.findings or diagnosis.hazards):
        print(diagnosis.format_github())
    sys.stdout.flush()


def _notebook(one: str, first: bool, settings: _Settings) -> list[tuple[int, dict[str, Any]]]:
    """Diagnose the loaders of a notebook in its own kernel
    (:func:`harness.notebook.kernel_run.diagnose_notebook`): one entry per loader, or per error."""
    from harness.notebook.kernel_run import diagnose_notebook

    try:
        data = diagnose_notebook(one, settings.method, settings.num_workers, settings.timeout_s)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; the kernel running {one} was stopped") from None
    except UsageError as exc:
        data = {"diagnoses": [], "errors": [{"name": "", "error": str(exc)}], "cell_error": ""}
    out: list[tuple[int, dict[str, Any]]] = []
    if data.get("cell_error"):
        _say(f"harness diagnose: note: {one}: {data['cell_error']}; diagnosed what the notebook built until then")
    for item in data.get("diagnoses", []):
        diagnosis = diagnosis_from_child(item["diagnosis"])
        _print_diagnosis(diagnosis, first and not out, settings)
        out.append((0 if diagnosis.safe else 1, diagnosis.to_json()))
    for item in data.get("errors", []):
        error = f"harness diagnose: error: {one}: {item['error']}"
        _say(error)
        if settings.fmt == "github":
            print(github_command("error", error, "harness diagnose"))
        out.append((2, {"target": one, "error": error}))
    return out


def diagnose_command(
    target: str | Sequence[str],
    method: str = "spawn",
    as_json: bool = False,
    num_workers: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    output_format: str | None = None,
    summary: Path | None = None,
) -> int:
    """``harness diagnose``: diagnose each target in its own child process and print the diagnoses.

    Args:
        target: ``package.module:attr`` or ``path/to/file.py:attr``, or a sequence of them,
            diagnosed one after the other.
        method: ``spawn`` or ``forkserver`` (or a platform alias resolving to one).
        as_json: the same as ``output_format="json"``.
        num_workers: overrides each loader's worker count.
        timeout_s: seconds each child may run (import, factory, pickling, loading, first
            batch, walk) before its process tree is killed.
        output_format: ``text`` (default), ``json`` or ``github`` (see :data:`FORMATS`).
            ``json``: one target prints one object (:meth:`Diagnosis.to_json`); several print
            a list with one entry per target, in order: its object, or ``{"target", "error"}``
            for a target that gave no diagnosis (the error is the line also on stderr).
            ``github``: one ``::error`` workflow command per problem and ``::warning`` per
            hazard (:func:`harness.inspect.output.github_commands`), nothing for a safe loader,
            and ``::error title=harness diagnose::...`` for a target that gave no diagnosis.
        summary: a file to append a Markdown summary of every target to, whatever the
            format (:func:`harness.inspect.output.render_summary`), e.g. the job summary
            ``$GITHUB_STEP_SUMMARY`` of a GitHub Actions step.

    Returns:
        The worst over the targets: 0 all safe; 1 any unsafe, or a child ended by the
        target's own code before it could report; 2 a bad target, bad
        ``HARNESS_DIAGNOSE_MEMORY_GIB``, timeout or memory bound reached (the other targets
        are still diagnosed), or the summary could not be written. Everything but a
        diagnosis is one line on stderr per target.

    Raises:
        Interrupted: Ctrl-C or SIGTERM stopped a child (its process tree is killed; no later
            target runs); ``harness`` exits 130.
    """
    targets = [target] if isinstance(target, str) else list(target)
    fmt = output_format or ("json" if as_json else "text")
    try:
        if fmt not in FORMATS:
            raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
        settings = _Settings(
            fmt, resolve_method(method), num_workers, timeout_s, memory_limit_bytes()
        )
    except ValueError as exc:
        _say(f"harness diagnose: error: {exc}")
        return 2
    codes: list[int] = []
    entries: list[dict[str, Any]] = []
    with _sigterm_interrupts():
        for group in _groups(targets):
            if _is_notebook(group[0]):
                found = _notebook(group[0], not entries, settings)
                codes += [c for c, _ in found]
                entries += [e for _, e in found]
                continue
            runs = run_children(group, settings.method, num_workers, timeout_s, settings.memory)
            one = group[0]
            try:
                for one, run in zip(group, runs, strict=False):  # runs stops early on an interrupt only
                    code, entry = _report(one, not entries, run, settings)
                    codes.append(code)
                    entries.append(entry)
            except KeyboardInterrupt:
                raise Interrupted(f"interrupted; the process diagnosing {one} was stopped") from None
            finally:
                close = getattr(runs, "close", None)
                if close is not None:
                    close()
    if fmt == "json" and (len(targets) > 1 or "error" not in entries[0]):
        print(json.dumps(entries if len(targets) > 1 else entries[0], indent=2))
    if summary is not None and not _append_summary(summary, entries, settings.method):
        codes.append(2)
    return 2 if 2 in codes else max(codes)


def _append_summary(path: Path, entries: list[dict[str, Any]], method: str) -> bool:
    """Append the Markdown summary to ``path``; ``False`` (and one line on stderr) when it
    cannot be written."""
    from harness.inspect.output import render_summary

    try:
        with Path(path).open("a", encoding="utf-8") as f:
            f.write(render_summary(entries, method))
    except OSError as exc:
        _say(f"harness diagnose: error: --summary {path}: {exc.strerror or exc}")
        return False
    return True
