"""Diagnosing one loader: which objects break a ``spawn`` or ``forkserver`` worker start.

:func:`diagnose` follows the whole round trip of one worker start of a live ``DataLoader`` or
``Dataset`` (:func:`harness.inspect.worker_start.follow_trip`: send the arguments, load them
as the worker does, send the first indices, build the first batch in the worker's copy and
send it back), matches every problem to the catalogue case that stands for it
(:mod:`harness.inspect.hints`), and returns a :class:`Diagnosis`: the findings that make the
loader unsafe on this Python, the version hazards that a newer Python would add, and the
payload each worker receives. How it is written out: :mod:`harness.inspect.output` (text,
GitHub workflow commands) and :meth:`Diagnosis.to_json`.

The user's code runs in the process that diagnoses: the target is the user's own loader, and
its objects must be live to be walked. :func:`diagnose` (and ``harness.assert_spawn_safe``)
runs it in the caller's process; the ``harness diagnose`` command
(:mod:`harness.inspect.diagnose_command`) runs it in a child process
(``python -m harness.inspect.diagnose_child``) with a timeout and a memory bound, and rebuilds the
result in the parent (:func:`diagnosis_to_child`, :func:`diagnosis_from_child`). Whatever the
user's code raises while it is pickled, unpickled or asked for indices (``SystemExit``,
``KeyboardInterrupt`` and ``GeneratorExit`` included) is a problem at its path; only a real
Ctrl-C interrupts (:func:`harness.inspect.walker.user_code_guard`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from harness.inspect import hints
from harness.inspect.target import Progress, quiet
from harness.inspect.walker import Payload, Problem, user_code_guard
from harness.inspect.worker_start import follow_trip

__all__ = [
    "DIAGNOSE_METHODS",
    "Diagnosis",
    "Finding",
    "diagnose",
    "diagnosis_from_child",
    "diagnosis_to_child",
    "match_problems",
    "resolve_method",
]

#: Start methods that pickle the worker arguments (``fork`` pickles nothing at start-up).
DIAGNOSE_METHODS = ("spawn", "forkserver")

_BACK_NOTE = (
    "the first batch, built in the worker by the dataset and collate_fn, is pickled back to the main "
    "process; when that fails the worker's queue feeder thread prints the error and drops the batch, "
    "and the loader waits for it forever, under every start method, fork included"
)


@dataclass(frozen=True)
class Finding:
    """One problem as reported: the walker's :class:`Problem` plus its catalogue match.

    Attributes:
        problem: the problem.
        case: the id of the catalogue case that stands for it (:mod:`harness.inspect.hints`),
            or ``None``.
        fix: the id of that case's fix, or ``None``.
    """

    problem: Problem
    case: str | None
    fix: str | None

    def to_json(self) -> dict[str, Any]:
        """``{"path", "type", "message", "case", "fix", "file", "line"}``, plus ``"breaks_on"``
        (``"3.14"``) for a version hazard and ``"cell"`` for a culprit defined in a notebook. ``file`` and ``line`` are ``null`` when the culprit
        has no site (see :mod:`harness.inspect.sites`)."""
        p = self.problem
        out: dict[str, Any] = {
            "path": p.path,
            "type": p.type,
            "message": p.message,
            "case": self.case,
            "fix": self.fix,
            "file": p.file,
            "line": p.line,
        }
        if p.breaks_on:
            out["breaks_on"] = p.breaks_on
        if p.cell is not None:
            out["cell"] = p.cell
        return out

    @property
    def location(self) -> str:
        """``file:line`` (``NOTEBOOK.ipynb, cell N, line M`` in a notebook), or ``""`` when the
        culprit has no site."""
        p = self.problem
        if p.file and p.cell is not None:
            return f"{p.file}, cell {p.cell}, line {p.line}"
        return f"{p.file}:{p.line}" if p.file else ""

    @property
    def stage(self) -> str:
        """Which leg of the trip fails: ``send`` (pickling the worker's arguments), ``load``
        (unpickling them or the indices in the worker), ``indices`` (drawing or pickling the
        indices) or ``back`` (the first batch on its way back)."""
        p = self.problem
        if p.root == "batch":
            return "back"
        if p.label in ("unpickle", "index-unpickle"):
            return "load"
        return "indices" if p.root == "indices" else "send"

    @property
    def why(self) -> str:
        """What happens to a batch that cannot come back (``""`` for every other problem)."""
        return _BACK_NOTE if self.stage == "back" and self.problem.label != "raised" else ""

    def title(self, method: str) -> str:
        """A short title for an annotation: what fails, and where."""
        p = self.problem
        if p.breaks_on:
            return f"Breaks on Python {p.breaks_on}: {p.path}"
        return {
            "send": f"Cannot be sent to a {method} worker: {p.path}",
            "load": f"A {method} worker cannot unpickle {p.path}",
            "indices": f"Indices cannot reach a worker: {p.path}",
            "back": f"The first batch cannot come back from a worker: {p.path}",
        }[self.stage]


@dataclass
class Diagnosis:
    """The result of diagnosing one loader.

    Attributes:
        target: what was diagnosed (the TARGET string, or a description of the object).
        method: ``spawn`` or ``forkserver``.
        findings: every problem on this Python, in the order found (they make it unsafe).
        payload: pickled sizes per worker, or ``None`` when the arguments do not pickle.
        num_workers: workers the loader starts.
        hazards: every object that pickles on this Python but not on a newer one
            (``problem.breaks_on``); they do not make it unsafe.
        batch_note: why the first batch was not checked, or ``""`` when it was.
    """

    target: str
    method: str
    findings: list[Finding] = field(default_factory=list)
    payload: Payload | None = None
    num_workers: int = 0
    hazards: list[Finding] = field(default_factory=list)
    batch_note: str = ""

    @property
    def safe(self) -> bool:
        """No problem found on this Python (hazards do not count)."""
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        """``{"target", "method", "safe", "problems", "hazards", "payload_bytes", "num_workers"}``;
        each problem and hazard as :meth:`Finding.to_json`."""
        return {
            "target": self.target,
            "method": self.method,
            "safe": self.safe,
            "problems": [f.to_json() for f in self.findings],
            "hazards": [f.to_json() for f in self.hazards],
            "payload_bytes": self.payload.total_bytes if self.payload else None,
            "num_workers": self.num_workers,
        }

    def headline(self) -> str:
        """The verdict, without the target: ``UNSAFE under spawn: 2 objects cannot be sent to a
        worker.`` (``cannot make the round trip to a worker and back`` when one fails to load or
        to come back)."""
        if self.safe:
            back = "" if self.batch_note else ", and the first batch comes back"
            return f"SAFE under {self.method}: everything a worker start sends pickles and loads{back}."
        return f"UNSAFE under {self.method}: {self.what_fails()}."

    def what_fails(self, worker: str = "a worker") -> str:
        """``2 objects cannot be sent to a worker`` when every problem is on the way there, else
        ``1 object cannot make the round trip to a worker and back``; ``worker`` names it."""
        from harness.inspect.output import plural

        n = plural(len(self.findings), "object")
        if all(f.stage in ("send", "indices") for f in self.findings):
            return f"{n} cannot be sent to {worker}"
        return f"{n} cannot make the round trip to {worker} and back"

    def format_text(self) -> str:
        """The human report (:func:`harness.inspect.output.format_text`)."""
        from harness.inspect.output import format_text

        return format_text(self)

    def format_github(self) -> str:
        """GitHub workflow commands (:func:`harness.inspect.output.format_github`)."""
        from harness.inspect.output import format_github

        return format_github(self)


def resolve_method(method: str) -> str:
    """``spawn`` or ``forkserver`` for a start method or a platform alias resolving to one.

    Raises:
        UsageError: ``method`` is unknown, or resolves to ``fork`` (which pickles nothing at
            worker start); also a ``ValueError``.
    """
    from harness._options import resolve_start_method

    return resolve_start_method(method, option="method", allowed=DIAGNOSE_METHODS)


def diagnose(
    obj: Any,
    method: str = "spawn",
    num_workers: int | None = None,
    target: str | None = None,
    progress: Progress | None = None,
) -> Diagnosis:
    """Diagnose a live ``DataLoader`` or ``Dataset`` in this process: the whole round trip of a
    worker start (:mod:`harness.inspect.worker_start`: send, load, indices, first batch back).

    Runs the object's own code (reducers, ``__getstate__``, ``__setstate__``, the sampler, and
    on the loaded copies ``worker_init_fn``, ``__getitem__`` and ``collate_fn``) in this
    process, with no timeout; whatever it raises, ``SystemExit``, ``KeyboardInterrupt`` and
    ``GeneratorExit`` included, is a finding at the path of the object whose code raised it
    (an ``Exception`` from ``worker_init_fn``, the dataset or ``collate_fn`` while building the
    first batch fails the same way under every start method: the batch is then not checked,
    and ``batch_note`` says so). The walk is bounded (:data:`harness.inspect.walker.MAX_OBJECTS`;
    time and memory linear in the objects walked); loading needs memory for one copy of the
    pickled arguments (array and tensor data excluded). ``harness diagnose`` runs this in a
    child process with a timeout.

    Args:
        obj: a ``DataLoader``, a ``Dataset`` (diagnosed as ``DataLoader(dataset)`` would start
            it), or any object ``DataLoader`` accepts as a dataset.
        method: ``spawn``, ``forkserver``, or a platform alias resolving to one of them
            (``windows``, ``macos``, ``linux-py3.14``); see :mod:`harness._policy`. Pickling
            follows this Python's rules; a newer Python's are reported as hazards.
        num_workers: overrides the loader's worker count.
        target: the name to report; default ``repr``-like description of ``obj``.
        progress: called with a short description of each step before it starts.

    Returns:
        A :class:`Diagnosis`; ``payload`` is ``None`` when anything fails to pickle.

    Raises:
        UsageError: ``method`` is unknown or resolves to ``fork`` (also a ``ValueError``).
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived; one raised by the object's own
            code is a finding instead (see :func:`harness.inspect.walker.user_code_guard`).
    """
    method = resolve_method(method)
    name = target or f"<{type(obj).__module__}.{type(obj).__qualname__} object>"
    with user_code_guard():
        trip = follow_trip(obj, num_workers, progress or quiet)
    findings = _findings(trip.problems)
    return Diagnosis(
        target=name,
        method=method,
        num_workers=trip.num_workers,
        payload=trip.payload,
        findings=[f for f in findings if not f.problem.breaks_on],
        hazards=[f for f in findings if f.problem.breaks_on],
        batch_note=trip.batch_note,
    )


def _findings(problems: list[Problem]) -> list[Finding]:
    """Each problem with the catalogue case that stands for it (the catalogue is read only when
    there is a problem)."""
    if not problems:
        return []
    known = hints.catalogue_hints()
    out = []
    for p in problems:
        case = known.case_for_problem(p) or _case_for_load_error(known, p)
        out.append(Finding(p, case.id if case else None, case.fix if case else None))
    return out


def _case_for_load_error(known: hints.Hints, p: Problem) -> Any:
    """For an object that failed to load in a clean worker (``unpickle``), the case whose
    error declaration matches the worker's own error, as ``reproduce`` matches a run's
    (``Can't get attribute 'X' on <module '__main__'>`` is a ``main-attribute`` error)."""
    if p.label != "unpickle":
        return None
    from harness.classify.classifier import classify_traceback

    text = p.message.split("fails: ", 1)[-1]
    verdict = classify_traceback(text)
    return known.case_for_error(verdict.kind, f"{verdict.message}\n{verdict.root_cause}\n{text}")


def diagnosis_to_child(result: Diagnosis) -> dict[str, Any]:
    """Everything :func:`diagnosis_from_child` needs to rebuild ``result`` in the parent (JSON)."""

    def findings(items: list[Finding]) -> list[dict[str, Any]]:
        return [
            {"problem": dataclasses.asdict(f.problem), "case": f.case, "fix": f.fix} for f in items
        ]

    return {
        "target": result.target,
        "method": result.method,
        "num_workers": result.num_workers,
        "payload": dataclasses.asdict(result.payload) if result.payload else None,
        "findings": findings(result.findings),
        "hazards": findings(result.hazards),
        "batch_note": result.batch_note,
    }


def _problem(data: dict[str, Any]) -> Problem:
    """A :class:`Problem` from its JSON form (its tuples arrive as lists)."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return Problem(**fields)


def diagnosis_from_child(data: dict[str, Any]) -> Diagnosis:
    """The :class:`Diagnosis` that :func:`diagnosis_to_child` wrote in the child process."""

    def findings(items: list[dict[str, Any]]) -> list[Finding]:
        return [Finding(_problem(f["problem"]), f["case"], f["fix"]) for f in items]

    return Diagnosis(
        target=data["target"],
        method=data["method"],
        num_workers=data["num_workers"],
        payload=Payload(**data["payload"]) if data["payload"] else None,
        findings=findings(data["findings"]),
        hazards=findings(data.get("hazards", [])),
        batch_note=data.get("batch_note", ""),
    )


def match_problems(problems: list[Problem]) -> list[Finding]:
    """Each problem as a :class:`Finding`, with the catalogue case that stands for it
    (:func:`harness.inspect.hints.catalogue_hints`; read only when there is a problem)."""
    return _findings(problems)
