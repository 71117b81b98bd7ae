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

Unlike the matrix, this imports *user* code into the harness process: the target is the
user's own loader, and its objects must be live to be walked.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._walker import Payload, Problem, find_problems, measure_payload, probe

__all__ = [
    "DIAGNOSE_METHODS",
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
    "first_indices",
    "index_problems",
    "load_target",
    "worker_start",
]

#: Start methods that pickle the worker arguments (``fork`` pickles nothing at start-up).
DIAGNOSE_METHODS = ("spawn", "forkserver")

#: Worker count assumed for a bare Dataset target (the loader's own count is used otherwise).
DEFAULT_NUM_WORKERS = 2


class TargetError(Exception):
    """The target cannot be resolved; ``str()`` is one line naming what failed."""


# -- target resolution ------------------------------------------------------------------------

def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(f"{name}: module not found") from None
        raise TargetError(f"{name}: import failed: {type(exc).__name__}: {exc}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code may raise anything on import
        raise TargetError(f"{name}: import failed: {type(exc).__name__}: {_one_line(exc)}") from None


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
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code may raise anything on import
        del sys.modules[name]
        raise TargetError(f"{path}: import failed: {type(exc).__name__}: {_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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


def load_target(target: str) -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr`` to a DataLoader or Dataset.

    ``attr`` may be dotted (``Factory.build``). A callable that is neither a DataLoader nor a
    Dataset is called with no arguments and must return one. The module's directory (for a
    file) or the current directory (for a module name, as ``python -m`` does) is on
    ``sys.path`` while importing and calling.

    Raises:
        TargetError: one line naming what failed: a malformed target, a missing file or
            module, an import error, a missing attribute, a factory that raised, or an object
            that is not a DataLoader or Dataset.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise TargetError(f"{target!r}: expected package.module:attr or path/to/file.py:attr")
    is_file = module_part.endswith(".py") or "/" in module_part or os.sep in module_part
    extra = str(Path(module_part).resolve().parent) if is_file else os.getcwd()
    added = extra not in sys.path
    if added:
        sys.path.insert(0, extra)
    try:
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
            except Exception as exc:  # noqa: BLE001 - a module __getattr__ may raise anything
                raise TargetError(f"{target}: getting {attr!r} raised {type(exc).__name__}: {_one_line(exc)}") from None
        if _kind_of(obj) is None and callable(obj):
            try:
                obj = obj()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's factory may raise anything
                raise TargetError(f"{target}: calling {attr}() raised {type(exc).__name__}: {_one_line(exc)}") from None
    finally:
        if added and extra in sys.path:
            sys.path.remove(extra)
    if _kind_of(obj) is None:
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
    move. A sampler that raises gives ``None``: it fails the same way under every method.
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
            pickle.loads(ForkingPickler.dumps(item))
        except Exception as exc:  # noqa: BLE001 - a failing reconstructor may raise anything
            t = type(item)
            return [Problem(
                path="indices" if i is None else f"indices[{i}]",
                type=f"{t.__module__}.{t.__qualname__}".removeprefix("builtins."),
                message=f"pickles, but unpickling in the worker fails: {type(exc).__name__}: "
                        f"{(str(exc).strip().splitlines() or [''])[0]}",
                exc_type=type(exc).__name__,
                label="index-unpickle",
                root="indices",
            )]
    return []


# -- catalogue matching --------------------------------------------------------------------------

def _by_root(root: str, specific: dict[str, list[str]], general: list[str]) -> list[str]:
    return specific.get(root, []) + general


def _in_local_class(qualname: str) -> bool:
    """``f.<locals>.Local.method`` or ``f.<locals>.Outer.Inner``: defined inside a local class."""
    return "<locals>." in qualname and "." in qualname.rsplit("<locals>.", 1)[1]


def _candidates(p: Problem) -> list[str]:
    """Catalogue case ids (exact first, then globs) that describe ``p``, best first."""
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


def diagnose(obj: Any, method: str = "spawn", num_workers: int | None = None, target: str | None = None) -> Diagnosis:
    """Diagnose a live ``DataLoader`` or ``Dataset`` in this process.

    Args:
        obj: a ``DataLoader``, a ``Dataset`` (diagnosed as ``DataLoader(dataset)`` would start
            it), or any object ``DataLoader`` accepts as a dataset.
        method: ``spawn``, ``forkserver``, or a platform alias resolving to one of them
            (``windows``, ``macos``, ``linux-py3.14``); see :mod:`harness._policy`.
        num_workers: overrides the loader's worker count.
        target: the name to report; default ``repr``-like description of ``obj``.

    Returns:
        A :class:`Diagnosis`; ``payload`` is ``None`` when anything fails to pickle.

    Raises:
        ValueError: ``method`` is unknown or resolves to ``fork``.
    """
    method = _resolve_method(method)
    start = worker_start(obj, num_workers)
    name = target or f"<{type(obj).__module__}.{type(obj).__qualname__} object>"
    try:
        payload = measure_payload(start.args)
    except Exception:  # noqa: BLE001 - any pickling failure means: walk to find where
        payload = None
    findings: list[Finding] = []
    if payload is None:
        problems = find_problems(start.roots)
        if not problems:  # the arguments fail only together; say so rather than pass silently
            exc = probe(start.args)
            problems = [Problem(path="(worker arguments)", type="tuple", message=str(exc).splitlines()[0]
                                if exc else "", exc_type=type(exc).__name__, label="other")]
        findings = [Finding(p, *case_for_problem(p)) for p in problems]
    findings += [Finding(p, *case_for_problem(p)) for p in index_problems(first_indices(start.index_sampler))]
    return Diagnosis(target=name, method=method, findings=findings, payload=payload,
                     num_workers=start.num_workers)


def diagnose_command(target: str, method: str = "spawn", as_json: bool = False,
                     num_workers: int | None = None) -> int:
    """``harness diagnose``: print the diagnosis; return 0 safe, 1 unsafe, 2 bad target.

    Errors go to stderr as one line naming the target part that failed.
    """
    try:
        method = _resolve_method(method)
        obj = load_target(target)
    except (TargetError, ValueError) as exc:
        print(f"harness diagnose: error: {exc}", file=sys.stderr)
        return 2
    result = diagnose(obj, method=method, num_workers=num_workers, target=target)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.format_text())
    return 0 if result.safe else 1
