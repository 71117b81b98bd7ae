"""The worker-start model: what a ``spawn`` or ``forkserver`` worker start pickles and unpickles.

``_MultiProcessingDataLoaderIter.__init__`` (``torch/utils/data/dataloader.py``) starts each
worker ``Process`` with ``args=(dataset_kind, dataset, index_queue, result_queue, done_event,
auto_collation, collate_fn, drop_last, base_seed, worker_init_fn, worker_id, num_workers,
persistent_workers, shared_seed)``. The queues and the event are made by torch, not by the
user, and are left out. :func:`follow_trip` follows the whole round trip of one start:

1. pickle the user-supplied arguments with ForkingPickler into a counting sink (the payload);
2. load them back, as the worker does (:func:`harness.inspect.walker.roundtrip`: same pickler
   and protocol): a dataset wrapper whose ``__getattr__`` forwards to ``self.dataset``
   pickles, but loading it recurses (``__setstate__`` is looked up before the instance has
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
5. if anything failed, walk the objects (:mod:`harness.inspect.walker`) to every culprit's
   path, and also list version hazards: objects that pickle on this Python but not on a
   newer one (``itertools`` iterators from Python 3.14), which do not make the loader unsafe
   here. Each problem is placed in the source (:mod:`harness.inspect.sites`): a function,
   lambda or class where it is defined, an instance of a user-defined class at its class,
   and an object with no definition site of its own (an open file, a lock) at the nearest
   enclosing user-defined object on its path, else at the code that produced its root (the
   sampler or dataset for ``indices``, ``collate_fn`` or the dataset for ``batch``), else
   nowhere (``file`` and ``line`` ``None``).

Loading the arguments and building the first batch run the user's ``__setstate__``,
``worker_init_fn``, ``__getitem__`` and ``collate_fn`` on the loaded copies, never on the
user's live objects, with the random states of ``random``, numpy and torch saved and
restored. Call :func:`follow_trip` inside :func:`harness.inspect.walker.user_code_guard`.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import Any

from harness._options import DEFAULT_WORKERS
from harness.child.worker_loop import NOTHING, draw_indices, first_batch
from harness.inspect import sites
from harness.inspect.target import Progress
from harness.inspect.walker import (
    HAZARDS,
    Payload,
    Problem,
    class_names,
    describe_exception,
    find_problems,
    first_line,
    hazard_probe,
    measure_payload,
    probe,
    reraise_if_interrupted,
    roundtrip,
    type_name,
    user_code_guard,
)

__all__ = [
    "DEFAULT_NUM_WORKERS",
    "NOTHING",
    "Trip",
    "WorkerStart",
    "first_batch",
    "follow_trip",
    "index_problems",
    "worker_start",
]

#: Worker count assumed for a bare Dataset target (the loader's own count is used otherwise):
#: the harness's one default worker count (:data:`harness._options.DEFAULT_WORKERS`).
DEFAULT_NUM_WORKERS = DEFAULT_WORKERS



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
    args: tuple[Any, ...]
    num_workers: int
    index_sampler: Any = None
    sampler: Any = None


def worker_start(obj: Any, num_workers: int | None = None) -> WorkerStart:
    """What a ``DataLoader`` (or a default ``DataLoader`` over a Dataset) sends each worker.

    Args:
        obj: a ``DataLoader``, a ``Dataset``, or any object ``DataLoader`` accepts as a dataset.
        num_workers: overrides the loader's ``num_workers``; for a bare dataset the default is
            :data:`DEFAULT_NUM_WORKERS`.

    Raises:
        BaseException: what ``DataLoader(obj)`` raises (it runs the dataset's own hooks).
    """
    from torch.utils.data import DataLoader

    if not isinstance(obj, DataLoader):
        n = DEFAULT_NUM_WORKERS if num_workers is None else num_workers
        obj = DataLoader(obj, num_workers=n)  # no worker starts until it is iterated
    n = obj.num_workers if num_workers is None else num_workers
    roots = {
        "dataset": obj.dataset,
        "collate_fn": obj.collate_fn,
        "worker_init_fn": obj.worker_init_fn,
    }
    args = (
        obj._dataset_kind,
        obj.dataset,
        obj._auto_collation,
        obj.collate_fn,
        obj.drop_last,
        0,
        obj.worker_init_fn,
        0,
        n,
        obj.persistent_workers,
        None,
    )
    return WorkerStart(
        roots=roots, args=args, num_workers=n, index_sampler=obj._index_sampler, sampler=obj.sampler
    )


def index_problems(indices: Any) -> list[Problem]:
    """Problems with the indices a worker receives through its index queue.

    Indices are pickled into the queue and unpickled by the worker under every start method
    (``_MultiProcessingDataLoaderIter._try_put_index`` and ``torch.utils.data._utils.worker``),
    so they must survive a round trip through ForkingPickler, not only pickle. Paths are rooted
    at ``indices`` (the sampler's first batch).
    """
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
            return [
                Problem(
                    path="indices" if i is None else f"indices[{i}]",
                    type=type_name(item),
                    message=f"pickles, but unpickling in the worker fails: {describe_exception(exc)}",
                    exc_type=type(exc).__name__,
                    label="index-unpickle",
                    root="indices",
                    file=file,
                    line=line,
                    classes=class_names(type(item)),
                )
            ]
    return []


def _raised(
    path: str, obj: Any, what: str, exc: BaseException, root: str, anchors: Iterable[Any]
) -> Problem:
    """A problem for user code that raised while the worker start was being prepared; placed
    at ``obj``'s site or the first of ``anchors`` with a user-defined one."""
    file, line = sites.site_along(obj, anchors)
    return Problem(
        path=path,
        type=type_name(obj),
        message=f"{what} raised {describe_exception(exc)}",
        exc_type=type_name(exc),
        label="raised",
        root=root,
        file=file,
        line=line,
        classes=class_names(type(obj)),
    )


@dataclass
class Trip:
    """What one worker start's round trip met.

    Attributes:
        num_workers: workers the loader starts.
        problems: every problem found, in order; those with ``breaks_on`` set are version
            hazards, the others make the loader unsafe here.
        payload: pickled sizes per worker, or ``None`` when the arguments do not pickle.
        batch_note: why the first batch was not checked, or ``""`` when it was.
    """

    num_workers: int
    problems: list[Problem] = field(default_factory=list)
    payload: Payload | None = None
    batch_note: str = ""


def follow_trip(obj: Any, num_workers: int | None, step: Progress) -> Trip:
    """Follow one worker start of ``obj`` there and back (see the module docstring).

    Args:
        obj: a ``DataLoader``, a ``Dataset`` or any object ``DataLoader`` accepts as one.
        num_workers: overrides the loader's worker count.
        step: told each step before it starts.

    Raises:
        KeyboardInterrupt: a real Ctrl-C (inside :func:`harness.inspect.walker.user_code_guard`).
    """
    try:
        start = worker_start(obj, num_workers)
    except BaseException as exc:  # noqa: BLE001 - DataLoader(obj) runs the object's own hooks
        reraise_if_interrupted(exc)
        return Trip(
            num_workers=DEFAULT_NUM_WORKERS if num_workers is None else num_workers,
            problems=[_raised("dataset", obj, "DataLoader(dataset)", exc, "dataset", [])],
            batch_note="the loader could not be built",
        )
    trip = Trip(num_workers=start.num_workers)
    loaded = _send_arguments(start, step, trip)
    indices, index_failed = _send_indices(start, step, trip)
    trip.batch_note = _batch_note(loaded, indices, index_failed)
    if not trip.batch_note:
        _send_back_first_batch(start, loaded, indices, step, trip)
    return trip


def _send_arguments(start: WorkerStart, step: Progress, trip: Trip) -> Any:
    """Pickle the worker arguments (sizing the payload) and load them back; the loaded copy,
    or :data:`NOTHING`."""
    step("pickling the worker arguments")
    failure = None
    try:
        trip.payload = measure_payload(start.args)
    except BaseException as exc:  # noqa: BLE001 - any pickling failure means: walk to find where
        reraise_if_interrupted(exc)
        failure = exc
    found, loaded = _trip(
        start.roots,
        start.args,
        "the worker arguments",
        step,
        "(worker arguments)",
        [start.roots["dataset"]],
        failure,
    )
    trip.problems += found
    return loaded


def _send_indices(start: WorkerStart, step: Progress, trip: Trip) -> tuple[Any, bool]:
    """Draw the first indices and round-trip them: ``(indices or NOTHING, whether they fail)``."""
    step("drawing the first indices")
    try:
        indices = draw_indices(start.index_sampler)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt... from the sampler
        reraise_if_interrupted(exc)
        trip.problems.append(
            _raised(
                "indices",
                start.index_sampler,
                "drawing the first indices",
                exc,
                "indices",
                [start.sampler, start.roots["dataset"]],
            )
        )
        return NOTHING, True
    step("pickling the first indices")
    found = index_problems(indices)
    trip.problems += found
    return indices, bool(found)


def _send_back_first_batch(
    start: WorkerStart, loaded: Any, indices: Any, step: Progress, trip: Trip
) -> None:
    """Build the first batch in the worker's copy and round-trip it back to the main process."""
    anchors = [start.roots["collate_fn"], start.roots["dataset"]]
    step("building the first batch in the worker's copy of the loader")
    raised: list[BaseException] = []
    try:
        batch = first_batch(loaded, _received(indices), raised)
    except BaseException as exc:  # noqa: BLE001 - SystemExit... from worker_init_fn, the dataset, collate_fn
        reraise_if_interrupted(exc)
        raised.append(exc)
        batch = NOTHING
    if raised:  # no first batch would ever come: the main process re-raises it, under every method
        trip.problems.append(
            _raised("batch", loaded[1], "building the first batch", raised[0], "batch", anchors)
        )
        return
    if batch is NOTHING:
        trip.batch_note = "the dataset is exhausted: it has no first batch"
        return
    step("pickling the first batch back to the main process")
    found, _ = _trip(
        {"batch": batch},
        batch,
        "the first batch",
        step,
        "batch",
        anchors,
        loader="the main process",
    )
    trip.problems += found


def _received(indices: Any) -> Any:
    """The indices as the worker receives them: through ForkingPickler and back."""
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


def _trip(
    roots: dict[str, Any],
    whole: Any,
    what: str,
    step: Progress,
    whole_path: str,
    anchors: list[Any],
    dump_failure: BaseException | None = None,
    loader: str = "a worker",
) -> tuple[list[Problem], Any]:
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
        problems.insert(0, _whole_problem(whole, whole_path, failure))
    return _anchored(problems, anchors), loaded


def _whole_problem(whole: Any, whole_path: str, failure: BaseException) -> Problem:
    """One problem for a whole that fails although none of its parts does on its own."""
    return Problem(
        path=whole_path,
        type=type_name(whole),
        message=first_line(failure),
        exc_type=type_name(getattr(failure, "cause", failure)),
        label="other",
        root=whole_path,
        classes=class_names(type(whole)),
    )


def _anchored(problems: list[Problem], anchors: list[Any]) -> list[Problem]:
    """``problems``, those with no site of their own placed at the first of ``anchors`` with a
    user-defined one."""
    file, line = sites.first_user_site(anchors)
    if file is None:
        return problems
    return [p if p.file else dataclasses.replace(p, file=file, line=line) for p in problems]
