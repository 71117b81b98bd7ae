"""``harness diagnose``: which objects in a user's loader a spawn or forkserver start cannot pickle.

Flow: resolve the target (import the user's module or file, take the attribute, call it if it
is a factory) → build exactly what ``_MultiProcessingDataLoaderIter.__init__`` passes to each
worker ``Process`` (``torch/utils/data/dataloader.py``: ``args=(dataset_kind, dataset,
index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last, base_seed,
worker_init_fn, worker_id, num_workers, persistent_workers, shared_seed)``) → pickle the
user-supplied ones with ForkingPickler into a counting sink → if that fails, walk them
(:mod:`harness._walker`) → match every problem to a catalogue case and its fix.

The queues and the event are made by torch, not by the user, and are left out. The sampler
stays in the parent, but its indices cross each worker's index queue, pickled and unpickled,
under every start method: the first batch is drawn and round-tripped (paths rooted at
``indices``).

The user's code runs in the process that diagnoses: the target is the user's own loader, and
its objects must be live to be walked. :func:`diagnose` (and ``harness.assert_spawn_safe``)
run it in the caller's process; the ``harness diagnose`` command (:func:`diagnose_command`)
runs it in a child process (``python -m harness._diagnose_child``) in its own session or
process group, with a timeout after which the child's whole process tree is killed, and, on
POSIX, a bound on the child's address space (:data:`DEFAULT_MEMORY_GIB` more than the
interpreter has mapped once torch is imported; ``HARNESS_DIAGNOSE_MEMORY_GIB`` changes it, 0
lifts it). Whatever the user's code raises while it is imported, called, pickled, unpickled
or asked for indices (``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included)
is contained: a target that cannot be built is a one-line error (exit 2), anything raised
while pickling, unpickling or drawing indices is a problem at its path (exit 1). Only a real
Ctrl-C interrupts (:func:`harness._walker.user_code_guard`).

``harness diagnose`` exit codes: 0 safe; 1 unsafe, or the target's own code ended the child
process (``os._exit``, a signal) before it could report, one line naming the target and the
exit status; 2 the target cannot be built, or the diagnosis did not finish within
``--timeout`` or the memory bound (one line; no verdict); 130 interrupted (Ctrl-C, SIGTERM:
the child's tree is killed first). Standard output carries a diagnosis (text or JSON) only
when one was made; every other outcome is one line on standard error. What the user's code
prints goes to standard error, so ``--json`` output stays parseable.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._escape import terminal
from harness._walker import (
    NO_MESSAGE,
    Payload,
    Problem,
    _first_line,
    _type_name,
    find_problems,
    measure_payload,
    probe,
    reraise_if_interrupted,
    user_code_guard,
)

__all__ = [
    "DEFAULT_MEMORY_GIB",
    "DEFAULT_TIMEOUT_S",
    "DIAGNOSE_METHODS",
    "ChildRun",
    "Diagnosis",
    "Finding",
    "TargetError",
    "WorkerStart",
    "case_for_problem",
    "catalogue_cases",
    "fix_description",
    "pick_case",
    "diagnose",
    "diagnose_command",
    "diagnosis_from_child",
    "diagnosis_to_child",
    "first_indices",
    "index_problems",
    "load_target",
    "memory_limit_bytes",
    "run_child",
    "worker_start",
]

#: Start methods that pickle the worker arguments (``fork`` pickles nothing at start-up).
DIAGNOSE_METHODS = ("spawn", "forkserver")

#: Worker count assumed for a bare Dataset target (the loader's own count is used otherwise).
DEFAULT_NUM_WORKERS = 2

#: Seconds ``harness diagnose`` gives the child that runs the user's code (``--timeout``).
DEFAULT_TIMEOUT_S = 60.0
#: GiB of address space the child may map beyond what it has once torch is imported (POSIX);
#: ``HARNESS_DIAGNOSE_MEMORY_GIB`` overrides it, ``0`` lifts the bound.
DEFAULT_MEMORY_GIB = 4.0
MEMORY_ENV = "HARNESS_DIAGNOSE_MEMORY_GIB"

Progress = Callable[[str], None]


class TargetError(Exception):
    """The target cannot be resolved; ``str()`` is one line naming what failed."""


# -- target resolution ------------------------------------------------------------------------

def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(f"{name}: module not found") from None
        raise TargetError(f"{name}: import failed: {_describe(exc)}") from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything on import
        reraise_if_interrupted(exc)
        raise TargetError(f"{name}: import failed: {_describe(exc)}") from None


def _import_file(path: Path) -> Any:
    name = path.stem
    resolved = path.resolve()
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file and Path(existing_file).resolve() == resolved:
            return existing
        raise TargetError(f"{path}: module name {name!r} is already taken by "
                          f"{existing_file or 'a built-in module'}; rename the file or use package.module:attr")
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    # Registered under its name, so its functions and classes pickle by reference as they
    # would when a worker imports the module.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything on import
        sys.modules.pop(name, None)
        reraise_if_interrupted(exc)
        raise TargetError(f"{path}: import failed: {_describe(exc)}") from None
    return module


def _describe(exc: BaseException) -> str:
    """``Type: first line`` (``Type`` alone when the exception says nothing)."""
    line = _first_line(exc)
    name = type(exc).__name__
    return name if line == NO_MESSAGE else f"{name}: {line}"


def _kind_of(obj: Any) -> str | None:
    """``loader``, ``dataset`` or ``None``."""
    from torch.utils.data import DataLoader, Dataset

    if isinstance(obj, DataLoader):
        return "loader"
    if isinstance(obj, Dataset):
        return "dataset"
    if (not callable(obj) and hasattr(obj, "__getitem__") and hasattr(obj, "__len__")
            and not isinstance(obj, (str, bytes, bytearray, Mapping))):
        return "dataset"  # DataLoader accepts any sized indexable object as a map-style dataset
    return None


def _checked_kind(obj: Any, target: str) -> str | None:
    """:func:`_kind_of`, with whatever a hostile ``__getattr__`` or ``__class__`` raises as a
    :class:`TargetError`."""
    try:
        return _kind_of(obj)
    except BaseException as exc:  # noqa: BLE001 - user attribute hooks may raise anything
        reraise_if_interrupted(exc)
        raise TargetError(f"{target}: inspecting the object raised {_describe(exc)}") from None


def load_target(target: str, progress: Progress | None = None) -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr`` to a DataLoader or Dataset.

    ``attr`` may be dotted (``Factory.build``). A callable that is neither a DataLoader nor a
    Dataset is called with no arguments and must return one. The module's directory (for a
    file) or the current directory (for a module name, as ``python -m`` does) is on
    ``sys.path`` while importing and calling. This runs the user's code in this process, with
    no timeout: ``harness diagnose`` calls it in a child process.

    Args:
        target: the TARGET string.
        progress: called with a short description of each step before it starts
            (``"importing loaders"``, ``"calling make_loader()"``).

    Raises:
        TargetError: one line naming what failed: a malformed target, a missing file or
            module, an import that raised, a missing attribute, a factory that raised, or an
            object that is not a DataLoader or Dataset. Any exception the user's code raises
            counts, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included.
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived.
    """
    step = progress or (lambda _: None)
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise TargetError(f"{target!r}: expected package.module:attr or path/to/file.py:attr")
    is_file = module_part.endswith(".py") or "/" in module_part or os.sep in module_part
    extra = str(Path(module_part).resolve().parent) if is_file else os.getcwd()
    added = extra not in sys.path
    if added:
        sys.path.insert(0, extra)
    try:
        with user_code_guard():
            step(f"importing {module_part}")
            if is_file:
                path = Path(module_part)
                if not path.is_file():
                    raise TargetError(f"{module_part}: file not found")
                obj = _import_file(path)
            else:
                obj = _import_module(module_part)
            for part in attr.split("."):
                try:
                    obj = getattr(obj, part)
                except AttributeError:
                    raise TargetError(f"{module_part}: has no attribute {attr!r}") from None
                except BaseException as exc:  # noqa: BLE001 - a module __getattr__ may raise anything
                    reraise_if_interrupted(exc)
                    raise TargetError(f"{target}: getting {attr!r} raised {_describe(exc)}") from None
            if _checked_kind(obj, target) is None and callable(obj):
                step(f"calling {attr}()")
                try:
                    obj = obj()
                except BaseException as exc:  # noqa: BLE001 - the user's factory may raise anything
                    reraise_if_interrupted(exc)
                    raise TargetError(f"{target}: calling {attr}() raised {_describe(exc)}") from None
            kind = _checked_kind(obj, target)
    finally:
        if added and extra in sys.path:
            sys.path.remove(extra)
    if kind is None:
        t = type(obj)
        raise TargetError(f"{target}: got {t.__module__}.{t.__qualname__}, not a DataLoader, a Dataset "
                          "or a zero-argument callable returning one")
    return obj


# -- what a worker start pickles ----------------------------------------------------------------

@dataclass
class WorkerStart:
    """The user-supplied worker-loop arguments of one worker start.

    Attributes:
        roots: ``{"dataset": ..., "collate_fn": ..., "worker_init_fn": ...}``, the roots of
            every problem path.
        args: the tuple pickled for the payload size: the worker-loop arguments in torch's
            order, less the queues and the done event.
        num_workers: workers the loader starts (each gets its own copy of ``args``).
    """

    roots: dict[str, Any]
    args: tuple
    num_workers: int
    index_sampler: Any = None


def worker_start(obj: Any, num_workers: int | None = None) -> WorkerStart:
    """What a ``DataLoader`` (or a default ``DataLoader`` over a Dataset) sends each worker.

    Args:
        obj: a ``DataLoader``, a ``Dataset``, or any object ``DataLoader`` accepts as a dataset.
        num_workers: overrides the loader's ``num_workers``; for a bare dataset the default is
            :data:`DEFAULT_NUM_WORKERS`.
    """
    from torch.utils.data import DataLoader

    if not isinstance(obj, DataLoader):
        n = DEFAULT_NUM_WORKERS if num_workers is None else num_workers
        obj = DataLoader(obj, num_workers=n)  # no worker starts until it is iterated
    n = obj.num_workers if num_workers is None else num_workers
    roots = {"dataset": obj.dataset, "collate_fn": obj.collate_fn, "worker_init_fn": obj.worker_init_fn}
    args = (obj._dataset_kind, obj.dataset, obj._auto_collation, obj.collate_fn, obj.drop_last,
            0, obj.worker_init_fn, 0, n, obj.persistent_workers, None)
    return WorkerStart(roots=roots, args=args, num_workers=n, index_sampler=obj._index_sampler)


def first_indices(index_sampler: Any) -> Any:
    """The first item the main process puts on a worker's index queue, or ``None``.

    Draws one batch from a fresh iterator over the loader's index sampler (its
    ``batch_sampler``, or its ``sampler`` without automatic batching), with the global random
    states of torch, ``random`` and numpy saved and restored, so the caller's streams do not
    move. A sampler that raises an ``Exception`` gives ``None``: it fails the same way under
    every method.

    Raises:
        BaseException: what the sampler (or the dataset's ``__len__``) raises that is not an
            ``Exception`` (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``): it would
            end or abort the user's program; :func:`diagnose` reports it at ``indices``.
    """
    import random

    import numpy as np
    import torch

    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            return next(iter(index_sampler), None)
    except Exception:  # noqa: BLE001 - a broken sampler is not a start-method problem
        return None
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def index_problems(indices: Any) -> list[Problem]:
    """Problems with the indices a worker receives through its index queue.

    Indices are pickled into the queue and unpickled by the worker under every start method
    (``_MultiProcessingDataLoaderIter._try_put_index`` and ``torch.utils.data._utils.worker``),
    so they must survive a round trip through ForkingPickler, not only pickle. Paths are rooted
    at ``indices`` (the sampler's first batch).
    """
    import pickle
    from multiprocessing.reduction import ForkingPickler

    if indices is None:
        return []
    if probe(indices) is not None:
        return find_problems({"indices": indices})
    items = list(enumerate(indices)) if isinstance(indices, (list, tuple)) else [(None, indices)]
    for i, item in items:
        try:
            with user_code_guard():
                pickle.loads(ForkingPickler.dumps(item))
        except BaseException as exc:  # noqa: BLE001 - a failing reconstructor may raise anything
            reraise_if_interrupted(exc)
            return [Problem(
                path="indices" if i is None else f"indices[{i}]",
                type=_type_name(item),
                message=f"pickles, but unpickling in the worker fails: {_describe(exc)}",
                exc_type=type(exc).__name__,
                label="index-unpickle",
                root="indices",
            )]
    return []


def _raised(path: str, obj: Any, what: str, exc: BaseException, root: str) -> Problem:
    """A problem for user code that raised while the worker start was being prepared."""
    return Problem(path=path, type=_type_name(obj), message=f"{what} raised {_describe(exc)}",
                   exc_type=_type_name(exc), label="raised", root=root)


# -- catalogue matching --------------------------------------------------------------------------

def _by_root(root: str, specific: dict[str, list[str]], general: list[str]) -> list[str]:
    return specific.get(root, []) + general


def _in_local_class(qualname: str) -> bool:
    """``f.<locals>.Local.method`` or ``f.<locals>.Outer.Inner``: defined inside a local class."""
    return "<locals>." in qualname and "." in qualname.rsplit("<locals>.", 1)[1]


def _candidates(p: Problem) -> list[str]:
    """Catalogue case ids (exact first, then globs) that describe ``p``, best first."""
    if p.label == "raised":
        return []  # user code raised while the start was prepared: no catalogue case is about that
    worker_init = ["worker-init-fn-local", "*worker-init*"]
    collate = ["collate-fn-lambda", "*collate*lambda*"]
    if p.within == "zipfile":
        return ["dataset-zip-archive", "dataset-zip*", "*zip*"]
    if p.within == "tarfile":
        return ["*tar*"]
    if p.within == "log-handler":
        return ["dataset-log-handler", "*log*handler*", "*handler*"]
    if p.label == "lambda":
        if p.root == "collate_fn":
            return [*collate, "transform-lambda"]
        if p.root == "worker_init_fn":
            return [*worker_init, "transform-lambda"]
        if ".__init__.<locals>." in p.qualname:
            return ["dataset-lambda-attribute", "transform-lambda"]
        if "<locals>" not in p.qualname:
            return ["transform-lambda-module-level", "transform-lambda"]
        return ["transform-lambda"]
    if p.label in ("closure", "local-function"):
        if p.root == "worker_init_fn" and p.within != "partial":
            return [*worker_init, "transform-local-def"]
        if p.within == "partial":
            return ["transform-partial-local", "transform-local-def"]
        if _in_local_class(p.qualname):
            return ["transform-staticmethod-local-class", "transform-local-def"]
        if p.label == "closure":
            return ["transform-closure-captures-local", "transform-local-def"]
        return ["transform-local-def"]
    if p.label == "local-class":
        if _in_local_class(p.qualname):
            return ["transform-nested-class-local", "dataset-class-in-function"]
        return ["dataset-class-in-function"]
    if p.label == "open-file":
        return ["dataset-open-file"]
    if p.label == "sqlite":
        return ["dataset-sqlite-connection", "*sqlite*"]
    if p.label == "module":
        return ["dataset-module-object"]
    if p.label == "lock":
        return ["dataset-lock", "dataset-*lock*", "*thread-lock*"]
    if p.label == "generator":
        return ["dataset-generator", "dataset-generator*", "*iterdir*"]
    if p.label == "torch-generator":
        return ["dataset-torch-generator", "*torch-generator*"]
    if p.label == "index-unpickle" or p.root == "indices":
        return ["sampler-index-unpicklable", "sampler-index-*"]
    if p.label == "fork-context-semlock":
        return ["value-fork-context-spawn-loader", "*fork-context*", "*context-mix*", "*semlock*"]
    return []


_CATALOGUE: dict | None = None


def catalogue_cases() -> dict:
    """Case id → Case for the installed catalogue (read with ast, never imported); {} if absent."""
    global _CATALOGUE
    if _CATALOGUE is None:
        from harness._catalogue import CatalogueError, discover

        try:
            _CATALOGUE = discover().by_id()
        except CatalogueError:
            _CATALOGUE = {}
    return _CATALOGUE


def pick_case(candidates: list[str], exclude: tuple[str, ...] = ()) -> Any:
    """The first bad catalogue case matching a candidate id or glob, or ``None``."""
    cases = catalogue_cases()
    bad = sorted((c for c in cases.values() if c.bad), key=lambda c: c.id)
    for pattern in candidates:
        for case in bad:
            if fnmatch.fnmatchcase(case.id, pattern) and not any(x in case.id for x in exclude):
                return case
    return None


def case_for_problem(p: Problem) -> tuple[str | None, str | None]:
    """``(case id, fix case id)`` of the catalogue case that ``p`` matches, or ``(None, None)``."""
    exclude = ("torch",) if p.label == "generator" else ("semlock", "context") if p.label == "lock" else ()
    case = pick_case(_candidates(p), exclude)
    if case is None:
        return None, None
    return case.id, case.fix


def fix_description(fix_id: str | None) -> str:
    """``"id (title)"`` for a fix case, or ``"id"`` when the catalogue lacks it."""
    if not fix_id:
        return ""
    case = catalogue_cases().get(fix_id)
    return f"{fix_id} ({case.title})" if case else fix_id


# -- the diagnosis ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """One problem as reported: the walker's :class:`Problem` plus its catalogue match."""

    problem: Problem
    case: str | None
    fix: str | None

    def to_json(self) -> dict:
        """``{"path", "type", "message", "case", "fix"}``."""
        return {"path": self.problem.path, "type": self.problem.type, "message": self.problem.message,
                "case": self.case, "fix": self.fix}


@dataclass
class Diagnosis:
    """The result of diagnosing one loader.

    Attributes:
        target: what was diagnosed (the TARGET string, or a description of the object).
        method: ``spawn`` or ``forkserver``.
        findings: every problem, in the order found.
        payload: pickled sizes per worker, or ``None`` when the arguments do not pickle.
        num_workers: workers the loader starts.
    """

    target: str
    method: str
    findings: list[Finding] = field(default_factory=list)
    payload: Payload | None = None
    num_workers: int = 0

    @property
    def safe(self) -> bool:
        """No problem found."""
        return not self.findings

    def to_json(self) -> dict:
        """``{"target", "method", "safe", "problems", "payload_bytes", "num_workers"}``."""
        return {
            "target": self.target,
            "method": self.method,
            "safe": self.safe,
            "problems": [f.to_json() for f in self.findings],
            "payload_bytes": self.payload.total_bytes if self.payload else None,
            "num_workers": self.num_workers,
        }

    def format_text(self) -> str:
        """The human report: a verdict line, one block per problem, then the payload."""
        lines = []
        if self.safe:
            lines.append(f"{self.target}: SAFE under {self.method}: everything a worker start "
                         "sends pickles.")
        else:
            n = len(self.findings)
            lines.append(f"{self.target}: UNSAFE under {self.method}: {n} object{'s' if n != 1 else ''} "
                         "cannot be sent to a worker.")
            for i, f in enumerate(self.findings, 1):
                p = f.problem
                lines += ["", f"{i}. {p.path}", f"   type:    {p.type}", f"   message: {p.exc_type}: {p.message}"]
                if f.case:
                    fix = fix_description(f.fix)
                    lines.append(f"   matches case {f.case}" + (f"; fix: {fix}" if fix else ""))
                else:
                    lines.append("   matches no catalogue case")
        lines.append("")
        if self.payload is None:
            lines.append("payload: not measured (the worker arguments do not pickle)")
        else:
            per = self.payload.total_bytes
            lines.append(f"payload: {_size(per)} per worker x {self.num_workers} "
                         f"worker{'s' if self.num_workers != 1 else ''} = {_size(per * self.num_workers)}")
            if self.payload.buffer_bytes:
                lines.append(f"  of which {_size(self.payload.buffer_bytes)} per worker is array data "
                             "(numpy and other buffers)")
            if self.payload.storage_bytes:
                lines.append(f"  of which {_size(self.payload.storage_bytes)} per worker is torch tensor "
                             "storage, moved once to shared memory rather than copied per worker")
        return "\n".join(lines)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n:,} bytes ({n / scale:.2f} {unit})"
    return f"{n:,} bytes"


def _resolve_method(method: str) -> str:
    from harness._policy import resolve_method_alias

    resolved = resolve_method_alias(method)
    if resolved not in DIAGNOSE_METHODS:
        raise ValueError(f"method {method!r} resolves to {resolved!r}, which pickles nothing at worker "
                         f"start; choose one of {', '.join(DIAGNOSE_METHODS)} or a platform that uses them")
    return resolved


def diagnose(obj: Any, method: str = "spawn", num_workers: int | None = None, target: str | None = None,
             progress: Progress | None = None) -> Diagnosis:
    """Diagnose a live ``DataLoader`` or ``Dataset`` in this process.

    Runs the object's own code (reducers, ``__getstate__``, the sampler) in this process,
    with no timeout; whatever it raises, ``SystemExit``, ``KeyboardInterrupt`` and
    ``GeneratorExit`` included, is a finding at the path of the object whose code raised it.
    The walk is bounded (:data:`harness._walker.MAX_OBJECTS`; time and memory linear in the
    objects walked). ``harness diagnose`` runs this in a child process with a timeout.

    Args:
        obj: a ``DataLoader``, a ``Dataset`` (diagnosed as ``DataLoader(dataset)`` would start
            it), or any object ``DataLoader`` accepts as a dataset.
        method: ``spawn``, ``forkserver``, or a platform alias resolving to one of them
            (``windows``, ``macos``, ``linux-py3.14``); see :mod:`harness._policy`.
        num_workers: overrides the loader's worker count.
        target: the name to report; default ``repr``-like description of ``obj``.
        progress: called with a short description of each step before it starts.

    Returns:
        A :class:`Diagnosis`; ``payload`` is ``None`` when anything fails to pickle.

    Raises:
        ValueError: ``method`` is unknown or resolves to ``fork``.
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived; one raised by the object's own
            code is a finding instead (see :func:`harness._walker.user_code_guard`).
    """
    method = _resolve_method(method)
    step = progress or (lambda _: None)
    name = target or f"<{type(obj).__module__}.{type(obj).__qualname__} object>"
    with user_code_guard():
        try:
            start = worker_start(obj, num_workers)
        except BaseException as exc:  # noqa: BLE001 - DataLoader(obj) runs the object's own hooks
            reraise_if_interrupted(exc)
            p = _raised("dataset", obj, "DataLoader(dataset)", exc, "dataset")
            n = DEFAULT_NUM_WORKERS if num_workers is None else num_workers
            return Diagnosis(target=name, method=method, findings=[Finding(p, None, None)], num_workers=n)
        step("pickling the worker arguments")
        try:
            payload = measure_payload(start.args)
        except BaseException as exc:  # noqa: BLE001 - any pickling failure means: walk to find where
            reraise_if_interrupted(exc)
            payload = None
        findings: list[Finding] = []
        if payload is None:
            step("walking the worker arguments")
            problems = find_problems(start.roots)
            if not problems:  # the arguments fail only together; say so rather than pass silently
                exc = probe(start.args)
                problems = [Problem(path="(worker arguments)", type="tuple", message=_first_line(exc)
                                    if exc else "", exc_type=type(exc).__name__, label="other")]
            findings = [Finding(p, *case_for_problem(p)) for p in problems]
        step("drawing the first indices")
        try:
            indices = first_indices(start.index_sampler)
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt... from the sampler
            reraise_if_interrupted(exc)
            problems = [_raised("indices", start.index_sampler, "drawing the first indices", exc, "indices")]
        else:
            step("pickling the first indices")
            problems = index_problems(indices)
        findings += [Finding(p, *case_for_problem(p)) for p in problems]
    return Diagnosis(target=name, method=method, findings=findings, payload=payload,
                     num_workers=start.num_workers)


def diagnosis_to_child(result: Diagnosis) -> dict:
    """Everything :func:`diagnosis_from_child` needs to rebuild ``result`` in the parent."""
    return {
        "target": result.target, "method": result.method, "num_workers": result.num_workers,
        "payload": dataclasses.asdict(result.payload) if result.payload else None,
        "findings": [{"problem": dataclasses.asdict(f.problem), "case": f.case, "fix": f.fix}
                     for f in result.findings],
    }


def diagnosis_from_child(data: dict) -> Diagnosis:
    """The :class:`Diagnosis` that :func:`diagnosis_to_child` wrote in the child process."""
    return Diagnosis(
        target=data["target"], method=data["method"], num_workers=data["num_workers"],
        payload=Payload(**data["payload"]) if data["payload"] else None,
        findings=[Finding(Problem(**f["problem"]), f["case"], f["fix"]) for f in data["findings"]],
    )


# -- harness diagnose: the user's code in a child process ---------------------------------------

def memory_limit_bytes(environ: Mapping[str, str] | None = None) -> int | None:
    """Bytes of address space the diagnosis child may map beyond its start, or ``None``.

    Read from ``HARNESS_DIAGNOSE_MEMORY_GIB`` (GiB, a number; ``0`` lifts the bound), default
    :data:`DEFAULT_MEMORY_GIB`. Applied only on POSIX (``resource.RLIMIT_AS``).

    Raises:
        ValueError: the variable is not a finite number >= 0.
    """
    raw = (os.environ if environ is None else environ).get(MEMORY_ENV, "").strip()
    if not raw:
        gib = DEFAULT_MEMORY_GIB
    else:
        try:
            gib = float(raw)
        except ValueError:
            raise ValueError(f"{MEMORY_ENV}={raw!r}: not a number of GiB") from None
        if not math.isfinite(gib) or gib < 0:
            raise ValueError(f"{MEMORY_ENV}={raw!r}: must be a finite number >= 0 (0: no bound)")
    return int(gib * (1 << 30)) if gib > 0 else None


@dataclass
class ChildRun:
    """How the diagnosis child ended.

    Attributes:
        result: what the child wrote (``{"kind": "diagnosis" | "target-error" | "memory" |
            "error", ...}``; see :mod:`harness._diagnose_child`), or ``None`` when it ended
            without writing it.
        returncode: its exit status (negative: killed by that signal), or ``None``.
        timed_out: it ran past the timeout and its tree was killed.
        stage: the last step it announced (``"calling make_loader()"``), or ``""``.
    """

    result: dict | None
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

    root = os.path.realpath(Path(__file__).resolve().parent.parent)
    sites = [*site.getsitepackages(), site.getusersitepackages()] if hasattr(site, "getsitepackages") else []
    if root in {os.path.realpath(d) for d in sites}:
        return
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, root])


def run_child(target: str, method: str, num_workers: int | None, timeout_s: float,
              memory_bytes: int | None) -> ChildRun:
    """Run load_target + diagnose on ``target`` in ``python -m harness._diagnose_child``.

    The child runs in the current directory, in its own session (POSIX) or process group
    (Windows), with its standard output sent to this process's standard error. After
    ``timeout_s`` seconds, or when it ends, or on ``KeyboardInterrupt``, its whole process
    tree is killed (:func:`harness._proctree.kill_tree`); the containment watchdog
    (:mod:`harness._containment`) kills it too if this process is killed first.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM while waiting (the tree is killed first).
    """
    import shutil
    import subprocess
    import tempfile

    from harness import _containment
    from harness._proctree import kill_tree

    workdir = Path(tempfile.mkdtemp(prefix="hd-"))
    spec = {"target": target, "method": method, "num_workers": num_workers, "memory_bytes": memory_bytes,
            "result": str(workdir / "result.json"), "stage": str(workdir / "stage.txt")}
    env = _containment.child_env()
    _child_pythonpath(env)
    kwargs: dict = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    try:
        stdout: Any = sys.__stderr__.fileno() if sys.__stderr__ is not None else subprocess.DEVNULL
    except (OSError, ValueError):
        stdout = subprocess.DEVNULL
    timed_out = False
    try:
        proc = subprocess.Popen([sys.executable, "-m", "harness._diagnose_child", json.dumps(spec)],
                                stdin=subprocess.DEVNULL, stdout=stdout, env=env, **kwargs)
        _containment.track(proc.pid)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on KeyboardInterrupt: nothing the user's code started outlives this
            kill_tree(proc.pid)
            proc.wait()
            _containment.untrack(proc.pid)
        result = None
        try:
            result = json.loads((workdir / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            result = None
        try:
            stage = (workdir / "stage.txt").read_text(encoding="utf-8").strip()
        except OSError:
            stage = ""
        return ChildRun(result=None if timed_out else result, returncode=proc.returncode,
                        timed_out=timed_out, stage=stage)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _ended(returncode: int | None, memory: int | None) -> str:
    """``exited with status 3`` or ``was killed by signal SIGKILL``, with a word on the memory
    bound for the signals a failed allocation in C code ends with."""
    import signal

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


def diagnose_command(target: str, method: str = "spawn", as_json: bool = False,
                     num_workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
    """``harness diagnose``: diagnose ``target`` in a child process and print the diagnosis.

    Args:
        target: ``package.module:attr`` or ``path/to/file.py:attr``.
        method: ``spawn`` or ``forkserver`` (or a platform alias resolving to one).
        as_json: print one JSON object instead of the text report.
        num_workers: overrides the loader's worker count.
        timeout_s: seconds the child may run (import, factory, pickling, walk) before its
            process tree is killed.

    Returns:
        0 safe; 1 unsafe, or the child was ended by the target's own code before it could
        report; 2 bad target, bad ``HARNESS_DIAGNOSE_MEMORY_GIB``, timeout or memory bound
        reached; 130 interrupted. Everything but a diagnosis is one line on stderr.
    """
    import signal
    import threading

    try:
        method = _resolve_method(method)
        memory = memory_limit_bytes()
    except ValueError as exc:
        _say(f"harness diagnose: error: {exc}")
        return 2

    def interrupt(signum, frame):  # noqa: ARG001 - SIGTERM: stop like Ctrl-C, killing the child's tree
        raise KeyboardInterrupt

    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, interrupt)
    try:
        run = run_child(target, method, num_workers, timeout_s, memory)
    except KeyboardInterrupt:
        _say(f"harness diagnose: interrupted; the process diagnosing {target} was stopped")
        return 130
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    while_ = f" while {run.stage}" if run.stage else ""
    if run.timed_out:
        _say(f"harness diagnose: error: {target}: timed out after {timeout_s:g} s{while_}; the process "
             "tree running it was killed (a longer --timeout gives it more time)")
        return 2
    result = run.result
    if result is None:
        _say(f"harness diagnose: {target}: UNSAFE: the process running it {_ended(run.returncode, memory)}"
             f"{while_}, before it could report: the target's own code ended it")
        return 1
    kind = result.get("kind")
    if kind == "diagnosis":
        diagnosis = diagnosis_from_child(result["diagnosis"])
        if as_json:
            print(json.dumps(diagnosis.to_json(), indent=2))
        else:  # names and messages come from the user's code: no escape sequence reaches the terminal
            print(terminal(diagnosis.format_text()))
        return 0 if diagnosis.safe else 1
    message = result.get("message", "")
    if kind == "memory" or "MemoryError" in message:
        limit = f" (limit: {_gib(memory)} more than at start; set {MEMORY_ENV} to change it, 0 lifts it)" if memory else ""
        _say(f"harness diagnose: error: {target}: ran out of memory{while_}{limit}: {message}")
        return 2
    if kind == "target-error":
        _say(f"harness diagnose: error: {message}")
    else:
        _say(f"harness diagnose: error: {target}: {message}")
    return 2


def _say(line: str) -> None:
    """Print one line to stderr, escaped: the target and messages come from the user's code."""
    print(terminal(line, one_line=True), file=sys.stderr)


def _gib(n: int | None) -> str:
    return f"{(n or 0) / (1 << 30):g} GiB"
