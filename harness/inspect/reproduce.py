"""``harness reproduce``: run a user's script as ``__main__`` under a forced start method.

The script runs exactly like a catalogue script case: in a fresh interpreter and process
group (:func:`harness.run.launch.launch_cell`), with ``multiprocessing.set_start_method(method,
force=True)`` applied first and the script executed by ``runpy.run_path(path,
run_name="__main__")`` (:mod:`harness.child.cell`), so spawn and forkserver workers re-import it as
``__mp_main__`` just as they would on Windows, macOS or Linux with Python 3.14. The watchdog
kills the whole tree at the timeout. The run is classified by :func:`harness.classify.classifier.classify`,
the same classifier the matrix uses, and the verdict is mapped to the catalogue case that shows
the same mechanism, whose ``fix`` names the repair.

Platform names (``windows``, ``macos``, ``linux``, ``linux-py3.14``) replay that platform's
default start method (:func:`harness._policy.resolve_method_alias`); ``windows`` and ``macos``
also apply that platform's profile (:data:`harness._policy.PROFILES`): torch's ``file_system``
sharing strategy in the script and every worker, and, for ``macos``, a ``TMPDIR`` as long as a
macOS runner's. The Python version is this interpreter's: ``linux-py3.14`` on Python 3.11
applies 3.14's start method (``forkserver``), not 3.14's pickling rules, and the result says so
(:func:`python_note`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from harness._escape import terminal
from harness._options import DEFAULT_TIMEOUT_S, DEFAULT_WORKERS, resolve_start_method
from harness._policy import PROFILES
from harness.catalogue.discover import Case
from harness.catalogue.literal import declared_stdin
from harness.classify.classifier import Verdict, classify
from harness.classify.outcomes import METHODS, outcome_label
from harness.errors import Interrupted, UsageError
from harness.inspect import hints
from harness.inspect.diagnose import Finding, match_problems
from harness.inspect.walker import Problem
from harness.run.launch import kill_live_cells, launch_cell
from harness.run.plan import CellSpec, emulated_temp_dir

__all__ = ["BATCH_BACK_HINT", "Reproduction", "ScriptSpec", "case_for", "classify_command", "hint_for",
           "python_note", "reproduce", "reproduce_command"]


@dataclass(frozen=True)
class ScriptSpec(CellSpec):
    """A :class:`CellSpec` for a user's script, with its arguments and working directory.

    Attributes:
        argv: arguments the script gets as ``sys.argv[1:]``.
        cwd: directory the script runs in (the caller's, as ``python script.py`` would).
    """

    argv: tuple[str, ...] = ()
    cwd: str = ""

    def to_child(self) -> dict[str, Any]:
        """The cell spec plus ``argv`` and ``cwd`` (read by :func:`harness.child.cell.run_spec`).

        A user's script never calls ``cell.check``: one that ends normally passes, so the
        catalogue's ``require_check`` is off.
        """
        return {**super().to_child(), "require_check": False, "argv": list(self.argv), "cwd": self.cwd,
                "locate": True}


@dataclass
class Reproduction:
    """One reproduced run.

    Attributes:
        script: the script as given.
        method: the start method it ran under.
        requested: the ``--start-method`` value as given (a method or a platform alias).
        verdict: outcome, kind, message and root cause, as the matrix classifies a cell.
        duration_s: seconds from launch to exit (interpreter start-up included).
        hint: the fix hint naming the matching catalogue case, or ``None`` on ``pass``.
        stderr_tail: the last lines the script and its workers wrote to stderr.
        note: what the requested platform does not replay here (:func:`python_note`), or ``None``.
        case: the id of the catalogue case the hint names (:func:`case_for`), or ``None``.
        fix: the id of that case's fix, or ``None``.
        culprits: what the failed run's loader could not send to a worker, each as
            :meth:`harness.inspect.diagnose.Finding.to_json` (``[]`` when unknown).
        output: the last lines (at most :data:`OUTPUT_LINES`) the script printed on its
            standard output; kept on a failure, and on a pass with ``show_output``.
    """

    script: str
    method: str
    requested: str
    verdict: Verdict
    duration_s: float
    hint: str | None
    stderr_tail: list[str] = field(default_factory=list)
    note: str | None = None
    case: str | None = None
    fix: str | None = None
    notebook: bool = False
    cell: int | None = None
    culprits: list[dict[str, Any]] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"script", "method", "outcome", "kind", "root_cause", "duration_s", "hint", "case",
        "fix", "note", "culprits", "output"}`` (``culprits``: ``[{"path", "type", "message",
        "case", "fix", "file", "line"}]``, what the failed run's loader could not send to a
        worker; ``output``: the last lines the script printed, on a failure or with
        ``--output``); a notebook adds ``"cell"``: the 1-based index, among all its cells
        (markdown included), of the cell that failed or hung, ``null`` on a pass."""
        extra: dict[str, Any] = {"cell": self.cell} if self.notebook else {}
        return {
            "script": self.script,
            "method": self.method,
            "outcome": self.verdict.outcome,
            "kind": self.verdict.kind,
            "root_cause": self.verdict.root_cause,
            "duration_s": round(self.duration_s, 3),
            "hint": self.hint,
            "case": self.case,
            "fix": self.fix,
            "note": self.note,
            "culprits": self.culprits,
            "output": self.output,
            **extra,
        }

    def format_text(self) -> str:
        """The human report: outcome, root cause, hint and the end of stderr."""
        as_what = self.method if self.requested == self.method else f"{self.requested} ({self.method})"
        v = self.verdict
        outcome = outcome_label(v.outcome, v.kind, "{outcome} ({kind})")
        where = f" in cell {self.cell}" if self.notebook and self.cell is not None and v.outcome != "pass" else ""
        lines = [f"{self.script} under {as_what}: {outcome}{where} after {self.duration_s:.1f} s"]
        if self.note:
            lines.append(f"note: {self.note}")
        if v.outcome != "pass":
            if v.message and v.message != v.root_cause:
                lines.append(f"  parent saw: {v.message}")
            if v.root_cause:
                lines.append(f"  root cause: {v.root_cause}")
            for c in self.culprits:
                where = f" at {c['file']}:{c['line']}" if c.get("file") else ""
                lines.append(f"  culprit: {c['path']} ({c['type']}){where}")
            if self.stderr_tail:
                lines.append("  stderr (last lines):")
                lines += [f"    {line}" for line in self.stderr_tail]
        if self.output:
            lines.append("  script output (last lines):" if v.outcome != "pass" else "script output (last lines):")
            lines += [f"    {line}" for line in self.output]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


def python_note(name: str, python: tuple[int, int] | None = None) -> str | None:
    """What ``--start-method name`` does not replay on this Python, or ``None``.

    A platform alias tied to a Python range (``linux-py3.14``: Python 3.14 and later;
    ``linux``, ``linux-py3.13``: up to 3.13) replays that platform's default start method on
    this interpreter; the pickling rules stay this Python's (on 3.14, ``itertools`` iterators
    no longer pickle; ``harness diagnose`` lists them as hazards).

    Args:
        name: the ``--start-method`` value.
        python: ``(major, minor)`` of the interpreter; default this one.
    """
    from harness import _policy

    plat_id = getattr(_policy, "_ALIASES", {}).get(name, name)
    plat = next((p for p in _policy.PLATFORMS if p.id == plat_id), None)
    here = python or sys.version_info[:2]
    if plat is None or plat.python_min <= here <= plat.python_max:
        return None
    version = plat.python_min if here < plat.python_min else plat.python_max
    them = f"Python {version[0]}.{version[1]}"
    hazards = " (harness diagnose lists what it will no longer pickle as hazards)" if here < plat.python_min else ""
    return (f"--start-method {name} on Python {here[0]}.{here[1]} applies {them}'s start method ({plat.default_method}), "
            f"not {them}'s pickling rules; run on {them} for those{hazards}")


#: A queue feeder thread's traceback (``multiprocessing/queues.py``, ``_feed``): a worker's result
#: did not pickle on its way back; "it's not the same object as" is a class made anew at each call.
_FEEDER = re.compile(r"queues\.py\W+line \d+, in _feed\b|in _feed\s*$", re.M)
_NOT_SAME = re.compile(r"it's not the same object as [\w.<>]+")


def _batch_back(verdict: Verdict, text: str, stderr: str) -> bool:
    """Whether the run shows a batch that could not be pickled on its way back from a worker."""
    pickling = verdict.kind == "pickle" or bool(_NOT_SAME.search(text)) or "PicklingError" in text
    if _FEEDER.search(stderr) and (pickling or "PicklingError" in stderr or _NOT_SAME.search(stderr)):
        return True
    return verdict.outcome == "hang" and bool(_NOT_SAME.search(f"{text}\n{stderr}"))


#: The hint for a batch that could not be pickled on its way back from a worker.
BATCH_BACK_HINT = (
    "a worker's batch could not be pickled on its way back to the main process: the worker's queue feeder "
    "thread printed the error and dropped the batch, so the loader waits for it forever, under every start "
    "method, fork included; a class that collate_fn (or the dataset) makes at each call with the name of a "
    "module-level class (a namedtuple or dataclass built inside it) does this: define it once at module level "
    "(harness diagnose names it, at a path rooted at batch)")


def case_for(verdict: Verdict, stderr: str = "", culprits: Sequence[Finding] = ()) -> Case | None:
    """The catalogue case that shows the same mechanism as ``verdict``, or ``None``.

    The case of the first culprit that has one, when the failed run's loader was walked
    (``culprits``: :mod:`harness.inspect.post_mortem`, matched as ``harness diagnose``
    matches them, so both tools name the same case); else the one whose
    ``CASE['matches']['errors']`` declares the verdict's kind and error text (its message
    and root cause) most specifically (:mod:`harness.inspect.hints`). ``None`` for a pass,
    for a batch that could not come back (see :func:`hint_for`), and when nothing matches.

    Args:
        verdict: the classified run.
        stderr: what the script and its workers wrote to stderr (or the pasted text).
        culprits: the findings of the failed run's loader, in the order found.
    """
    if verdict.outcome == "pass":
        return None
    text = f"{verdict.message}\n{verdict.root_cause}"
    if _batch_back(verdict, text, stderr):
        return None
    named = next((f.case for f in culprits if f.case), None)
    if named is not None:
        case = hints.catalogue_hints().cases.get(named)
        if case is not None:
            return case
    return hints.case_for_error(verdict.kind, text)


def hint_for(verdict: Verdict, timeout_s: float | None = None, stderr: str = "",
             culprits: Sequence[Finding] = ()) -> str | None:
    """A one-line fix hint naming the catalogue case with the same mechanism (:func:`case_for`).

    The hint names the case, its title and file in the catalogue, and its fix case's. A batch
    that could not be pickled on its way back (a queue feeder thread's ``_feed`` traceback in
    ``stderr`` with a pickling error, or a hang whose stderr says "it's not the same object
    as") gets :data:`BATCH_BACK_HINT`: the feeder thread drops the batch and the loader hangs
    under every start method. A run no case matches gets a word on what it is (a hang, a
    worker's own exception, a script that could not start).

    Args:
        verdict: the classified run.
        timeout_s: the run's timeout, named in a hang's hint.
        stderr: what the script and its workers wrote to stderr (or the pasted text).
        culprits: see :func:`case_for`.

    Returns:
        The hint, or ``None`` for ``pass``.
    """
    if verdict.outcome == "pass":
        return None
    if _batch_back(verdict, f"{verdict.message}\n{verdict.root_cause}", stderr):
        return BATCH_BACK_HINT
    case = case_for(verdict, stderr, culprits)
    if case is not None:
        return _case_hint(case)
    if verdict.outcome == "hang":
        limit = f" after {timeout_s:g} s" if timeout_s else ""
        return (f"the run did not finish{limit}, so it was killed with its whole process tree; a worker may "
                "be blocked or the script may wait for input (try a larger --timeout to tell a slow run from a hang)")
    if verdict.kind == "worker-exception":
        return "a worker raised; the root cause is the worker's own exception, which fails the same way under fork"
    if verdict.kind == "import":
        return "the script could not be started"
    return "no catalogue case matches this failure; the root cause is the decisive error line"


def _where(case: Case) -> str:
    """Where a user reads the case: ``harness explain ID`` and the case's file, by its absolute
    path (inside the installed package, or the checkout), never a path relative to a folder the
    user is not in."""
    return f"harness explain {case.id} ({case.path.resolve()})"


def _case_hint(case: Case) -> str:
    known = hints.catalogue_hints()
    hint = f"matches catalogue case {case.id} ({case.title}), {_where(case)}"
    fix_case = known.cases.get(case.fix) if case.fix else None
    if case.fix:
        hint += f"; fix: {known.fix_description(case.fix)}" + (f", {_where(fix_case)}" if fix_case else "")
    return hint


#: Most lines of the script's own output a reproduction keeps (its end).
OUTPUT_LINES = 20


def reproduce(script: Path, method: str = "spawn", timeout_s: float = DEFAULT_TIMEOUT_S,
              argv: list[str] | tuple[str, ...] = (), cwd: str | None = None,
              show_output: bool = False) -> Reproduction:
    """Run ``script`` as ``__main__`` under ``method`` in an isolated process tree.

    Args:
        script: path to the user's script.
        method: ``fork``, ``spawn``, ``forkserver`` or a platform alias.
        timeout_s: seconds before the run and its whole process tree are killed (``hang``).
        argv: the script's ``sys.argv[1:]``.
        cwd: directory to run in (default: the current directory).
        show_output: keep the end of the script's own output on a pass too (a failure keeps it).

    Raises:
        FileNotFoundError: ``script`` is not a file.
        UsageError: ``method`` is unknown or unavailable here (also a ``ValueError``).
    """
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"{script}: script not found")
    resolved = resolve_start_method(method, available=True)
    notebook = path.suffix.lower() == ".ipynb"
    state = None
    if notebook:
        from harness.notebook import kernel_run

        state = kernel_run.NotebookRun.prepare(path)
        case, argv = _script_case(kernel_run.DRIVER), state.argv
    else:
        case = _script_case(path)
    emulating = PROFILES.get(method)
    spec = ScriptSpec(case=case, method=resolved, num_workers=DEFAULT_WORKERS, timeout_s=timeout_s,
                      profile=emulating.id if emulating else None, argv=tuple(argv), cwd=cwd or os.getcwd())
    long_temp = emulated_temp_dir(emulating) if emulating else None
    try:
        run = launch_cell(spec)
    finally:
        if long_temp is not None:
            long_temp.close()
        cell = state.finish() if state is not None else None
    verdict = classify(run.observation)
    stderr = run.observation.stderr
    tail = [line for line in stderr.splitlines() if line.strip()][-12:]
    culprits = _culprits(run.observation.result) if verdict.outcome != "pass" else []
    case = case_for(verdict, stderr, culprits)  # type: ignore[assignment]
    hint = hint_for(verdict, timeout_s, stderr, culprits)
    if notebook and verdict.outcome != "pass":
        from harness.notebook.cells import move_hint

        move = move_hint(path, f"{stderr}\n{verdict.root_cause}")
        hint = f"{move}; {hint}" if move and hint else (move or hint)
    return Reproduction(script=str(script), method=resolved, requested=method, verdict=verdict,
                        duration_s=run.wall_s, hint=hint, culprits=[f.to_json() for f in culprits],
                        output=_output_tail(run.stdout) if verdict.outcome != "pass" or show_output else [],
                        stderr_tail=tail if verdict.outcome != "pass" else [], note=python_note(method),
                        case=case.id if case else None, fix=case.fix if case else None,
                        notebook=notebook, cell=cell if verdict.outcome != "pass" else None)


def _output_tail(stdout: str) -> list[str]:
    """The last :data:`OUTPUT_LINES` non-empty lines of what the script printed."""
    return [line.rstrip() for line in stdout.splitlines() if line.strip()][-OUTPUT_LINES:]


def _culprits(result: Any) -> list[Finding]:
    """The findings of the culprits the cell named after the script raised (the result's
    ``problems``, :mod:`harness.inspect.post_mortem`), matched to catalogue cases."""
    raw = result.get("problems") if isinstance(result, dict) else None
    if not isinstance(raw, list):
        return []
    known = {f.name for f in dataclasses.fields(Problem)}
    problems = []
    for item in raw[:50]:
        if not isinstance(item, dict):
            continue
        try:
            fields = {k: v for k, v in item.items() if k in known}
            fields["classes"] = tuple(fields.get("classes") or ())
            fields["holders"] = tuple(fields.get("holders") or ())
            problems.append(Problem(**fields))
        except TypeError:  # a record another version wrote
            continue
    return match_problems(problems) if problems else []


def _script_case(path: Path) -> Case:
    """The user's script as a script case of its own: run as ``__main__``, expected to pass."""
    abspath = path.resolve()
    return Case(id="reproduce", family="user-script", title=abspath.name, why="",
                expect=dict.fromkeys(METHODS, "pass"), sources=(), module=abspath.stem, path=abspath,
                root=abspath.parent, script=True, stdin=declared_stdin(abspath), root_on_pythonpath=False)


def reproduce_command(script: Path, method: str = "spawn", timeout_s: float = DEFAULT_TIMEOUT_S,
                      as_json: bool = False, argv: list[str] | tuple[str, ...] = (),
                      show_output: bool = False) -> int:
    """``harness reproduce``: print the result; return 0 on pass, 1 otherwise.

    Raises:
        UsageError: ``script`` is not a file, or ``method`` is unknown or unavailable here.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP: see :func:`harness._cli.main`) stopped the run;
            the script and its workers were killed.
    """
    try:
        result = reproduce(script, method=method, timeout_s=timeout_s, argv=argv, show_output=show_output)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        # The script runs in its own session, so the terminal's Ctrl-C never reaches it.
        kill_live_cells()
        raise Interrupted(f"interrupted; {script} and its workers were stopped") from None
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(terminal(result.format_text()))
    return 0 if result.verdict.outcome == "pass" else 1


#: Largest traceback ``harness classify`` keeps, in bytes; a longer input keeps its end.
CLASSIFY_MAX_BYTES = 4 * 2**20
#: Most bytes ``harness classify`` reads from a stream it cannot seek (a pipe, a device).
CLASSIFY_STREAM_LIMIT_BYTES = 64 * 2**20


def _read_tail(f: BinaryIO) -> bytes:
    """The last :data:`CLASSIFY_MAX_BYTES` of ``f``: seeking on a regular file, else reading at
    most :data:`CLASSIFY_STREAM_LIMIT_BYTES` (an endless stream such as ``/dev/zero`` stops there)."""
    try:
        if f.seekable():
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - CLASSIFY_MAX_BYTES))
            return f.read(CLASSIFY_MAX_BYTES)
    except (OSError, ValueError):
        pass
    tail = bytearray()
    total = 0
    while total < CLASSIFY_STREAM_LIMIT_BYTES:
        chunk = f.read(2**20)
        if not chunk:
            break
        total += len(chunk)
        tail += chunk
        if len(tail) > CLASSIFY_MAX_BYTES:
            del tail[: len(tail) - CLASSIFY_MAX_BYTES]
    return bytes(tail)


def classify_command(file: str, as_json: bool = False) -> int:
    """``harness classify FILE``: classify a pasted traceback, name the mechanism and the case.

    Uses :func:`harness.classify.classifier.classify_traceback` and :func:`hint_for`. ``-`` reads stdin.

    Returns:
        1 when an error was recognised (a finding), 0 when the text holds no error line.

    Raises:
        UsageError: the file cannot be read.
    """
    from harness.classify.classifier import classify_traceback

    try:
        if file == "-":
            if sys.stdin is None:
                raise OSError("standard input is closed")
            data = _read_tail(sys.stdin.buffer)
        else:
            with open(file, "rb") as f:
                data = _read_tail(f)
    except OSError as exc:
        raise UsageError(f"{file}: cannot read: {exc.strerror or exc}") from None
    text = data.decode("utf-8", errors="replace").replace("\x00", "")
    verdict = classify_traceback(text)
    if not verdict.root_cause and not verdict.message:
        print(json.dumps({"outcome": None, "kind": None, "root_cause": "", "hint": None, "case": None, "fix": None})
              if as_json else "no error line found")
        return 0
    hint = hint_for(verdict, stderr=text)
    if as_json:
        case = case_for(verdict, stderr=text)
        print(json.dumps({"outcome": verdict.outcome, "kind": verdict.kind, "root_cause": verdict.root_cause,
                          "message": verdict.message, "hint": hint, "case": case.id if case else None,
                          "fix": case.fix if case else None}, indent=2))
    else:
        print(f"{verdict.outcome} ({verdict.kind})")
        print(terminal(f"  root cause: {verdict.root_cause}"))
        if verdict.message and verdict.message != verdict.root_cause:
            print(terminal(f"  last error: {verdict.message}"))
        if hint:
            print(terminal(f"hint: {hint}"))
    return 1
