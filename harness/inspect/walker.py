"""The pickle-path walker: where, inside an object graph, the pickler gives up.

A spawn or forkserver worker start pickles its ``Process`` object, and with it the
``DataLoader``'s dataset, ``collate_fn`` and ``worker_init_fn``, with
:class:`multiprocessing.reduction.ForkingPickler` (CPython ``Lib/multiprocessing/popen_spawn_posix.py``
and ``popen_forkserver.py``: ``reduction.dump(process_obj, fp)``). ``import torch.multiprocessing``
registers torch's reducers in ``_EXTRA_REDUCERS``. The pickler's own error names
a type (``cannot pickle '_io.BufferedReader' object``), not where that object sits.

This module uses the same pickler and follows the same reduce protocol (CPython
``Lib/pickle.py``, ``Pickler.save``: dispatch table, then ``__reduce_ex__(protocol)``, then the
``(callable, args, state, listitems, dictitems)`` tuple) to find *every* object that cannot be
pickled, each at its own path in Python expression syntax (``dataset.transform.transforms[2]``,
``dataset.ops['flip']``, ``collate_fn.func``). Only failing subtrees are decomposed: children
are probed in groups and halved until the failing ones are isolated, and a failing object
is reported only when none of its children fails on its own, so ancestors are never
reported separately.

Bounds. The walk is iterative (an explicit stack, never Python recursion) and judges each
object once: every object it has looked at is cut out of later probes (the probe pickler's
``persistent_id`` stands in for it), so an object reached from several paths, or around a
reference cycle, is examined and reported once, and a probe costs what the object holds
that is not judged yet. Structures too deep to pickle (a 100,000-node linked list, a list of
lists) are walked link by link without probing each link, and reported once, where the
chain starts (label ``too-deep``); what they hold (a lock on one node) is still found. At
most :data:`MAX_OBJECTS` objects are decomposed, and at most :data:`MAX_SIMILAR` findings
with the same type and message are listed (the last one kept counts the rest).

Containment. Reducers, ``__getstate__``, ``__getattr__`` and the like are user code, which
may raise anything, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included:
every such exception is a finding at the object's path. Only a real Ctrl-C is let through:
:func:`user_code_guard` installs a SIGINT handler that flags it (main thread only), and
:func:`reraise_if_interrupted` re-raises a ``KeyboardInterrupt`` only when the flag is set.

Payload sizes are counted without building the bytes: the pickle stream goes to a sink that
adds up ``write`` lengths, protocol 5 hands numpy (and other ``PickleBuffer``) data to a
``buffer_callback`` that counts ``PickleBuffer.raw().nbytes`` without copying (PEP 574), and
CPU torch storages are counted by ``nbytes()`` instead of being moved to shared memory as
torch's reducer would (``torch/multiprocessing/reductions.py``, ``reduce_storage``).

While pickling, a stand-in "spawning popen" is installed
(``multiprocessing.context.set_spawning_popen``), as a real start does, so multiprocessing
queues, locks and shared values judge themselves as they would during a real start (for
example ``A SemLock created in a fork context ...`` since CPython 3.11.5).

Beyond the dump. :func:`find_problems` can also check the other half of the trip
(``load=True``): what pickles must also unpickle in the worker, with the same pickler and
protocol. :func:`roundtrip` dumps an object and loads the bytes back in this process; an
object whose loading fails is found by the same walk, each candidate dumped and loaded on its
own, with everything already judged (and every object the dump walk reported) standing in for
itself through the pickle's persistent ids, so it is not loaded again. Numpy (``PickleBuffer``)
data stays out of band and torch storages stand in for themselves: nothing large is copied,
and no tensor is moved to shared memory. Multiprocessing connections that are loaded get a
duplicate of their descriptor, so the user's own object keeps its own.

Version hazards (``hazards=True``): some objects pickle on this Python and not on a newer one
(:data:`HAZARDS`: ``itertools`` iterators lose pickling in Python 3.14). Their reducers are
replaced by ones raising :class:`RemovedPickling` for one more walk, which reports each such
object, at its path, with the Python that breaks it (``Problem.breaks_on``).

Each problem carries where its culprit is defined (``file``, ``line``; see :mod:`harness.inspect.sites`).
"""

from __future__ import annotations

import contextlib
import copyreg
import dataclasses
import functools
import io
import itertools
import keyword
import os
import pickle
import signal
import sys
import threading
import types
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import context as _mp_context
from multiprocessing.reduction import ForkingPickler
from typing import Any, SupportsIndex, TypeVar

from harness.inspect import sites

__all__ = [
    "HAZARDS",
    "LABELS",
    "NO_MESSAGE",
    "PROTOCOL",
    "Payload",
    "Problem",
    "RemovedPickling",
    "TemporaryStorageError",
    "UnpicklingFailed",
    "WalkerPickler",
    "base_table",
    "class_names",
    "describe_exception",
    "find_problems",
    "find_references",
    "first_line",
    "hazard_probe",
    "measure_payload",
    "probe",
    "reraise_if_interrupted",
    "roundtrip",
    "spawning",
    "type_name",
    "user_code_guard",
]

#: Protocol used for probing and counting. Protocol 5 passes buffers out of band (PEP 574),
#: so numpy data is counted without a copy; the real start uses ``pickle.DEFAULT_PROTOCOL``
#: (4 on Python 3.8-3.13, 5 from 3.14), which writes the same bytes in band.
PROTOCOL = 5

#: Most objects one :func:`find_problems` call decomposes; a failing object still waiting
#: then is reported where it stands, with a note that the walk stopped there.
MAX_OBJECTS = 500_000
#: Findings with the same type, message and label that are listed; the last one listed
#: counts the others (a list of 10,000 identical lambdas gives 10 lines, not 10,000).
MAX_SIMILAR = 10
#: What a problem's object is, by mechanism (:attr:`Problem.label`); the last two are given by
#: :mod:`harness.inspect.worker_start`, the others by the walk.
LABELS = ("lambda", "closure", "local-function", "local-class", "unimportable-function", "unimportable-class",
          "open-file", "sqlite", "module", "lock", "generator", "torch-generator", "temporary-tensor",
          "fork-context-semlock", "non-leaf-tensor", "too-deep", "itertools", "unpickle", "other",
          "index-unpickle", "raised")
#: The message of a problem whose exception says nothing (a bare ``KeyboardInterrupt``).
NO_MESSAGE = "(raised with no message)"
#: A path segment repeated more often than this in a row is written once with a count:
#: ``dataset.head{.next * 4321}.lock`` is ``dataset.head`` followed by 4,321 ``.next``.
MAX_REPEAT = 3

_ATOMIC = (type(None), bool, int, float, complex, str, bytes, bytearray, range, types.EllipsisType)
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
_GENERATOR_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


@dataclass(frozen=True)
class Problem:
    """One object that cannot be pickled, at the deepest path that is itself at fault.

    Attributes:
        path: Python expression rooted at a root name, e.g. ``dataset.transform.transforms[2]``;
            a segment repeated more than :data:`MAX_REPEAT` times in a row is written once
            with its count, ``dataset.head{.next * 4321}.lock``.
        type: the object's type, ``module.qualname`` (``builtins.`` dropped), e.g. ``function``.
        message: the pickler's own message (first line), e.g. ``cannot pickle 'module' object``,
            or ``(raised with no message)`` (a bare ``KeyboardInterrupt``); a note in
            parentheses may follow (the length of a chain too deep to pickle, how many more
            objects fail the same way).
        exc_type: the exception type the pickler raised, e.g. ``TypeError``, or what the
            object's own code raised (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``).
        label: what the object is, by mechanism: ``lambda``, ``closure``, ``local-function``,
            ``local-class``, ``unimportable-function``, ``unimportable-class``, ``open-file``,
            ``sqlite``, ``module``, ``lock``, ``generator``, ``torch-generator``,
            ``temporary-tensor``, ``fork-context-semlock``, ``non-leaf-tensor``, ``too-deep``,
            ``itertools`` (an ``itertools`` iterator: every one on Python 3.14, a hazard
            before), ``unpickle`` (pickles, but loading it fails) or ``other``;
            :mod:`harness.inspect.worker_start` adds ``index-unpickle`` and ``raised`` (user code raised
            while the start was prepared: building the loader, drawing indices, building the
            first batch).
        within: the innermost notable container on the path (``partial``, ``zipfile``,
            ``tarfile``, ``log-handler``), or ``None``.
        root: the root name the path starts with.
        qualname: ``__qualname__`` of a function or class at fault, else ``""``.
        file: where the culprit is (:func:`harness.inspect.sites.locate`: its own
            definition, else the line that stores it on its holder, else the nearest enclosing
            user-defined object's definition), relative to the current directory when under
            it; ``None`` when nothing on the path has a site.
        line: the line in ``file`` (1-based), or ``None``.
        located: how ``file`` and ``line`` were found: ``defined``, ``stored``, ``inside``
            (:func:`harness.inspect.sites.locate`), or ``""``.
        breaks_on: for a version hazard, the Python (``"3.14"``) from which the object no
            longer pickles; it pickles on this one. ``None`` for a problem on this Python.
        classes: the culprit's class and its bases, most derived first, as
            :func:`class_names` writes them (``("_io.BufferedReader", "_io._BufferedIOBase",
            "_io._IOBase")``; a function is ``("function",)``, a class ``("type",)``).
        holders: the classes (with their bases) of the objects that hold the culprit along its
            path, innermost first, each once (``dataset.archive.fp``: the ``ZipFile`` and the
            dataset's class).
        cell: for a culprit defined in a notebook (``file`` is then the ``.ipynb``), the 1-based
            index of its cell among all the notebook's cells; ``line`` is the line in that cell.
    """

    path: str
    type: str
    message: str
    exc_type: str
    label: str
    within: str | None = None
    root: str = ""
    qualname: str = ""
    file: str | None = None
    line: int | None = None
    breaks_on: str | None = None
    classes: tuple[str, ...] = ()
    holders: tuple[str, ...] = ()
    cell: int | None = None
    located: str = ""


@dataclass
class Payload:
    """Size of one pickled payload, in bytes, counted without building it.

    Attributes:
        stream_bytes: bytes written to the pickle stream.
        buffer_bytes: out-of-band ``PickleBuffer`` bytes (numpy arrays and the like); the real
            start writes these in band.
        storage_bytes: CPU torch storage bytes; the real start moves these to shared memory
            once, and workers map them rather than receiving a copy through the pipe.
    """

    stream_bytes: int = 0
    buffer_bytes: int = 0
    storage_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        """``stream_bytes + buffer_bytes + storage_bytes``."""
        return self.stream_bytes + self.buffer_bytes + self.storage_bytes


class _CountingSink:
    """A write-only file that keeps nothing and counts the bytes it is given."""

    __slots__ = ("payload",)

    def __init__(self, payload: Payload) -> None:
        self.payload = payload

    def write(self, data: Any) -> int:
        n = data.nbytes if isinstance(data, memoryview) else len(data)
        self.payload.stream_bytes += n
        return n


class _DupFd:
    """What a spawning popen's ``DupFd`` returns: the fd number, nothing duplicated."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def detach(self) -> int:
        return self.fd


class _ProbePopen:
    """Stand-in for the popen that is spawning while the process object is pickled.

    Multiprocessing objects (queues, locks, shared values, connections) refuse to pickle unless
    a process is being spawned (``context.assert_spawning``); this lets them pickle the way
    they would during a real start, without duplicating any descriptor or handle.
    """

    DupFd = _DupFd

    def duplicate_for_child(self, fd: int) -> int:
        return fd


class _LazyDupFd(_DupFd):
    """What a round trip's ``DupFd`` returns: the descriptor is duplicated only when the loaded
    object takes it (``detach``), so the loaded copy owns a duplicate, never the original."""

    def detach(self) -> int:
        return os.dup(self.fd)


class _RoundTripPopen(_ProbePopen):
    """A :class:`_ProbePopen` whose descriptors are duplicated when a loaded copy takes them."""

    DupFd = _LazyDupFd


@contextmanager
def _spawning(popen: _ProbePopen | None = None) -> Iterator[None]:
    previous = _mp_context.get_spawning_popen()
    stand_in: Any = popen or _ProbePopen()  # duck-types a spawning Popen: DupFd, duplicate_for_child
    _mp_context.set_spawning_popen(stand_in)
    try:
        yield
    finally:
        _mp_context.set_spawning_popen(previous)


def spawning() -> contextlib.AbstractContextManager[None]:
    """A stand-in spawning ``Popen`` installed for the block, as during a real spawn start
    (``multiprocessing.context.set_spawning_popen``; thread-local), so that multiprocessing's
    queues, locks and connections pickle, or refuse to, as they would then."""
    return _spawning()


def base_table() -> tuple[dict[Any, Any], tuple[type, ...]]:
    """ForkingPickler's dispatch table (``copyreg.dispatch_table`` plus ``_EXTRA_REDUCERS``,
    torch's reducers included once torch is imported) and torch's storage types; a shared
    dict, not to be changed."""
    return _base_table()


def _shared_storage(nbytes: int) -> None:  # pragma: no cover - stands in for a storage; never loaded
    raise RuntimeError("a size-only stand-in for a torch storage; it does not unpickle")


#: ``_EXTRA_REDUCERS``, where ``ForkingPickler.register`` (and so ``import
#: torch.multiprocessing``) puts reducers by type (``multiprocessing/reduction.py``).
_EXTRA_REDUCERS: dict[type, Any] = ForkingPickler.__dict__["_extra_reducers"]


def _torch_storage_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    import torch.multiprocessing  # noqa: F401 - registers torch's ForkingPickler reducers

    return tuple(t for t in _EXTRA_REDUCERS if t.__name__ == "UntypedStorage")


class TemporaryStorageError(RuntimeError):
    """Pickling made a torch tensor that nothing keeps alive until the worker opens it.

    torch's ``file_descriptor`` sharing strategy (the Linux default) sends a CPU storage as a
    descriptor of its shared-memory file (``reduce_storage``: ``storage._share_fd_cpu_()`` and
    ``DupFd``); the descriptor is only duplicated into the child when the process is launched,
    after pickling. A tensor made inside a ``__reduce__`` or ``__getstate__`` (such as the state
    tensor of ``torch.Generator.__reduce__``) is freed when pickling ends, its descriptor closes,
    and the worker fails with ``unable to resize file <filename not specified> to the right
    size``. Observed with torch 2.13 under spawn and forkserver; the ``file_system`` strategy
    (macOS, Windows) keeps the file by name and does not fail.
    """


def _storage_tracking() -> tuple[Any, bool]:
    """torch's ``StorageWeakRef`` and whether the sharing strategy is ``file_descriptor``."""
    if "torch" not in sys.modules:
        return None, False
    import torch.multiprocessing.reductions  # noqa: F401 - imported with torch.multiprocessing

    mp = sys.modules["torch.multiprocessing"]
    return sys.modules["torch.multiprocessing.reductions"].StorageWeakRef, mp.get_sharing_strategy() == "file_descriptor"


_BASE: tuple[tuple[int, int, bool] | tuple[()], dict[Any, Any], tuple[type, ...]] = ((), {}, ())


def _base_table() -> tuple[dict[Any, Any], tuple[type, ...]]:
    """``copyreg.dispatch_table`` plus ``_EXTRA_REDUCERS``, and torch's storage
    types; rebuilt whenever either registry (or the presence of torch) changes."""
    global _BASE
    key = (len(copyreg.dispatch_table), len(_EXTRA_REDUCERS), "torch" in sys.modules)
    if _BASE[0] != key:
        storage_types = _torch_storage_types()  # may register torch's reducers first
        key = (len(copyreg.dispatch_table), len(_EXTRA_REDUCERS), "torch" in sys.modules)
        table = dict(copyreg.dispatch_table)
        table.update(_EXTRA_REDUCERS)
        _BASE = (key, table, storage_types)
    return _BASE[1], _BASE[2]


def _dispatch_table(payload: Payload, weakrefs: list[Any] | None = None) -> dict[Any, Any]:
    """ForkingPickler's dispatch table, with CPU torch storages counted instead of shared.

    With ``weakrefs``, a weak reference to every CPU storage pickled is appended to it, so the
    caller can tell storages that outlive the dump from temporaries.
    """
    table, storage_types = _base_table()
    table = dict(table)
    weakref_type, _ = _storage_tracking() if storage_types else (None, False)
    for storage_type in storage_types:
        torch_reducer = table[storage_type]

        def reduce_storage(storage: Any, _torch_reducer: Any = torch_reducer) -> Any:
            if storage.device.type != "cpu":
                return _torch_reducer(storage)  # CUDA and meta storages raise there, as in a real start
            payload.storage_bytes += storage.nbytes()
            if weakrefs is not None and weakref_type is not None and storage.nbytes():
                weakrefs.append(weakref_type(storage))
            return (_shared_storage, (storage.nbytes(),))

        table[storage_type] = reduce_storage
    table.update(_OVERRIDES)
    return table


class WalkerPickler(ForkingPickler):
    """:class:`ForkingPickler` (with torch's reducers) that counts into a :class:`Payload`.

    ``ForkingPickler.__init__`` accepts no ``buffer_callback``, so this sets up the same
    dispatch table itself: ``copyreg.dispatch_table`` plus ``_EXTRA_REDUCERS``.
    """

    def __init__(self, payload: Payload, protocol: int = PROTOCOL, weakrefs: list[Any] | None = None) -> None:
        # The callback closes over the payload, not over self: a pickler in a reference cycle
        # would keep its memo, and every temporary it pickled, alive after the dump.
        def count_buffer(buf: pickle.PickleBuffer) -> None:
            with buf.raw() as view:
                payload.buffer_bytes += view.nbytes
            # A false return keeps the buffer out of band: nothing is copied into the stream.

        pickle.Pickler.__init__(self, _CountingSink(payload), protocol, buffer_callback=count_buffer)
        self.payload = payload
        self.dispatch_table = _dispatch_table(payload, weakrefs)


def measure_payload(obj: Any, protocol: int = PROTOCOL) -> Payload:
    """Pickle ``obj`` as a spawn start would and count its size without keeping the bytes.

    Args:
        obj: anything.
        protocol: pickle protocol (default 5).

    Returns:
        The :class:`Payload` sizes, in bytes.

    Raises:
        TemporaryStorageError: pickling made a CPU tensor that is freed before a worker could
            open it, under the ``file_descriptor`` sharing strategy.
        BaseException: whatever the pickler, or the user code it runs (``__reduce__``,
            ``__getstate__``), raises for ``obj``: ``PicklingError``, ``TypeError``,
            ``RecursionError``, and also ``SystemExit`` or ``KeyboardInterrupt``.
    """
    return _dump(obj, protocol)


class _CutPickler(WalkerPickler):
    """A :class:`WalkerPickler` that does not descend into objects judged elsewhere.

    Every object whose id is in ``cut`` is written as a persistent id (nothing pickled)
    unless it is the probe root now due: ``next_root`` is the id of the root being started
    (set before the dump, and by :class:`_Root` for each member of a group probe).
    """

    def __init__(self, payload: Payload, protocol: int, weakrefs: list[Any], cut: set[int] | frozenset[int]) -> None:
        super().__init__(payload, protocol, weakrefs)
        self.cut = cut
        self.next_root: int | None = None

    def persistent_id(self, obj: Any) -> Any:
        return 0 if _cut_here(self, id(obj)) else None


def _cut_here(pickler: Any, i: int) -> bool:
    """Whether the object with id ``i`` is cut (in ``pickler.cut``) and not the probe root now
    due (``pickler.next_root``, which is consumed)."""
    if i == pickler.next_root:
        pickler.next_root = None
        return False
    return i in pickler.cut


def _root_identity(obj: Any) -> Any:
    """What a group probe's member loads as (only a round trip loads one): the object."""
    return obj


class _Root:
    """One member of a group probe: tells the pickler that ``obj`` is a root, not a cut."""

    __slots__ = ("obj", "pickler")

    def __init__(self, obj: Any, pickler: _CutPickler | _RoundTripPickler) -> None:
        self.obj = obj
        self.pickler = pickler

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        self.pickler.next_root = id(self.obj)
        return (_root_identity, (self.obj,))


def _dump(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
          group: list[Any] | None = None) -> Payload:
    """Pickle ``obj`` (or each member of ``group``) into a counting sink; see :func:`measure_payload`.

    With ``cut``, objects with those ids are not pickled (see :class:`_CutPickler`).
    """
    payload = Payload()
    weakrefs: list[Any] = []
    with _spawning():
        if not cut and group is None:
            pickler = WalkerPickler(payload, protocol, weakrefs)
        else:
            pickler = _CutPickler(payload, protocol, weakrefs, cut or frozenset())
            if group is not None:
                obj = [_Root(o, pickler) for o in group]
            else:
                pickler.next_root = id(obj)
        try:
            pickler.dump(obj)
        finally:
            del pickler, obj  # its memo keeps every object it pickled alive
    _, file_descriptor = _storage_tracking()
    if file_descriptor and any(ref.expired() for ref in weakrefs):
        raise TemporaryStorageError(
            "pickling creates a tensor that is freed before the worker starts; under the "
            "'file_descriptor' sharing strategy the worker fails with \"unable to resize file "
            "<filename not specified> to the right size\"")
    return payload


def probe(obj: Any, protocol: int = PROTOCOL) -> BaseException | None:
    """``None`` if ``obj`` pickles with ForkingPickler, else the exception it raised.

    Any exception counts, ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` raised
    by a reducer included, except a real Ctrl-C inside :func:`user_code_guard`.

    Raises:
        KeyboardInterrupt: a real SIGINT arrived (see :func:`reraise_if_interrupted`).
    """
    return _try_dump(obj, protocol)


def _try_dump(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
              group: list[Any] | None = None) -> BaseException | None:
    try:
        _dump(obj, protocol, cut, group)
    except BaseException as exc:  # noqa: BLE001 - user reducers may raise anything; it is the finding
        reraise_if_interrupted(exc)
        return exc
    return None


# -- the load half of the trip ------------------------------------------------------------------

class UnpicklingFailed(Exception):
    """An object pickled, but loading its pickle raised ``cause`` (what a worker would meet).

    ``str()`` is ``pickles, but unpickling in the worker fails: Type: first line``.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"pickles, but unpickling in the worker fails: {describe_exception(cause)}")
        self.cause = cause


class _RoundTripPickler(ForkingPickler):
    """ForkingPickler (with torch's reducers) writing real bytes for :func:`roundtrip`.

    Numpy and other ``PickleBuffer`` data go out of band into ``buffers`` (not copied); torch
    storages, and every object whose id is in ``cut`` (unless it is the probe root now due,
    ``next_root``, as in :class:`_CutPickler`), are written as persistent ids and stand in for
    themselves when loaded.
    """

    def __init__(self, file: io.BytesIO, protocol: int, cut: set[int] | frozenset[int],
                 buffers: list[Any], stash: dict[int, Any]) -> None:
        pickle.Pickler.__init__(self, file, protocol, buffer_callback=buffers.append)
        table, storage_types = _base_table()
        self.dispatch_table = {**table, **_OVERRIDES}
        self.storage_types = storage_types
        self.cut = cut
        self.stash = stash
        self.next_root: int | None = None

    def persistent_id(self, obj: Any) -> Any:
        i = id(obj)
        if _cut_here(self, i) or type(obj) in self.storage_types:
            self.stash[i] = obj
            return i
        return None


class _Loader(pickle.Unpickler):
    """Loads what :class:`_RoundTripPickler` wrote; a persistent id is the object itself."""

    def __init__(self, data: bytes, buffers: list[Any], stash: dict[int, Any]) -> None:
        super().__init__(io.BytesIO(data), buffers=buffers)
        self.stash = stash

    def persistent_load(self, pid: Any) -> Any:
        return self.stash[pid]


def _roundtrip(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
               group: list[Any] | None = None) -> Any:
    """Dump ``obj`` (or each member of ``group``) as a spawn start would, then load it back.

    Raises:
        UnpicklingFailed: it pickled, but loading raised (anything, ``SystemExit`` included).
        BaseException: what pickling raised.
    """
    buffers: list[Any] = []
    stash: dict[int, Any] = {}
    out = io.BytesIO()
    with _spawning(_RoundTripPopen()):
        pickler = _RoundTripPickler(out, protocol, cut or frozenset(), buffers, stash)
        if group is not None:
            obj = [_Root(o, pickler) for o in group]
        elif cut:
            pickler.next_root = id(obj)
        try:
            pickler.dump(obj)
        finally:
            del pickler, obj  # its memo keeps every object it pickled alive
    data = out.getvalue()
    del out
    try:
        return _Loader(data, buffers, stash).load()
    except BaseException as exc:  # noqa: BLE001 - user __setstate__/reconstructors may raise anything
        reraise_if_interrupted(exc)
        raise UnpicklingFailed(exc) from None


def roundtrip(obj: Any, protocol: int = PROTOCOL) -> Any:
    """Pickle ``obj`` as a spawn or forkserver start does and load it back, as the worker does.

    The same pickler (ForkingPickler with torch's reducers, multiprocessing objects pickled as
    while spawning) and ``protocol``; numpy data stays out of band and torch storages stand
    in for themselves, so neither is copied. The load runs in this process: the objects' own
    ``__setstate__``, ``__reduce__`` reconstructors and ``__getattr__`` run here, as they
    would in the worker. Memory: one copy of the pickle stream plus the loaded objects.

    Returns:
        The loaded copy (what the worker would hold).

    Raises:
        UnpicklingFailed: ``obj`` pickles, but loading it raises (``cause`` says what).
        BaseException: what pickling ``obj`` raises (see :func:`measure_payload`).
        KeyboardInterrupt: a real Ctrl-C inside :func:`user_code_guard`.
    """
    return _roundtrip(obj, protocol)


def _try_roundtrip(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
                   group: list[Any] | None = None) -> BaseException | None:
    """The :class:`UnpicklingFailed` of a round trip, or ``None`` when it loads or does not even
    pickle (the dump walk's business)."""
    try:
        _roundtrip(obj, protocol, cut, group)
    except UnpicklingFailed as exc:
        return exc
    except BaseException as exc:  # noqa: BLE001 - a dump failure: not this walk's finding
        reraise_if_interrupted(exc)
    return None


# -- version hazards -----------------------------------------------------------------------------

class RemovedPickling(TypeError):
    """Pickling an object that a newer Python (``breaks_on``) no longer pickles."""

    def __init__(self, message: str, breaks_on: str) -> None:
        super().__init__(message)
        self.breaks_on = breaks_on


@dataclass(frozen=True)
class Hazard:
    """Types that pickle up to some Python and not from ``breaks_on`` on.

    Attributes:
        breaks_on: the first Python that cannot pickle them, ``"3.14"``.
        types: the types.
        why: what changed, with its source, for the message.
    """

    breaks_on: str
    types: tuple[type, ...]
    why: str

    def applies(self) -> bool:
        """Whether this Python still pickles them (it is older than ``breaks_on``)."""
        major, minor = (int(x) for x in self.breaks_on.split("."))
        return sys.version_info[:2] < (major, minor)


#: Version hazards. ``itertools`` iterators (``count``, ``cycle``, ``chain``, ``islice`` ...)
#: pickled through their ``__reduce__`` up to Python 3.13; Python 3.12 deprecated that (a
#: ``DeprecationWarning`` at every pickling: "Pickle, copy, and deepcopy support will be removed
#: from itertools in Python 3.14") and 3.14 removed it (What's New in Python 3.12, "Pending
#: removal in Python 3.14"; What's New in Python 3.14, "Removed": itertools; gh-101588).
HAZARDS: tuple[Hazard, ...] = (
    Hazard("3.14", tuple(t for t in vars(itertools).values() if isinstance(t, type)),
           "Python 3.14 removed pickling of itertools iterators (deprecated since 3.12, gh-101588)"),
)

_OVERRIDES: dict[type, Any] = {}


def _removed_reducer(hazard: Hazard) -> Any:
    def reduce_removed(obj: Any) -> tuple[Any, ...]:  # noqa: ARG001 - a reducer's signature
        raise RemovedPickling(
            f"pickles on Python {sys.version_info[0]}.{sys.version_info[1]}, but not on Python {hazard.breaks_on} "
            f"and later: {hazard.why}", hazard.breaks_on)

    return reduce_removed


@contextmanager
def _simulating_hazards() -> Iterator[None]:
    """Make every hazard type that this Python still pickles raise :class:`RemovedPickling`."""
    previous = dict(_OVERRIDES)
    for hazard in HAZARDS:
        if hazard.applies():
            reducer = _removed_reducer(hazard)
            _OVERRIDES.update(dict.fromkeys(hazard.types, reducer))
    try:
        yield
    finally:
        _OVERRIDES.clear()
        _OVERRIDES.update(previous)


def hazard_probe(obj: Any, protocol: int = PROTOCOL) -> RemovedPickling | None:
    """The :class:`RemovedPickling` pickling ``obj`` meets under a newer Python's rules, or ``None``
    (no hazard, or ``obj`` fails to pickle for another reason: the dump walk's business)."""
    with _simulating_hazards():
        return _hazard_only(_try_dump(obj, protocol))


def _hazard_only(exc: BaseException | None) -> RemovedPickling | None:
    return exc if isinstance(exc, RemovedPickling) else None


def _try_hazard(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
                group: list[Any] | None = None) -> BaseException | None:
    return _hazard_only(_try_dump(obj, protocol, cut, group))


# -- telling a real Ctrl-C from a KeyboardInterrupt raised by user code -------------------------

_SIGINT = {"depth": 0, "fired": False}


def reraise_if_interrupted(exc: BaseException) -> None:
    """Re-raise ``exc`` if it is a real Ctrl-C, so user code cannot pass one off as a finding.

    Inside :func:`user_code_guard` (main thread), a ``KeyboardInterrupt`` is real only when the
    guard's SIGINT handler ran; one that user code raised itself is returned to the caller as a
    finding. Outside a guard, or where SIGINT is ignored, every ``KeyboardInterrupt`` is user
    code's.

    Raises:
        KeyboardInterrupt: ``exc`` itself, when a real SIGINT arrived.
    """
    if _SIGINT["fired"] and isinstance(exc, KeyboardInterrupt):
        raise exc


def _check_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` if a real SIGINT arrived and user code swallowed it."""
    if _SIGINT["fired"]:
        raise KeyboardInterrupt


@contextmanager
def user_code_guard() -> Iterator[None]:
    """Run user code with a SIGINT handler that flags a real Ctrl-C.

    In the main thread, where SIGINT has Python's default handler (or another Python
    handler, which still runs), installs a handler that sets a flag before raising
    ``KeyboardInterrupt``; restores the previous handler on exit. Nested guards share the
    outermost one. A real Ctrl-C that user code caught and swallowed is raised again at the
    end of the guard.

    Raises:
        KeyboardInterrupt: a real SIGINT arrived during the block.
    """
    installed = False
    previous: Any = None
    if _SIGINT["depth"] == 0:
        _SIGINT["fired"] = False
        if threading.current_thread() is threading.main_thread():
            try:
                previous = signal.getsignal(signal.SIGINT)
                if previous is signal.default_int_handler or (
                        callable(previous) and previous not in (signal.SIG_IGN, signal.SIG_DFL)):
                    signal.signal(signal.SIGINT, functools.partial(_on_sigint, previous))
                    installed = True
            except (ValueError, OSError):  # not the main interpreter
                installed = False
    _SIGINT["depth"] += 1
    try:
        yield
        if _SIGINT["depth"] == 1:
            _check_interrupt()
    finally:
        _SIGINT["depth"] -= 1
        if installed:
            signal.signal(signal.SIGINT, previous)
        if _SIGINT["depth"] == 0:
            _SIGINT["fired"] = False


def _on_sigint(previous: Any, signum: int, frame: Any) -> None:
    if previous is signal.default_int_handler:
        _SIGINT["fired"] = True
        raise KeyboardInterrupt
    try:
        previous(signum, frame)
    except KeyboardInterrupt:
        _SIGINT["fired"] = True
        raise


def type_name(obj: Any) -> str:
    """``module.qualname`` of ``obj``'s class, ``builtins.`` dropped (``function``, ``sqlite3.Connection``)."""
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}".removeprefix("builtins.")


_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MRO = type.__dict__["__mro__"]


def class_names(cls: type) -> tuple[str, ...]:
    """``cls`` and its bases (its ``__mro__`` less ``object``) as ``module.qualname``, ``builtins.``
    dropped: ``("_io.TextIOWrapper", "_io._TextIOBase", "_io._IOBase")``.

    Reads the C-level attributes of ``type`` only, so a metaclass's hooks never run; a class
    whose names cannot be read is left out.
    """
    names = []
    try:
        mro = _TYPE_MRO.__get__(cls)
    except BaseException as exc:  # noqa: BLE001 - not a class, or a hostile one
        reraise_if_interrupted(exc)
        return ()
    for klass in mro:
        if klass is object:
            continue
        try:
            names.append(f"{_TYPE_MODULE.__get__(klass)}.{_TYPE_QUALNAME.__get__(klass)}".removeprefix("builtins."))
        except BaseException as exc:  # noqa: BLE001 - a __module__ that is not a string, say
            reraise_if_interrupted(exc)
    return tuple(names)


def first_line(exc: BaseException) -> str:
    try:
        text = str(exc).strip()
    except BaseException as err:  # noqa: BLE001 - a user exception's __str__ may raise anything
        reraise_if_interrupted(err)
        text = ""
    return text.splitlines()[0] if text else NO_MESSAGE


def describe_exception(exc: BaseException) -> str:
    """``Type: first line`` (``Type`` alone when the exception says nothing)."""
    line = first_line(exc)
    name = type(exc).__name__
    return name if line == NO_MESSAGE else f"{name}: {line}"


def _label(obj: Any, exc: BaseException) -> str:
    """What the object at fault is, by mechanism (see :class:`Problem`)."""
    if isinstance(exc, UnpicklingFailed):
        return "unpickle"
    if isinstance(exc, RemovedPickling):
        return "itertools"
    msg = first_line(exc)
    torch = sys.modules.get("torch")
    if isinstance(exc, TemporaryStorageError):
        return "torch-generator" if torch is not None and isinstance(obj, torch.Generator) else "temporary-tensor"
    if "SemLock created in a fork context" in msg:
        return "fork-context-semlock"
    if "Cowardly refusing to serialize non-leaf tensor" in msg:
        return "non-leaf-tensor"
    if isinstance(exc, RecursionError):
        return "too-deep"
    if isinstance(obj, types.FunctionType):
        if obj.__name__ == "<lambda>":
            return "lambda"
        if "<locals>" in obj.__qualname__:
            return "closure" if obj.__closure__ else "local-function"
        return "unimportable-function"
    if isinstance(obj, type):
        return "local-class" if "<locals>" in obj.__qualname__ else "unimportable-class"
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, io.IOBase):
        return "open-file"
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(obj, (sqlite3.Connection, sqlite3.Cursor)):
        return "sqlite"
    if isinstance(obj, _LOCK_TYPES):
        return "lock"
    if isinstance(obj, _GENERATOR_TYPES):
        return "generator"
    if torch is not None and isinstance(obj, torch.Generator):
        return "torch-generator"
    if type(obj).__module__ == "itertools":
        return "itertools"
    return "other"


def _notable(obj: Any) -> str | None:
    """A container worth naming in a finding (its resources fail, not the container itself)."""
    if isinstance(obj, functools.partial):
        return "partial"
    if isinstance(obj, zipfile.ZipFile):
        return "zipfile"
    tarfile = sys.modules.get("tarfile")
    if tarfile is not None and isinstance(obj, tarfile.TarFile):
        return "tarfile"
    logging = sys.modules.get("logging")
    if logging is not None and isinstance(obj, logging.Handler):
        return "log-handler"
    return None


def _attr(path: str, name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{path}.{name}"
    return f"getattr({path}, {name!r})"


def _is_literal_key(key: Any) -> bool:
    if type(key) in (str, int, float, bool, bytes, type(None)):
        return True
    return type(key) is tuple and all(_is_literal_key(k) for k in key)


def _descriptors(t: type) -> list[tuple[str, Any]]:
    """The C-level member and getset descriptors of ``t`` and its bases, by name."""
    out = []
    for klass in t.__mro__:
        for name, attr in vars(klass).items():
            if name in ("__dict__", "__weakref__") or (name.startswith("__") and name.endswith("__")):
                continue
            if isinstance(attr, (types.MemberDescriptorType, types.GetSetDescriptorType)):
                out.append((name, attr))
    return out


def _attributes(obj: Any, keep: list[Any], cache: dict[type, list[tuple[str, Any]]] | None = None) -> dict[int, str]:
    """``id(value) -> attribute name`` for the attributes an object stores.

    Reads the instance ``__dict__``, ``__slots__`` and C-level member/getset descriptors
    (never properties, which would run user code), plus ``__self__``/``__func__``/``__wrapped__``.
    Every value read is appended to ``keep``, so its id stays its own while it is used.
    """
    names: dict[int, str] = {}

    def add(name: str, value: Any) -> None:
        keep.append(value)
        names.setdefault(id(value), name)

    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            if isinstance(k, str):
                add(k, v)
    t = type(obj)
    found = cache.get(t) if cache is not None else None
    if found is None:
        found = _descriptors(t)
        if cache is not None:
            cache[t] = found
    for name, attr in found:
        try:
            add(name, attr.__get__(obj, t))
        except Exception:  # noqa: BLE001, S112 - an unset slot or a failing getter names nothing
            continue
    for name in ("__self__", "__func__", "__wrapped__"):
        try:
            add(name, getattr(obj, name))
        except Exception:  # noqa: BLE001, S112
            continue
    return names


_OBJECT_REDUCE_EX: Any = object.__reduce_ex__
_OBJECT_REDUCE: Any = object.__reduce__
_NEWOBJ: Any = copyreg.__dict__["__newobj__"]
_NEWOBJ_EX: Any = copyreg.__dict__.get("__newobj_ex__")


def _has_custom_getstate(obj: Any) -> bool:
    t = type(obj)
    custom = getattr(t, "__getstate__", None)
    return custom is not None and custom is not getattr(object, "__getstate__", None) and (
        t.__reduce_ex__ is _OBJECT_REDUCE_EX and t.__reduce__ is _OBJECT_REDUCE
    )


#: Stands for the parent's path in a path segment: ``"\0.next"``, ``"list(\0.keys())[2]"``.
_HOLE = "\0"


#: Classes in order of appearance, and their ids (classes need not hash: a metaclass may refuse).
_Holders = tuple[tuple[type, ...], frozenset[int]]
_NO_HOLDERS: _Holders = ((), frozenset())


class _Item:
    """An object on the walk: its path segment, its parent item, and what is known of it.

    Paths are built only when a problem is reported, by folding the segments from the root
    (:func:`_path`), so a chain 100,000 links deep costs one segment per link, not a path.
    """

    __slots__ = ("obj", "seg", "parent", "within", "exc", "deep", "holders", "_inner")

    def __init__(self, obj: Any, seg: str, parent: _Item | None, within: str | None) -> None:
        self.obj = obj
        self.seg = seg
        self.parent = parent
        self.within = within
        self.exc: BaseException | None = None  # what probing it raised
        self.deep = False  # too deep to probe: walked link by link
        # The classes of the objects holding it, from the root down, each once; shared with its
        # siblings, so a chain 100,000 links deep of one class holds one tuple.
        self.holders: _Holders = parent.inner_holders() if parent is not None else _NO_HOLDERS
        self._inner: _Holders | None = None

    def inner_holders(self) -> _Holders:
        """The holders of this item's children: its own holders plus its own class."""
        if self._inner is None:
            held, ids = self.holders
            cls = type(self.obj)
            self._inner = self.holders if id(cls) in ids else ((*held, cls), ids | {id(cls)})
        return self._inner


_Node = TypeVar("_Node", _Item, "_Link")


def _lineage(node: _Node) -> list[_Node]:
    """``node`` and the nodes above it, from the top down."""
    out = []
    current: _Node | None = node
    while current is not None:
        out.append(current)
        current = current.parent
    out.reverse()
    return out


def _path(item: _Item) -> str:
    """The item's path from its root, with long runs of one segment written once with a count."""
    segs = [node.seg for node in _lineage(item)]
    path = segs[0]
    i = 1
    while i < len(segs):
        seg = segs[i]
        j = i + 1
        while j < len(segs) and segs[j] == seg:
            j += 1
        count = j - i
        if count > MAX_REPEAT:
            # ``{.next * 4321}``; a wrapping segment is shown with ``…`` for the hole.
            shown = seg[1:] if seg.startswith(_HOLE) else seg.replace(_HOLE, "…")
            path = f"{path}{{{shown} * {count}}}"
        else:
            for _ in range(count):
                path = seg.replace(_HOLE, path)
        i = j
    return path


def _pair_children(pairs: Iterable[tuple[Any, Any]], path: str) -> list[tuple[str, Any]]:
    """Key-value pairs as children: ``path['key']`` for a literal key, else the key and the
    value by position (``list(path.keys())[3]``, ``list(path.values())[3]``)."""
    out: list[tuple[str, Any]] = []
    for i, (k, v) in enumerate(pairs):
        if _is_literal_key(k):
            out.append((f"{path}[{k!r}]", v))
        else:
            out += [(f"list({path}.keys())[{i}]", k), (f"list({path}.values())[{i}]", v)]
    return out


def _unique(children: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Each child once, at its first path."""
    seen: set[int] = set()
    out = []
    for path, child in children:
        if id(child) not in seen:
            seen.add(id(child))
            out.append((path, child))
    return out


def _call_children(rv: tuple[Any, ...], reduce_path: str, named: Callable[[Any, str], str]) -> list[tuple[str, Any]]:
    """The callable and arguments of a reduce tuple; ``copyreg.__newobj__`` (and ``__newobj_ex__``)
    as the class and its ``__getnewargs__()``."""
    func = rv[0]
    args: tuple[Any, ...] = tuple(rv[1] or ()) if len(rv) > 1 else ()
    if func is _NEWOBJ:
        return [(f"{_HOLE}.__class__", args[0]),
                *((named(a, f"{_HOLE}.__getnewargs__()[{i}]"), a) for i, a in enumerate(args[1:]))]
    if func is _NEWOBJ_EX:
        return [(f"{_HOLE}.__class__", args[0]),
                *((named(a, f"{reduce_path}[1][{i + 1}]"), a) for i, a in enumerate(args[1:]))]
    return [(named(func, f"{reduce_path}[0]"), func),
            *((named(a, f"{reduce_path}[1][{i}]"), a) for i, a in enumerate(args or ()))]


class _Link:
    """One object of a chain, with the link above it; a chain is kept alive by its last link."""

    __slots__ = ("obj", "parent", "depth")

    def __init__(self, obj: Any, parent: _Link | None) -> None:
        self.obj = obj
        self.parent = parent
        self.depth: int = parent.depth + 1 if parent is not None else 1

    def chain(self) -> list[Any]:
        """The objects from the top of the chain down to this one."""
        return [link.obj for link in _lineage(self)]


class _Frame:
    """A chain link being walked: its successors and the next one to visit."""

    __slots__ = ("link", "kids", "next")

    def __init__(self, link: _Link, kids: list[Any]) -> None:
        self.link = link
        self.kids = kids
        self.next = 0


def _chain_entry(chain: list[Any]) -> int:
    """Where a chain too deep to pickle starts: its first object of the type that repeats most
    along it (the top itself excluded, unless it is alone)."""
    counts: dict[type, int] = {}
    for obj in chain[1:] or chain:
        counts[type(obj)] = counts.get(type(obj), 0) + 1
    repeated = max(counts, key=counts.__getitem__)
    return next(k for k, obj in enumerate(chain) if type(obj) is repeated)


class _Walker:
    """Finds every failing object below some roots; see :func:`find_problems`.

    ``mode`` says what failing means: ``dump`` (pickling raises anything), ``load`` (it
    pickles, but loading raises: :class:`UnpicklingFailed`) or ``hazard`` (pickling raises
    :class:`RemovedPickling` under :func:`_simulating_hazards`). A ``load`` or ``hazard``
    walker made ``after`` a dump walker cuts every object that one reported, so each fault is
    reported by one walk only.
    """

    def __init__(self, protocol: int, mode: str = "dump", after: _Walker | None = None,
                 probe: Callable[..., BaseException | None] | None = None) -> None:
        self.protocol = protocol
        self.mode = mode
        self._probe = probe or {"dump": _try_dump, "load": _try_roundtrip, "hazard": _try_hazard}[mode]
        self.problems: list[Problem] = []
        self.reported: set[int] = set()
        # every object probed or queued: cut out of later probes
        self.judged: set[int] = set(after.reported) if after is not None else set()
        self.deep_types: set[type] = set()  # types seen too deep to probe, link after link
        # children built by reducers stay alive so their ids stay unique
        self.keep: list[Any] = [after.keep] if after is not None else []
        self.table = _dispatch_table(Payload())
        self.descriptors: dict[type, list[tuple[str, Any]]] = {}
        # id(class) -> (class, site)
        self.sites: sites.SiteCache = after.sites if after is not None else {}
        self.names: dict[int, tuple[str, ...]] = after.names if after is not None else {}  # id(class) -> names
        self.budget = MAX_OBJECTS
        self.root = ""

    # -- probing -----------------------------------------------------------------------------

    def failing(self, items: list[_Item]) -> list[_Item]:
        """The items that fail on their own, found by probing groups and halving them.

        Each probe cuts every judged object, the items themselves included when reached from
        another item, so it costs only what is new below each item. Sets ``exc`` (and
        ``deep``, for a ``RecursionError``) on each failing item.
        """
        if not items:
            return []
        if len(items) > 8:
            if self._probe(None, self.protocol, self.judged, group=[it.obj for it in items]) is None:
                return []
            mid = len(items) // 2
            return self.failing(items[:mid]) + self.failing(items[mid:])
        out = []
        for it in items:
            exc = self._probe(it.obj, self.protocol, self.judged)
            if exc is not None:
                it.exc = exc
                if isinstance(exc, RecursionError):
                    it.deep = True
                    with contextlib.suppress(TypeError):  # an unhashable metaclass
                        self.deep_types.add(type(it.obj))
                out.append(it)
        return out

    # -- decomposition -----------------------------------------------------------------------

    def children(self, obj: Any) -> list[tuple[str, Any]] | None:
        """What pickling ``obj`` pickles next, each with its path segment; ``None`` for a leaf.

        Mirrors ``pickle.Pickler.save``: built-in containers are walked directly; functions and
        classes are saved by name (leaves); everything else goes through the dispatch table or
        ``__reduce_ex__(protocol)``. Raises what the reducer raises.
        """
        t = type(obj)
        if t is dict:
            return _pair_children(obj.items(), _HOLE)
        if t is list or t is tuple:
            return [(f"{_HOLE}[{i}]", v) for i, v in enumerate(obj)]
        if t is set or t is frozenset:
            return [(f"list({_HOLE})[{i}]", v) for i, v in enumerate(obj)]
        if t is types.FunctionType or isinstance(obj, type):
            return None
        reducer = self.table.get(t)
        # Runs inside find_problems' _spawning(): reducers that assert spawning run as in a real start.
        rv = reducer(obj) if reducer is not None else obj.__reduce_ex__(self.protocol)
        if isinstance(rv, str) or not isinstance(rv, tuple):
            return None
        self.keep.append(rv)
        return self._reduce_children(obj, rv)

    def _reduce_children(self, obj: Any, rv: tuple[Any, ...]) -> list[tuple[str, Any]]:
        """The children of a reduce tuple ``(callable, args, state, listitems, dictitems)``, each
        once, named by the attribute that holds it where there is one."""
        names = _attributes(obj, self.keep, self.descriptors)
        reduce_path = f"{_HOLE}.__reduce_ex__({self.protocol})"

        def named(value: Any, fallback: str) -> str:
            if value is type(obj):
                return f"{_HOLE}.__class__"
            name = names.get(id(value))
            return _attr(_HOLE, name) if name is not None else fallback

        out = _call_children(rv, reduce_path, named)
        state = rv[2] if len(rv) > 2 else None
        if state is not None:
            state_path = f"{_HOLE}.__getstate__()" if _has_custom_getstate(obj) else f"{reduce_path}[2]"
            out += self._state_children(obj, _HOLE, state, state_path, named)
        if len(rv) > 3 and rv[3] is not None:
            items = list(rv[3])
            self.keep.append(items)
            out += [(f"{_HOLE}[{i}]", v) for i, v in enumerate(items)]
        if len(rv) > 4 and rv[4] is not None:
            pairs = list(rv[4])
            self.keep.append(pairs)
            out += _pair_children(pairs, _HOLE)
        return _unique(out)

    def _state_children(self, obj: Any, path: str, state: Any, state_path: str,
                        named: Callable[[Any, str], str]) -> list[tuple[str, Any]]:
        """The children of a reduce tuple's state: a dict (by attribute where ``obj`` stores the
        value under that name), a ``(dict, slots dict)`` pair, a sequence, or one object."""
        def from_dict(d: dict[Any, Any], base: str) -> list[tuple[str, Any]]:
            out = []
            for k, v in d.items():
                if isinstance(k, str) and _stored_attr(obj, k) is v:
                    out.append((_attr(path, k), v))
                else:
                    out.append((named(v, f"{base}[{k!r}]"), v))
            return out

        if isinstance(state, dict):
            return from_dict(state, state_path)
        if (type(state) is tuple and len(state) == 2 and (state[0] is None or isinstance(state[0], dict))
                and isinstance(state[1], dict)):
            return (from_dict(state[0], f"{state_path}[0]") if state[0] else []) + from_dict(
                state[1], f"{state_path}[1]")
        if type(state) in (tuple, list):
            return [(named(v, f"{state_path}[{i}]"), v) for i, v in enumerate(state)]
        return [(named(state, state_path), state)]

    def children_or_leaf(self, obj: Any) -> list[tuple[str, Any]]:
        """:meth:`children`, with a reducer that raises (anything) taken as a leaf."""
        try:
            return self.children(obj) or []
        except BaseException as exc:  # noqa: BLE001 - user reducers may raise anything
            reraise_if_interrupted(exc)
            return []

    # -- the walk ----------------------------------------------------------------------------

    def walk(self, name: str, obj: Any) -> None:
        """Report every failing object below the root ``obj`` (named ``name``)."""
        if type(obj) in _ATOMIC or id(obj) in self.judged:
            return
        self.root = name
        earlier = frozenset(self.judged)  # judged under earlier roots
        before = len(self.problems)
        self.judged.add(id(obj))
        self.keep.append(obj)
        item = _Item(obj, name, None, None)
        item.exc = self._probe(obj, self.protocol, earlier)
        if item.exc is None:
            return
        item.deep = isinstance(item.exc, RecursionError)
        self.run(item)
        # What is left once everything reported is fixed: too deep, or failing only as a whole.
        left = self._probe(obj, self.protocol, earlier | self.reported)
        if isinstance(left, RecursionError):
            self.report_depth(item, left, earlier)
        elif left is not None and len(self.problems) == before and id(obj) not in self.reported:
            self.report(item, left)

    def run(self, root: _Item) -> None:
        stack = [root]
        while stack:
            _check_interrupt()
            item = stack.pop()
            if id(item.obj) in self.reported:
                continue
            if self.budget <= 0:
                stopped = f"the walk stopped here after {MAX_OBJECTS:,} objects"
                # A chain link walked without a probe would fail as the chain does.
                exc = item.exc or RecursionError("maximum recursion depth exceeded while pickling an object")
                self.report(item, exc, note=stopped)
                return
            self.budget -= 1
            try:
                stack.extend(reversed(self.visit(item)))
            except BaseException as exc:  # noqa: BLE001 - the object's own reducer raised: it is at fault
                reraise_if_interrupted(exc)
                self.report(item, item.exc or exc)

    def visit(self, item: _Item) -> list[_Item]:
        """The failing (or too deep) children of ``item`` to walk next; reports ``item`` itself
        when none of its children fails on its own and it still fails.

        Raises:
            BaseException: what the object's reducer raises (the object is at fault).
        """
        obj = item.obj
        kids = self.children(obj)
        if kids is None:  # saved by reference (a function or class), or a reduce string
            if item.exc is None:
                item.exc = self._probe(obj, self.protocol, self.judged)
            if item.exc is not None:
                self.report(item)
            return []
        inner = _notable(obj) or item.within
        fresh: list[_Item] = []
        for seg, child in kids:
            if type(child) in _ATOMIC or id(child) in self.judged:
                continue
            self.judged.add(id(child))
            fresh.append(_Item(child, seg, item, inner))
        to_probe = []
        for it in fresh:
            if item.deep and type(it.obj) in self.deep_types:
                it.deep = True  # the next link of a chain: walked, not probed
            else:
                to_probe.append(it)
        bad = {id(it) for it in self.failing(to_probe)}
        walk_on = [it for it in fresh if it.deep or id(it) in bad]
        if not walk_on and not item.deep:
            # No child fails on its own (or they are judged elsewhere): is it itself at fault?
            exc = self._probe(obj, self.protocol, self.judged)
            if exc is not None:
                self.report(item, exc)
        return walk_on

    def report_depth(self, root: _Item, exc: BaseException, earlier: frozenset[int]) -> None:
        """Report where the structure below ``root`` that is too deep to pickle starts.

        Walks it depth first, as the pickler does (:meth:`deepest_chain`), and names the first
        object of the chain's most repeated type, at a path made of the walk's own segments.
        """
        chain, back_edges = self.deepest_chain(root.obj, earlier)
        at = _chain_entry(chain)
        entry = chain[at]
        if id(entry) in self.reported:
            return
        item = root
        for obj in chain[1:at + 1]:  # the way down to the entry: a few links
            seg = next((seg for seg, child in self.children_or_leaf(item.obj) if child is obj), f"{_HOLE}.<?>")
            item = _Item(obj, seg, item, None)
        cycle = "; it is a reference cycle back to this object" if id(entry) in back_edges else ""
        if "maximum recursion depth exceeded" in first_line(exc):
            # The limit may strike inside a Python call the pickler makes (a reducer, a probe's
            # persistent_id); a real start says this.
            exc = RecursionError("maximum recursion depth exceeded while pickling an object")
        note = f"a chain of {len(chain) - at:,} nested objects starts here{cycle}"
        self.report(item, exc, note=note, label="too-deep")

    def deepest_chain(self, top: Any, earlier: frozenset[int]) -> tuple[list[Any], set[int]]:
        """The deepest chain of objects below ``top`` (``top`` first), and the ids of the objects
        a deeper one refers back to (a reference cycle).

        Walks depth first, as the pickler does, iteratively and each object once (objects in
        ``earlier`` are judged already), through :meth:`successors`, at most
        :data:`MAX_OBJECTS` objects. Only the deepest chain's links stay alive.
        """
        memo = set(earlier)
        memo.add(id(top))
        on_stack = {id(top)}
        back_edges: set[int] = set()
        stack = [_Frame(_Link(top, None), self.successors(top))]
        deepest, budget = stack[0].link, MAX_OBJECTS
        while stack and budget > 0:
            frame = stack[-1]
            if frame.next >= len(frame.kids):
                stack.pop()
                on_stack.discard(id(frame.link.obj))
                continue
            child = frame.kids[frame.next]
            frame.next += 1
            if type(child) in _ATOMIC or id(child) in memo:
                if id(child) in on_stack:
                    back_edges.add(id(child))
                continue
            budget -= 1
            if not budget & 0xFFF:
                _check_interrupt()
            memo.add(id(child))
            on_stack.add(id(child))
            stack.append(_Frame(_Link(child, frame.link), self.successors(child)))
            if len(stack) > deepest.depth:
                deepest = stack[-1].link
        return deepest.chain(), back_edges

    def successors(self, obj: Any) -> list[Any]:
        """The objects pickling ``obj`` pickles next, in order, without paths (see
        :meth:`children`); a reducer that raises (anything) gives none."""
        t = type(obj)
        if t is dict:
            return [x for kv in obj.items() for x in kv]
        if t is list or t is tuple or t is set or t is frozenset:
            return list(obj)
        if t is types.FunctionType or isinstance(obj, type):
            return []
        try:
            reducer = self.table.get(t)
            rv = reducer(obj) if reducer is not None else obj.__reduce_ex__(self.protocol)
            if isinstance(rv, str) or not isinstance(rv, tuple):
                return []
            self.keep.append(rv)
            out = [rv[0], *(rv[1] if len(rv) > 1 and rv[1] else ())]
            state = rv[2] if len(rv) > 2 else None
            if type(state) is dict:
                out += state.values()
            elif type(state) is tuple and len(state) == 2 and all(type(x) in (dict, type(None)) for x in state):
                out += [v for d in state if d for v in d.values()]
            elif state is not None:
                out.append(state)
            if len(rv) > 3 and rv[3] is not None:
                items = list(rv[3])
                self.keep.append(items)
                out += items
            if len(rv) > 4 and rv[4] is not None:
                pairs = list(rv[4])
                self.keep.append(pairs)
                out += [x for kv in pairs for x in kv]
            return out
        except BaseException as exc:  # noqa: BLE001 - user reducers may raise anything
            reraise_if_interrupted(exc)
            return []

    def report(self, item: _Item, exc: BaseException | None = None, note: str | None = None,
               label: str | None = None) -> None:
        obj = item.obj
        exc = exc if exc is not None else item.exc
        if exc is None:  # pragma: no cover - every reported item has failed a probe
            return
        self.reported.add(id(obj))
        self.keep.append(obj)
        message = first_line(exc) + (f" ({note})" if note else "")
        try:
            label = label or _label(obj, exc)
            qualname = getattr(obj, "__qualname__", "") if isinstance(obj, (type, types.FunctionType)) else ""
            within = item.within
        except BaseException as err:  # noqa: BLE001 - a hostile __class__ or __qualname__
            reraise_if_interrupted(err)
            label, qualname, within = label or "other", "", item.within
        if isinstance(exc, (TemporaryStorageError, RemovedPickling)):
            exc_type = type(exc).__mro__[1].__name__ if isinstance(exc, RemovedPickling) else type(exc).__name__
        elif isinstance(exc, UnpicklingFailed):
            exc_type = type_name(exc.cause)
        else:
            exc_type = type_name(exc)
        attr = item.seg[len(_HOLE) + 1:] if item.seg.startswith(_HOLE + ".") else ""
        file, line, how = sites.locate(obj, _enclosing(item), self.sites, stored_as=attr if attr.isidentifier() else None)
        self.problems.append(Problem(
            path=_path(item),
            type=type_name(obj),
            message=message,
            exc_type=exc_type,
            label=label,
            within=within,
            root=self.root,
            qualname=qualname if isinstance(qualname, str) else "",
            file=file,
            line=line,
            located=how,
            breaks_on=exc.breaks_on if isinstance(exc, RemovedPickling) else None,
            classes=self.class_names(type(obj)),
            holders=tuple(dict.fromkeys(n for cls in reversed(item.holders[0]) for n in self.class_names(cls))),
        ))

    def class_names(self, cls: type) -> tuple[str, ...]:
        """:func:`class_names`, once per class (the class is kept alive, so its id stays its own)."""
        if id(cls) not in self.names:
            self.keep.append(cls)
            self.names[id(cls)] = class_names(cls)
        return self.names[id(cls)]


def _enclosing(item: _Item) -> Iterator[Any]:
    """The objects holding ``item``'s object, innermost first, out to its root."""
    node = item.parent
    while node is not None:
        yield node.obj
        node = node.parent


def _stored_attr(obj: Any, name: str) -> Any:
    """The value ``obj`` stores under ``name`` (instance dict or slot), or a fresh sentinel."""
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name in d:
        return d[name]
    for klass in type(obj).__mro__:
        attr = vars(klass).get(name)
        if isinstance(attr, types.MemberDescriptorType):
            try:
                return attr.__get__(obj, type(obj))
            except AttributeError:
                break
    return object()


def _collapse(problems: list[Problem]) -> list[Problem]:
    """At most :data:`MAX_SIMILAR` problems with the same type, message, exception and label;
    the last one kept says how many more there are and where the last of them is."""
    groups: dict[tuple[str, str, str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.type, p.message, p.exc_type, p.label), []).append(p)
    notes = {}
    for group in groups.values():
        if len(group) > MAX_SIMILAR:
            last = group[MAX_SIMILAR - 1]
            more = len(group) - MAX_SIMILAR
            notes[id(last)] = dataclasses.replace(
                last, message=f"{last.message} (and {more:,} more object{'s' if more != 1 else ''} "
                f"failing the same way, not listed; the last at {group[-1].path})")
    kept = {id(p) for group in groups.values() for p in group[:MAX_SIMILAR]}
    return [notes.get(id(p), p) for p in problems if id(p) in kept]


def find_problems(roots: Mapping[str, Any], protocol: int = PROTOCOL, *, load: bool = False,
                  hazards: bool = False) -> list[Problem]:
    """Every object below ``roots`` that ForkingPickler cannot pickle, in the order found.

    Args:
        roots: ``{root name: object}``, e.g. ``{"dataset": ds, "collate_fn": fn}``; each root
            name starts the paths of the problems found below it.
        protocol: pickle protocol used for probing (default 5).
        load: also report every object that pickles but fails to load (label ``unpickle``,
            message ``pickles, but unpickling in the worker fails: ...``, ``exc_type`` what
            loading raised), found by a second walk of round trips (:func:`roundtrip`) with
            the objects already reported cut out. Loading runs the objects' own code here.
        hazards: also report every object that pickles here but not on a newer Python
            (:data:`HAZARDS`; ``breaks_on`` set, ``exc_type`` ``TypeError``), found by a third
            walk; none on a Python that is not older than the hazard.

    Returns:
        One :class:`Problem` per object at fault. An object reached from several paths is
        reported once, at the first path found; objects that pickle are never reported. Any
        exception user code raises while being pickled (``SystemExit``, ``KeyboardInterrupt``
        and ``GeneratorExit`` included) is a problem of the object whose code raised it. A
        structure too deep to pickle is one problem (label ``too-deep``) where it starts. At
        most :data:`MAX_SIMILAR` problems of one kind are listed, and at most
        :data:`MAX_OBJECTS` objects are decomposed; time and memory grow linearly with the
        objects walked.

    Raises:
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived; see :func:`user_code_guard`.
    """
    walker = _Walker(protocol)
    with user_code_guard(), _spawning():
        for name, obj in roots.items():
            walker.walk(name, obj)
        problems = list(walker.problems)
        if load:
            loader = _Walker(protocol, "load", after=walker)
            for name, obj in roots.items():
                loader.walk(name, obj)
            problems += loader.problems
        if hazards and any(h.applies() for h in HAZARDS):
            with _simulating_hazards():
                newer = _Walker(protocol, "hazard", after=walker)
                for name, obj in roots.items():
                    newer.walk(name, obj)
            problems += newer.problems
    return _collapse(problems)


class _ReferencePickler(_CutPickler):
    """A :class:`_CutPickler` that raises ``failure`` on reaching a function or class saved by
    reference to the global ``target`` (``(module, name)``; ``name`` ``None``: anything in the
    module or its submodules)."""

    def __init__(self, payload: Payload, protocol: int, weakrefs: list[Any], cut: set[int] | frozenset[int],
                 target: tuple[str, str | None], failure: BaseException) -> None:
        super().__init__(payload, protocol, weakrefs, cut)
        self.target = target
        self.failure = failure

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            module, name = self.target
            try:
                own = obj.__module__
                qualname = getattr(obj, "__qualname__", obj.__name__)
            except BaseException as exc:  # noqa: BLE001 - a hostile metaclass
                reraise_if_interrupted(exc)
                return NotImplemented
            if isinstance(own, str) and (own == module or (name is None and own.startswith(module + "."))):
                if name is None or qualname == name:
                    raise self.failure
        return NotImplemented


def _try_reference(obj: Any, protocol: int = PROTOCOL, cut: set[int] | frozenset[int] | None = None,
                   group: list[Any] | None = None, *, target: tuple[str, str | None],
                   failure: UnpicklingFailed) -> BaseException | None:
    """``failure`` when pickling ``obj`` (or a member of ``group``) reaches ``target``, else ``None``."""
    payload = Payload()
    with _spawning():
        pickler = _ReferencePickler(payload, protocol, [], cut or frozenset(), target, failure)
        if group is not None:
            obj = [_Root(o, pickler) for o in group]
        else:
            pickler.next_root = id(obj)
        try:
            pickler.dump(obj)
        except UnpicklingFailed as exc:
            return exc if exc is failure else None
        except BaseException as exc:  # noqa: BLE001 - a dump failure: the dump walk's business
            reraise_if_interrupted(exc)
        finally:
            del pickler, obj
    return None


def find_references(roots: Mapping[str, Any], module: str, name: str | None, cause: BaseException,
                    protocol: int = PROTOCOL) -> list[Problem]:
    """Every object below ``roots`` that pickles as a reference to the global ``module.name``.

    For a load that failed somewhere else than here (a clean interpreter, where the global
    cannot be found: ``Can't get attribute 'X' on <module 'm'>``, ``No module named 'm'``):
    the walk of :func:`find_problems`, where failing means reaching a function or class
    pickled by reference to that global (``name`` ``None``: to anything in ``module``). Each
    problem has label ``unpickle`` and the message ``pickles, but unpickling in the worker
    fails: `` followed by ``cause``.

    Raises:
        KeyboardInterrupt: a real Ctrl-C (SIGINT) arrived; see :func:`user_code_guard`.
    """
    failure = UnpicklingFailed(cause)
    probe = functools.partial(_try_reference, target=(module, name), failure=failure)
    walker = _Walker(protocol, "load", probe=probe)
    with user_code_guard(), _spawning():
        for root, obj in roots.items():
            walker.walk(root, obj)
    out = []
    for p in _collapse(walker.problems):
        if p.path.endswith(".__class__") and p.holders:
            # an instance of the class that cannot be found: named at the instance
            p = dataclasses.replace(p, path=p.path[: -len(".__class__")], type=p.holders[0], classes=p.holders)
        out.append(p)
    return out
