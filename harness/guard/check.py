"""One construction checked: what a worker start of a ``DataLoader`` (or ``Dataset``) would meet.

:func:`snapshot` runs in the test process when the object's construction ends
(:mod:`harness.guard.watch`). It never iterates the object and never loads anything there:

1. what a worker start sends (:func:`harness.inspect.worker_start.worker_start`: the dataset,
   ``collate_fn``, ``worker_init_fn`` and the rest of ``_worker_loop``'s arguments; a bare
   dataset as ``DataLoader(dataset, num_workers=2)`` would send it) is pickled as a spawn or
   forkserver start pickles it (:mod:`harness.guard.payload`). If that fails, the pickle-path
   walker finds every culprit at its path, here and now (:func:`harness.inspect.walker.find_problems`);
2. else the bytes, and the index sampler pickled on its own, go to the clean checker
   (:mod:`harness.child.checker`), which loads them as a spawned worker would, draws the
   first indices, builds the first batch and sends it back. Version hazards (objects that a
   newer Python will not pickle) are looked for here too.

:func:`resolve` turns the checker's reply into findings. A global that the clean interpreter
cannot find (``Can't get attribute 'X' on <module 'm'>``, ``No module named 'm'``) is traced
back to every object that refers to it (:func:`harness.inspect.walker.find_references`), so a
finding names the object and where it is defined, here as in ``harness diagnose``.
"""

from __future__ import annotations

import builtins
import pickle
from dataclasses import dataclass, field
from typing import Any

from harness.guard.checker import Checker, CheckerGone, CheckerRestarted
from harness.guard.payload import pickle_for_checker, pickle_sampler
from harness.guard.watch import Site
from harness.inspect import sites
from harness.inspect.diagnose import Finding, match_problems
from harness.inspect.walker import (
    HAZARDS,
    Payload,
    Problem,
    class_names,
    find_problems,
    find_references,
    hazard_probe,
    measure_payload,
    reraise_if_interrupted,
    type_name,
    user_code_guard,
)
from harness.inspect.worker_start import DEFAULT_NUM_WORKERS, WorkerStart, worker_start

__all__ = ["Verdict", "resolve", "snapshot", "submit"]


@dataclass
class Verdict:
    """What one construction site's object would meet at a worker start.

    Attributes:
        kind: ``loader`` (a ``DataLoader``) or ``dataset`` (a ``Dataset`` no loader of the
            test wraps, checked as ``DataLoader(dataset, num_workers=2)``).
        type_name: the object's class, ``module.qualname``.
        site: where it was constructed (absolute file, line), or ``None``.
        num_workers: the loader's ``num_workers`` (a dataset: the assumed count).
        method: ``spawn`` or ``forkserver``.
        findings: what makes it fail on this Python, each with its catalogue case.
        hazards: what a newer Python will not pickle (never a failure).
        note: what was not checked, and why (``""``: everything was).
        warning: what may break a spawned worker that cannot be decided without running the
            dataset in this process (the first batch raised in the clean worker), or ``""``.
        tests: the node ids of the tests that constructed an object here.
    """

    kind: str
    type_name: str
    site: Site | None
    num_workers: int
    method: str
    findings: list[Finding] = field(default_factory=list)
    hazards: list[Finding] = field(default_factory=list)
    note: str = ""
    warning: str = ""
    tests: list[str] = field(default_factory=list)
    start: WorkerStart | None = field(default=None, repr=False)
    request: int | None = field(default=None, repr=False)
    sent: tuple[dict[str, Any], list[bytes]] | None = field(default=None, repr=False)
    problems: list[Problem] = field(default_factory=list, repr=False)
    payload: Payload | None = field(default=None, repr=False)

    @property
    def unsafe(self) -> bool:
        """Something a worker cannot receive, load or send back, on this Python."""
        return bool(self.findings)

    @property
    def pending(self) -> bool:
        """The checker's reply is still to be read (:func:`resolve`)."""
        return self.request is not None

    def what(self) -> str:
        """How the failure reads: a loader with workers fails; one without, and a bare
        dataset, would fail once workers are used."""
        if self.kind == "dataset":
            return f"would fail once in a DataLoader with workers ({self.method} start)"
        if self.num_workers == 0:
            return f"would fail once workers are used (num_workers=0 here; {self.method} start)"
        return f"fails when its {self.num_workers} workers start under {self.method}"


def _start_of(obj: Any, kind: str) -> WorkerStart:
    """What a start sends; a bare dataset, or a loader with ``num_workers=0``, as it would be
    sent with :data:`DEFAULT_NUM_WORKERS` workers (``get_worker_info().num_workers`` included)."""
    if kind == "dataset" or getattr(obj, "num_workers", 0) == 0:
        start = worker_start(obj, DEFAULT_NUM_WORKERS)
        if kind == "loader":
            start.num_workers = 0  # the loader's own count, for the words of the finding
        return start
    return worker_start(obj, None)


def snapshot(obj: Any, kind: str, site: Site | None, method: str, checker: Checker | None,
             sharing_strategy: str | None) -> Verdict:
    """Pickle ``obj``'s worker start now, walk it if that fails, else send it to ``checker``
    (with ``checker=None``, keep it in ``verdict.sent`` for :func:`submit`: a dataset that a
    loader may still wrap).

    Raises:
        KeyboardInterrupt: a real Ctrl-C; whatever the user's code raises is a finding.
    """
    verdict = Verdict(kind=kind, type_name=type_name(obj), site=site, num_workers=0, method=method)
    with user_code_guard():
        try:
            start = _start_of(obj, kind)
        except BaseException as exc:  # noqa: BLE001 - DataLoader(dataset) runs the dataset's own hooks
            reraise_if_interrupted(exc)
            verdict.note = f"DataLoader(dataset) raised {type(exc).__name__}; not checked"
            return verdict
        verdict.num_workers = start.num_workers if kind == "loader" else DEFAULT_NUM_WORKERS
        verdict.start = start
        try:
            pickled = pickle_for_checker(start.args)
        except BaseException as exc:  # noqa: BLE001 - the walk says where
            reraise_if_interrupted(exc)
            verdict.problems = _walked(start, exc)
            verdict.note = "the worker arguments do not pickle, so loading and the first batch were not checked"
            return verdict
        try:  # the start's own sizes; under file_descriptor, also a tensor freed before the worker opens it
            verdict.payload = measure_payload(start.args)
        except BaseException as exc:  # noqa: BLE001 - the walk says where
            reraise_if_interrupted(exc)
            verdict.problems = _walked(start, exc)
            verdict.note = "the worker arguments do not make it to a worker, so loading and the first batch were not checked"
            return verdict
        if any(h.applies() for h in HAZARDS) and hazard_probe(start.args) is not None:
            verdict.problems = [p for p in find_problems(start.roots, hazards=True) if p.breaks_on]
        sampler = pickle_sampler(start.index_sampler)
    import os

    header = {"sys_path": _sys_path(), "cwd": _cwd(), "sharing_strategy": sharing_strategy,
              "buffers": pickled.buffers, "environ": dict(os.environ), "project_root": sites.project_root()}
    verdict.sent = (header, [pickled.data, sampler, *pickled.blobs])
    if checker is not None:
        submit(verdict, checker)
    return verdict


def submit(verdict: Verdict, checker: Checker) -> None:
    """Send what :func:`snapshot` pickled to ``checker``, once; nothing when nothing is to send."""
    if verdict.sent is not None and verdict.request is None:
        verdict.request = checker.submit(*verdict.sent)


def _sys_path() -> list[str]:
    import sys

    return [p for p in sys.path if isinstance(p, str)]


def _cwd() -> str:
    import os

    try:
        return os.getcwd()
    except OSError:
        return ""


def _walked(start: WorkerStart, failure: BaseException) -> list[Problem]:
    """Every culprit of a dump that failed; one problem for the whole when no part fails alone."""
    problems = find_problems(start.roots, hazards=True)
    if not any(not p.breaks_on for p in problems):
        problems.insert(0, _problem("(worker arguments)", start.args, str(failure).strip().splitlines()[0]
                                    if str(failure).strip() else type(failure).__name__,
                                    type(failure).__name__, "other", "dataset"))
    return _anchored(problems, [start.roots["dataset"]])


def _problem(path: str, obj: Any, message: str, exc_type: str, label: str, root: str) -> Problem:
    return Problem(path=path, type=type_name(obj) if obj is not None else "", message=message,
                   exc_type=exc_type, label=label, root=root,
                   classes=class_names(type(obj)) if obj is not None else ())


def _anchored(problems: list[Problem], anchors: list[Any]) -> list[Problem]:
    import dataclasses

    file, line = sites.first_user_site(anchors)
    if file is None:
        return problems
    return [p if p.file else dataclasses.replace(p, file=file, line=line) for p in problems]


def _exception(error: str, exc_type: str) -> BaseException:
    """An exception like the checker's: same class where it is a built-in or pickle's."""
    message = error[len(exc_type) + 2:] if error.startswith(exc_type + ": ") else ""
    cls = getattr(builtins, exc_type, None) or getattr(pickle, exc_type, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = type(exc_type, (Exception,), {})
    try:
        return cls(message)  # type: ignore[no-any-return]
    except BaseException:  # noqa: BLE001 - an exception class with another signature
        return Exception(message)


def resolve(verdict: Verdict, checker: Checker) -> Verdict:
    """Read the checker's reply to the load, then (after the test: building the first batch
    runs the dataset's own code) ask for the first batch and read that reply; fill
    ``findings``, ``hazards``, ``note`` and ``warning``.

    Raises:
        KeyboardInterrupt: a real Ctrl-C.
    """
    for _attempt in range(3):  # again when the checker died working on another object
        try:
            _read_replies(verdict, checker)
            break
        except CheckerRestarted:
            assert verdict.sent is not None
            verdict.request = checker.submit(*verdict.sent)
    found = match_problems(verdict.problems) if verdict.problems else []
    verdict.findings = [f for f in found if not f.problem.breaks_on]
    verdict.hazards = [f for f in found if f.problem.breaks_on]
    _test_doubles_warn(verdict)
    verdict.start = None  # the live objects are not needed any more
    verdict.sent = None
    return verdict


#: Classes of :mod:`unittest.mock`: test doubles, which stand for the real object in a test only.
_MOCK_PREFIX = "unittest.mock."


def _is_test_double(problem: Problem) -> bool:
    return any(name.startswith(_MOCK_PREFIX) for name in (problem.type, *problem.classes, *problem.holders))


def _test_doubles_warn(verdict: Verdict) -> None:
    """Findings that only a ``unittest.mock`` object on the path causes become one warning: a
    ``Mock`` never pickles (``Can't pickle <class 'unittest.mock.Mock'>``), but in real use the
    object it stands for is there instead, so the test says nothing of a real worker start."""
    doubles = [f for f in verdict.findings if _is_test_double(f.problem)]
    if not doubles:
        return
    verdict.findings = [f for f in verdict.findings if not _is_test_double(f.problem)]
    own = [f.problem.path for f in doubles if f.problem.type.startswith(_MOCK_PREFIX)]
    shortest = min(own or [f.problem.path.removesuffix(".__class__") for f in doubles], key=len)
    words = (f"{shortest} is or holds a unittest.mock test double, which no worker can receive "
             f"({len(doubles)} object{'s' if len(doubles) != 1 else ''} on its path); "
             "not a finding: the real object it stands for is what a worker would receive")
    verdict.warning = f"{verdict.warning}; {words}" if verdict.warning else words


def _read_replies(verdict: Verdict, checker: Checker) -> None:
    """The load's reply, then the first batch's (requested now, after the test).

    Raises:
        CheckerRestarted: the checker died working on another request; send this one again.
    """
    if verdict.request is None:
        return
    request = verdict.request
    try:
        reply = checker.reply(request)
    except CheckerRestarted:
        raise
    except CheckerGone as exc:
        reply = {"load": {"error": f"a worker loading these arguments would not survive: {exc}",
                          "exc_type": "WorkerDied"}}
    verdict.request = None
    with user_code_guard():
        verdict.problems += _load_reply_problems(verdict, reply)
    if verdict.note or "error" in (reply.get("load") or {}) or "internal" in reply:
        return
    batch = checker.submit({"batch": request}, [])
    try:
        reply = checker.reply(batch)
    except CheckerRestarted:
        verdict.request = request
        raise
    except CheckerGone as exc:
        reply = {"batch": {"error": f"the first batch did not come back from a worker: {exc}",
                           "exc_type": "WorkerDied"}}
    with user_code_guard():
        verdict.problems += _batch_reply_problems(verdict, reply)


def _load_reply_problems(verdict: Verdict, reply: dict[str, Any]) -> list[Problem]:
    start = verdict.start
    assert start is not None
    if "internal" in reply:
        verdict.note = f"not checked: the checker failed: {reply['internal'].get('error')}"
        return []
    load = reply.get("load") or {}
    if "error" in load:
        verdict.note = "the arguments do not load in a worker, so the first batch was not checked"
        return _load_problems(start, str(load["error"]), str(load.get("exc_type") or "Exception"), load.get("global"))
    return []


def _batch_reply_problems(verdict: Verdict, reply: dict[str, Any]) -> list[Problem]:
    start = verdict.start
    assert start is not None
    dataset = start.roots["dataset"]
    anchors = [start.roots["collate_fn"], dataset]
    if "internal" in reply:
        verdict.note = f"first batch not checked: the checker failed: {reply['internal'].get('error')}"
        return []
    for leg, root, label, what in (("indices", "indices", "raised", "drawing the first indices raised "),
                                   ("batch", "batch", "raised", "building the first batch raised "),
                                   ("back", "batch", "other", "")):
        part = reply.get(leg) or {}
        if part.get("note") == "raised":
            verdict.warning = (
                f"{what or 'sending the first batch back raised '}{part.get('error')} in a clean "
                f"{verdict.method} worker; unless the same raises in the test process, it depends on "
                "state its parent process set, which a spawned worker does not have")
            return []
        if "note" in part:
            verdict.note = f"first batch not checked: {part['note']}"
            return []
        if "error" in part:
            exc_type = str(part.get("exc_type") or "Exception")
            error = str(part["error"])
            message = f"{what}{error}" if what and exc_type != "WorkerDied" else (
                error[len(exc_type) + 2:] if error.startswith(exc_type + ": ") else error)
            problem = _problem(root, None, message, exc_type, label, root)
            return _anchored([problem], [start.sampler, dataset] if leg == "indices" else anchors)
    return []


def _load_problems(start: WorkerStart, error: str, exc_type: str, missing: Any) -> list[Problem]:
    """The objects whose loading fails in a clean interpreter, found by what they refer to."""
    cause = _exception(error, exc_type)
    problems: list[Problem] = []
    if isinstance(missing, list) and len(missing) == 2 and all(isinstance(m, str) for m in missing):
        module, name = missing
        problems = find_references(start.roots, module, None if exc_type == "ModuleNotFoundError" else name, cause)
    if not problems and exc_type != "WorkerDied":
        # not a global a clean worker cannot find: the objects' own loading code fails there;
        # walk their round trips here (the test has ended) to name the object
        problems = [p for p in find_problems(start.roots, load=True) if p.label == "unpickle"]
    if not problems:
        problems = [_problem("(worker arguments)", start.args,
                             f"pickles, but unpickling in the worker fails: {error}", exc_type, "unpickle", "dataset")]
    return _anchored(problems, [start.roots["dataset"]])
