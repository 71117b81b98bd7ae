"""``harness diagnose``: which objects in a user's loader break a spawn or forkserver worker start.

Flow: resolve the target (import the user's module or file, take the attribute, call it if it
is a factory) → build exactly what ``_MultiProcessingDataLoaderIter.__init__`` passes to each
worker ``Process`` (``torch/utils/data/dataloader.py``: ``args=(dataset_kind, dataset,
index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last, base_seed,
worker_init_fn, worker_id, num_workers, persistent_workers, shared_seed)``) → follow the whole
round trip of a worker start:

1. pickle the user-supplied arguments with ForkingPickler into a counting sink (the payload);
2. load them back, as the worker does (:func:`harness.inspect.walker.roundtrip`: same pickler and
   protocol): a dataset wrapper whose ``__getattr__`` forwards to ``self.dataset`` pickles,
   but loading it recurses (``__setstate__`` is looked up before the instance has
   attributes) and every spawn worker dies;
3. draw the sampler's first indices and round-trip them (they cross the index queue under
   every start method; paths rooted at ``indices``);
4. build the first batch in the worker's loaded copy, exactly as ``_worker_loop`` does (seeds,
   ``get_worker_info()``, ``worker_init_fn(0)``, the fetcher: ``__getitems__`` or one item per
   index, auto-collation, ``collate_fn``), and round-trip it: a batch that cannot be pickled
   back (a class ``collate_fn`` makes at each call under the name of a module-level class) is
   dropped by the worker's queue feeder thread and the loader hangs under every start
   method, fork included (paths rooted at ``batch``). A batch the worker would not send (the
   dataset or ``collate_fn`` raises an ``Exception``, re-raised in the main process under
   every method; an exhausted iterable dataset) is not checked, and says so;
5. if anything failed, walk the objects (:mod:`harness.inspect.walker`) to every culprit's path, and
   also list version hazards: objects that pickle on this Python but not on a newer one
   (``itertools`` iterators from Python 3.14), which do not make the loader unsafe here;
6. match every problem to a catalogue case and its fix, and place it in the source
   (:mod:`harness.inspect.sites`): a function, lambda or class where it is defined, an instance of a
   user-defined class at its class, and an object with no definition site of its own (an
   open file, a lock) at the nearest enclosing user-defined object on its path, else at the
   code that produced its root (the sampler or dataset for ``indices``, ``collate_fn`` or the
   dataset for ``batch``), else nowhere (``file`` and ``line`` ``None``).

The queues and the event are made by torch, not by the user, and are left out.

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
Ctrl-C interrupts (:func:`harness.inspect.walker.user_code_guard`). Loading the arguments and building
the first batch run the user's ``__setstate__``, ``worker_init_fn``, ``__getitem__`` and
``collate_fn`` on the loaded copies, never on the user's live objects, with the random
states of ``random``, numpy and torch saved and restored.

``harness diagnose TARGET [TARGET ...]`` diagnoses each target in its own child process, one
after the other, and exits with the worst: 0 all safe (hazards do not count); 1 any unsafe,
or a target's own code ended its child process (``os._exit``, a signal) before it could
report, one line naming the target and the exit status; 2 any target cannot be built, or
its diagnosis did not finish within ``--timeout`` or the memory bound (one line each; no
verdict; the other targets are still diagnosed and reported); 130 interrupted (Ctrl-C,
SIGTERM: the child's tree is killed first, and no later target runs). Standard output carries
the diagnoses (``--format text``, ``json`` or ``github``); every other outcome is one line on
standard error (and, with ``github``, also an ``::error`` command on standard output). What
the user's code prints goes to standard error, so JSON output stays parseable.
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.inspect import sites
from harness._escape import terminal, visible
from harness.inspect.walker import (
    HAZARDS,
    Payload,
    Problem,
    _describe,
    _first_line,
    _type_name,
    find_problems,
    hazard_probe,
    measure_payload,
    probe,
    reraise_if_interrupted,
    roundtrip,
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
    "FORMATS",
    "fix_description",
    "pick_case",
    "diagnose",
    "diagnose_command",
    "diagnosis_from_child",
    "diagnosis_to_child",
    "first_batch",
    "first_indices",
    "github_command",
    "github_commands",
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

#: ``harness diagnose --format`` choices.
FORMATS = ("text", "json", "github")

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
            order, less the queues and the done event: ``(dataset_kind, dataset,
            auto_collation, collate_fn, drop_last, base_seed, worker_init_fn, worker_id,
            num_workers, persistent_workers, shared_seed)``, for worker 0 with base seed 0.
        num_workers: workers the loader starts (each gets its own copy of ``args``).
        index_sampler: the loader's ``batch_sampler``, or its ``sampler`` without automatic
            batching: what the main process draws indices from.
        sampler: the loader's ``sampler`` (where a problem rooted at ``indices`` with no site
            of its own is placed, when it is user-defined).
    """

    roots: dict[str, Any]
    args: tuple
    num_workers: int
    index_sampler: Any = None
    sampler: Any = None


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
    return WorkerStart(roots=roots, args=args, num_workers=n, index_sampler=obj._index_sampler, sampler=obj.sampler)


#: :func:`first_batch` and :func:`_draw_indices`: there is nothing (no batch the worker would
#: send back, no index drawn).
NOTHING = object()


def first_indices(index_sampler: Any) -> Any:
    """The first item the main process puts on a worker's index queue, or ``None``.

    ``None`` also when the sampler is empty or raises an ``Exception``; see :func:`_draw_indices`.

    Raises:
        BaseException: see :func:`_draw_indices`.
    """
    drawn = _draw_indices(index_sampler)
    return None if drawn is NOTHING else drawn


def _draw_indices(index_sampler: Any) -> Any:
    """The first item the main process puts on a worker's index queue, or :data:`NOTHING`.

    Draws one batch from a fresh iterator over the loader's index sampler (its
    ``batch_sampler``, or its ``sampler`` without automatic batching), with the global random
    states of torch, ``random`` and numpy saved and restored, so the caller's streams do not
    move. A sampler that raises an ``Exception``, or is empty, gives :data:`NOTHING`: it fails
    the same way under every method. (An iterable dataset without batching draws ``None``.)

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
            return next(iter(index_sampler), NOTHING)
    except Exception:  # noqa: BLE001 - a broken sampler is not a start-method problem
        return NOTHING
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def first_batch(args: tuple, indices: Any) -> Any:
    """The first batch worker 0 sends back, built from ``args`` as ``_worker_loop`` builds it.

    ``args`` is the worker's own copy of the arguments (:attr:`WorkerStart.args` after a
    :func:`harness.inspect.walker.roundtrip`), so nothing the user's code does here touches the live
    loader. As in ``torch/utils/data/_utils/worker.py``: ``random``, torch and numpy are seeded
    from ``base_seed + worker_id``, ``get_worker_info()`` describes worker 0, ``worker_init_fn(0)``
    runs, and the fetcher (``_DatasetKind.create_fetcher``) fetches ``indices``: ``dataset[i]``
    for each index (or ``__getitems__``) then ``collate_fn`` under automatic batching, else
    ``collate_fn(dataset[index])``, or the next items of an iterable dataset. Torch's thread
    count and signal handlers are left alone. The random states and ``get_worker_info()`` are
    restored afterwards.

    Returns:
        The batch, or :data:`NOTHING` when the worker would send none back: ``worker_init_fn``,
        the dataset or ``collate_fn`` raised an ``Exception`` (the worker sends it to the main
        process, which re-raises it, under every start method, ``num_workers=0`` included) or
        an iterable dataset is exhausted.

    Raises:
        BaseException: what the user's code raises that is not an ``Exception``
            (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``): it ends the worker.
    """
    import random

    import numpy as np
    import torch
    from torch.utils.data import _DatasetKind
    from torch.utils.data._utils import worker as torch_worker

    kind, dataset, auto_collation, collate_fn, drop_last, base_seed, init_fn, worker_id, n = args[:9]
    py_state, np_state = random.getstate(), np.random.get_state()
    previous_info = torch_worker._worker_info
    try:
        with torch.random.fork_rng(devices=[]):
            seed = base_seed + worker_id
            random.seed(seed)
            torch.manual_seed(seed)
            np.random.seed(torch_worker._generate_state(base_seed, worker_id))
            torch_worker._worker_info = torch_worker.WorkerInfo(id=worker_id, num_workers=n, seed=seed,
                                                                dataset=dataset)
            try:
                if init_fn is not None:
                    init_fn(worker_id)
                fetcher = _DatasetKind.create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                return fetcher.fetch(indices)
            except Exception:  # noqa: BLE001 - sent to the main process and re-raised there, under every method
                return NOTHING
    finally:
        torch_worker._worker_info = previous_info
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

    if indices is None or indices is NOTHING:
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
            file, line = sites.site_along(item, [indices])
            return [Problem(
                path="indices" if i is None else f"indices[{i}]",
                type=_type_name(item),
                message=f"pickles, but unpickling in the worker fails: {_describe(exc)}",
                exc_type=type(exc).__name__,
                label="index-unpickle",
                root="indices",
                file=file,
                line=line,
            )]
    return []


def _raised(path: str, obj: Any, what: str, exc: BaseException, root: str, anchors: list) -> Problem:
    """A problem for user code that raised while the worker start was being prepared; placed
    at ``obj``'s site or the first of ``anchors`` with a user-defined one."""
    file, line = sites.site_along(obj, anchors)
    return Problem(path=path, type=_type_name(obj), message=f"{what} raised {_describe(exc)}",
                   exc_type=_type_name(exc), label="raised", root=root, file=file, line=line)


# -- catalogue matching --------------------------------------------------------------------------

def _by_root(root: str, specific: dict[str, list[str]], general: list[str]) -> list[str]:
    return specific.get(root, []) + general


def _in_local_class(qualname: str) -> bool:
    """``f.<locals>.Local.method`` or ``f.<locals>.Outer.Inner``: defined inside a local class."""
    return "<locals>." in qualname and "." in qualname.rsplit("<locals>.", 1)[1]


def _candidates(p: Problem) -> list[str]:
    """Catalogue case ids (exact first, then globs) that describe ``p``, best first."""
    if p.label == "itertools":
        return ["dataset-itertools-cycle", "*itertools*"]
    if p.label in ("raised", "unpickle") or p.root == "batch":
        # User code raised while the start was prepared, an object that does not load, a batch
        # that cannot come back: no catalogue case shows these (the message and site say it).
        return []
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
        """``{"path", "type", "message", "case", "fix", "file", "line"}``, plus ``"breaks_on"``
        (``"3.14"``) for a version hazard. ``file`` and ``line`` are ``null`` when the culprit
        has no site (see :mod:`harness.inspect.sites`)."""
        p = self.problem
        out = {"path": p.path, "type": p.type, "message": p.message, "case": self.case, "fix": self.fix,
               "file": p.file, "line": p.line}
        if p.breaks_on:
            out["breaks_on"] = p.breaks_on
        return out

    @property
    def location(self) -> str:
        """``file:line``, or ``""`` when the culprit has no site."""
        p = self.problem
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


_BACK_NOTE = ("the first batch, built in the worker by the dataset and collate_fn, is pickled back to the main "
              "process; when that fails the worker's queue feeder thread prints the error and drops the batch, "
              "and the loader waits for it forever, under every start method, fork included")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


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

    def to_json(self) -> dict:
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
        n = _plural(len(self.findings), "object")
        if all(f.stage in ("send", "indices") for f in self.findings):
            return f"{n} cannot be sent to {worker}"
        return f"{n} cannot make the round trip to {worker} and back"

    def format_text(self) -> str:
        """The human report: a verdict line, one block per problem, the hazards, then the payload."""
        lines = [f"{self.target}: {self.headline()}"]
        for i, f in enumerate(self.findings, 1):
            lines += ["", *_finding_lines(i, f)]
        if self.hazards:
            n = len(self.hazards)
            lines += ["", f"hazards: {_plural(n, 'object')} {'pickles' if n == 1 else 'pickle'} on Python "
                      f"{_python()} but not on a newer Python (not counted as unsafe here):"]
            for i, f in enumerate(self.hazards, 1):
                lines += ["", *_finding_lines(i, f)]
        if self.batch_note:
            lines += ["", f"first batch: not checked: {self.batch_note}"]
        lines.append("")
        if self.payload is None:
            lines.append("payload: not measured (the worker arguments do not pickle)")
        else:
            per = self.payload.total_bytes
            lines.append(f"payload: {_size(per)} per worker x {_plural(self.num_workers, 'worker')} "
                         f"= {_size(per * self.num_workers)}")
            if self.payload.buffer_bytes:
                lines.append(f"  of which {_size(self.payload.buffer_bytes)} per worker is array data "
                             "(numpy and other buffers)")
            if self.payload.storage_bytes:
                lines.append(f"  of which {_size(self.payload.storage_bytes)} per worker is torch tensor "
                             "storage, moved once to shared memory rather than copied per worker")
        return "\n".join(lines)

    def format_github(self) -> str:
        """GitHub workflow commands, one line per problem (``::error``) and per hazard
        (``::warning``), each with ``file`` and ``line`` where the culprit has a site; ``""``
        for a safe loader with no hazard. See :func:`github_commands`."""
        return "\n".join(github_commands(self))


def _finding_lines(i: int, f: Finding) -> list[str]:
    p = f.problem
    lines = [f"{i}. {p.path}"]
    if f.location:
        lines.append(f"   at:      {f.location}")
    short = p.exc_type.rsplit(".", 1)[-1]
    # "pickles, but unpickling in the worker fails: RecursionError: ..." names its exception already
    message = p.message if f"{short}:" in p.message or p.message.endswith(short) else f"{p.exc_type}: {p.message}"
    lines += [f"   type:    {p.type}", f"   message: {message}"]
    if p.breaks_on:
        lines.append(f"   breaks:  on Python {p.breaks_on} and later")
    if f.why:
        lines.append(f"   why:     {f.why}")
    if f.case:
        fix = fix_description(f.fix)
        lines.append(f"   matches case {f.case}" + (f"; fix: {fix}" if fix else ""))
    else:
        lines.append("   matches no catalogue case")
    return lines


def _github_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    """A workflow command property value, escaped as GitHub's toolkit does (``escapeProperty``)."""
    return visible(_github_escape(text).replace(":", "%3A").replace(",", "%2C"))


def _github_data(text: str) -> str:
    """A workflow command message, escaped as GitHub's toolkit does (``escapeData``)."""
    return visible(_github_escape(text))


def github_command(level: str, message: str, title: str, file: str | None = None, line: int | None = None) -> str:
    """One GitHub workflow command: ``::error file=F,line=L,title=T::message`` (``level`` is
    ``error`` or ``warning``; no ``file``/``line`` when ``file`` is ``None``).

    Escaping follows ``@actions/core``'s ``command.ts``: in property values ``%``, ``\\r``,
    ``\\n``, ``:`` and ``,`` become ``%25``, ``%0D``, ``%0A``, ``%3A`` and ``%2C``; in the
    message ``%``, ``\\r`` and ``\\n``. Other control characters are written as Python escapes
    (:func:`harness._escape.visible`), so the line stays one line.
    """
    props = []
    if file:
        props.append(f"file={_github_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    props.append(f"title={_github_property(title)}")
    return f"::{level} {','.join(props)}::{_github_data(message)}"


def github_commands(result: Diagnosis) -> list[str]:
    """``::error`` per problem and ``::warning`` per hazard of ``result``: the title names what
    fails and the path, the message the target, type, exception, message and matching case."""
    out = []
    for level, findings in (("error", result.findings), ("warning", result.hazards)):
        for f in findings:
            p = f.problem
            message = f"{result.target}: {p.path} ({p.type}): {p.exc_type}: {p.message}"
            if f.why:
                message += f"; {f.why}"
            if f.case:
                fix = fix_description(f.fix)
                message += f"; matches case {f.case}" + (f"; fix: {fix}" if fix else "")
            out.append(github_command(level, message, f.title(result.method), p.file, p.line))
    return out


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
    """Diagnose a live ``DataLoader`` or ``Dataset`` in this process: the whole round trip of a
    worker start (see the module docstring: send, load, indices, first batch back).

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
        ValueError: ``method`` is unknown or resolves to ``fork``.
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived; one raised by the object's own
            code is a finding instead (see :func:`harness.inspect.walker.user_code_guard`).
    """
    method = _resolve_method(method)
    step = progress or (lambda _: None)
    name = target or f"<{type(obj).__module__}.{type(obj).__qualname__} object>"
    with user_code_guard():
        try:
            start = worker_start(obj, num_workers)
        except BaseException as exc:  # noqa: BLE001 - DataLoader(obj) runs the object's own hooks
            reraise_if_interrupted(exc)
            p = _raised("dataset", obj, "DataLoader(dataset)", exc, "dataset", [])
            n = DEFAULT_NUM_WORKERS if num_workers is None else num_workers
            return Diagnosis(target=name, method=method, findings=[Finding(p, None, None)], num_workers=n,
                             batch_note="the loader could not be built")
        step("pickling the worker arguments")
        payload, failure = None, None
        try:
            payload = measure_payload(start.args)
        except BaseException as exc:  # noqa: BLE001 - any pickling failure means: walk to find where
            reraise_if_interrupted(exc)
            failure = exc
        dataset = start.roots["dataset"]
        problems, loaded = _trip(start.roots, start.args, "the worker arguments", step, "(worker arguments)",
                                 [dataset], failure)
        step("drawing the first indices")
        try:
            indices = _draw_indices(start.index_sampler)
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt... from the sampler
            reraise_if_interrupted(exc)
            indices = NOTHING
            problems.append(_raised("indices", start.index_sampler, "drawing the first indices", exc, "indices",
                                    [start.sampler, dataset]))
            index_failed = True
        else:
            step("pickling the first indices")
            found = index_problems(indices)
            problems += found
            index_failed = bool(found)
        batch_note = _batch_note(loaded, indices, index_failed)
        if not batch_note:
            step("building the first batch in the worker's copy of the loader")
            try:
                batch = first_batch(loaded, _received(indices))
            except BaseException as exc:  # noqa: BLE001 - SystemExit... from worker_init_fn, the dataset, collate_fn
                reraise_if_interrupted(exc)
                problems.append(_raised("batch", loaded[1], "building the first batch", exc, "batch",
                                        [start.roots["collate_fn"], dataset]))
            else:
                if batch is NOTHING:
                    batch_note = ("worker_init_fn, the dataset or collate_fn raised an Exception (the main process "
                                  "re-raises it under every start method) or the dataset is exhausted")
                else:
                    step("pickling the first batch back to the main process")
                    found, _ = _trip({"batch": batch}, batch, "the first batch", step, "batch",
                                     [start.roots["collate_fn"], dataset], loader="the main process")
                    problems += found
    findings = [Finding(p, *case_for_problem(p)) for p in problems if not p.breaks_on]
    hazards = [Finding(p, *case_for_problem(p)) for p in problems if p.breaks_on]
    return Diagnosis(target=name, method=method, findings=findings, payload=payload,
                     num_workers=start.num_workers, hazards=hazards, batch_note=batch_note)


def _received(indices: Any) -> Any:
    """The indices as the worker receives them: through ForkingPickler and back."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    return pickle.loads(ForkingPickler.dumps(indices))


def _batch_note(loaded: Any, indices: Any, index_failed: bool) -> str:
    """Why the first batch cannot be built as a worker would (``""`` when it can)."""
    if loaded is NOTHING:
        return "the worker arguments do not make it to a worker"
    if index_failed:
        return "the first indices do not make it to a worker"
    if indices is NOTHING:
        return "the sampler gave no indices"
    return ""


def _trip(roots: dict[str, Any], whole: Any, what: str, step: Progress, whole_path: str, anchors: list,
          dump_failure: BaseException | None = None, loader: str = "a worker") -> tuple[list[Problem], Any]:
    """The problems of ``whole``'s round trip (and its hazards), and its loaded copy.

    ``whole`` is pickled and loaded back as a worker does; if that fails, or it holds an object
    a newer Python will not pickle, ``roots`` (its parts, by root name) are walked. A failure
    that no part shows on its own is one problem at ``whole_path``. Problems with no site of
    their own are placed at the first of ``anchors`` with a user-defined one.

    Args:
        dump_failure: what pickling ``whole`` raised, when that is known already; the round
            trip is then skipped.
        loader: who unpickles it, for the progress line.

    Returns:
        ``(problems, loaded copy or NOTHING)``.
    """
    loaded = NOTHING
    failure = dump_failure
    if failure is None:
        step(f"unpickling {what}, as {loader} does")
        try:
            loaded = roundtrip(whole)
        except BaseException as exc:  # noqa: BLE001 - a dump or load failure: walk to find where
            reraise_if_interrupted(exc)
            failure = exc
    hazard = None
    if any(h.applies() for h in HAZARDS):
        step(f"checking {what} against newer Pythons' pickling")
        hazard = hazard_probe(whole)
    if failure is None and hazard is None:
        return [], loaded
    step(f"walking {what}")
    problems = find_problems(roots, load=True, hazards=True)
    if failure is not None and not any(not p.breaks_on for p in problems):
        # The parts fail only together; say so rather than pass silently.
        problems.insert(0, Problem(path=whole_path, type=_type_name(whole), message=_first_line(failure),
                                   exc_type=_type_name(getattr(failure, "cause", failure)), label="other",
                                   root=whole_path))
    anchor_file, anchor_line = sites.first_user_site(anchors)
    return [p if p.file or not anchor_file else dataclasses.replace(p, file=anchor_file, line=anchor_line)
            for p in problems], loaded


def diagnosis_to_child(result: Diagnosis) -> dict:
    """Everything :func:`diagnosis_from_child` needs to rebuild ``result`` in the parent."""
    def findings(items: list[Finding]) -> list[dict]:
        return [{"problem": dataclasses.asdict(f.problem), "case": f.case, "fix": f.fix} for f in items]

    return {
        "target": result.target, "method": result.method, "num_workers": result.num_workers,
        "payload": dataclasses.asdict(result.payload) if result.payload else None,
        "findings": findings(result.findings), "hazards": findings(result.hazards),
        "batch_note": result.batch_note,
    }


def diagnosis_from_child(data: dict) -> Diagnosis:
    """The :class:`Diagnosis` that :func:`diagnosis_to_child` wrote in the child process."""
    def findings(items: list[dict]) -> list[Finding]:
        return [Finding(Problem(**f["problem"]), f["case"], f["fix"]) for f in items]

    return Diagnosis(
        target=data["target"], method=data["method"], num_workers=data["num_workers"],
        payload=Payload(**data["payload"]) if data["payload"] else None,
        findings=findings(data["findings"]), hazards=findings(data.get("hazards", [])),
        batch_note=data.get("batch_note", ""),
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

    import harness

    root = os.path.realpath(Path(harness.__file__).resolve().parent.parent)
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


def diagnose_command(target: str | Sequence[str], method: str = "spawn", as_json: bool = False,
                     num_workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                     output_format: str | None = None) -> int:
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
            hazard (:func:`github_commands`), nothing for a safe loader, and ``::error
            title=harness diagnose::...`` for a target that gave no diagnosis.

    Returns:
        The worst over the targets: 0 all safe; 1 any unsafe, or a child ended by the
        target's own code before it could report; 2 a bad target, bad
        ``HARNESS_DIAGNOSE_MEMORY_GIB``, timeout or memory bound reached (the other targets
        are still diagnosed); 130 interrupted (no later target runs). Everything but a
        diagnosis is one line on stderr per target.
    """
    import signal
    import threading

    targets = [target] if isinstance(target, str) else list(target)
    fmt = output_format or ("json" if as_json else "text")
    try:
        if fmt not in FORMATS:
            raise ValueError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
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
    codes: list[int] = []
    entries: list[dict] = []
    try:
        for i, one in enumerate(targets):
            try:
                run = run_child(one, method, num_workers, timeout_s, memory)
            except KeyboardInterrupt:
                _say(f"harness diagnose: interrupted; the process diagnosing {one} was stopped")
                return 130
            code, diagnosis, error = _outcome(one, run, timeout_s, memory)
            codes.append(code)
            if error:
                _say(error)
                entries.append({"target": one, "error": error})
                if fmt == "github":
                    print(github_command("error", error, "harness diagnose"))
                continue
            entries.append(diagnosis.to_json())
            if fmt == "text":  # names and messages come from the user's code: no escape sequence reaches the terminal
                print(("\n" if i else "") + terminal(diagnosis.format_text()))
            elif fmt == "github" and (diagnosis.findings or diagnosis.hazards):
                print(diagnosis.format_github())
            sys.stdout.flush()
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    if fmt == "json":
        if len(targets) > 1:
            print(json.dumps(entries, indent=2))
        elif "error" not in entries[0]:
            print(json.dumps(entries[0], indent=2))
    return 2 if 2 in codes else max(codes)


def _outcome(target: str, run: ChildRun, timeout_s: float, memory: int | None) -> tuple[int, Diagnosis | None, str]:
    """``(exit code, diagnosis or None, one-line error or "")`` for one target's child run."""
    while_ = f" while {run.stage}" if run.stage else ""
    if run.timed_out:
        return 2, None, (f"harness diagnose: error: {target}: timed out after {timeout_s:g} s{while_}; the process "
                         "tree running it was killed (a longer --timeout gives it more time)")
    result = run.result
    if result is None:
        return 1, None, (f"harness diagnose: {target}: UNSAFE: the process running it "
                         f"{_ended(run.returncode, memory)}{while_}, before it could report: the target's own code "
                         "ended it")
    kind = result.get("kind")
    if kind == "diagnosis":
        diagnosis = diagnosis_from_child(result["diagnosis"])
        return (0 if diagnosis.safe else 1), diagnosis, ""
    message = result.get("message", "")
    if kind == "memory" or "MemoryError" in message:
        limit = f" (limit: {_gib(memory)} more than at start; set {MEMORY_ENV} to change it, 0 lifts it)" if memory else ""
        return 2, None, f"harness diagnose: error: {target}: ran out of memory{while_}{limit}: {message}"
    if kind == "target-error":
        return 2, None, f"harness diagnose: error: {message}"
    return 2, None, f"harness diagnose: error: {target}: {message}"


def _say(line: str) -> None:
    """Print one line to stderr, escaped: the target and messages come from the user's code."""
    print(terminal(line, one_line=True), file=sys.stderr)


def _gib(n: int | None) -> str:
    return f"{(n or 0) / (1 << 30):g} GiB"
