"""The pickle-path walker: where, inside an object graph, the pickler gives up.

A spawn or forkserver worker start pickles its ``Process`` object, and with it the
``DataLoader``'s dataset, ``collate_fn`` and ``worker_init_fn``, with
:class:`multiprocessing.reduction.ForkingPickler` (CPython ``Lib/multiprocessing/popen_spawn_posix.py``
and ``popen_forkserver.py``: ``reduction.dump(process_obj, fp)``). ``import torch.multiprocessing``
registers torch's reducers in ``ForkingPickler._extra_reducers``. The pickler's own error names
a type (``cannot pickle '_io.BufferedReader' object``), not where that object sits.

This module uses the same pickler and follows the same reduce protocol (CPython
``Lib/pickle.py``, ``Pickler.save``: dispatch table, then ``__reduce_ex__(protocol)``, then the
``(callable, args, state, listitems, dictitems)`` tuple) to find *every* object that cannot be
pickled, each at its own path in Python expression syntax (``dataset.transform.transforms[2]``,
``dataset.ops['flip']``, ``collate_fn.func``). Only failing subtrees are decomposed: children
are probed in groups and halved until the failing ones are isolated, and a failing object
is reported only when none of its children fails on its own, so ancestors are never
reported separately.

Payload sizes are counted without building the bytes: the pickle stream goes to a sink that
adds up ``write`` lengths, protocol 5 hands numpy (and other ``PickleBuffer``) data to a
``buffer_callback`` that counts ``PickleBuffer.raw().nbytes`` without copying (PEP 574), and
CPU torch storages are counted by ``nbytes()`` instead of being moved to shared memory as
torch's reducer would (``torch/multiprocessing/reductions.py``, ``reduce_storage``).

While pickling, a stand-in "spawning popen" is installed
(``multiprocessing.context.set_spawning_popen``), as a real start does, so multiprocessing
queues, locks and shared values judge themselves as they would during a real start (for
example ``A SemLock created in a fork context ...`` since CPython 3.11.5).
"""

from __future__ import annotations

import copyreg
import functools
import io
import keyword
import pickle
import sys
import threading
import types
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import context as _mp_context
from multiprocessing.reduction import ForkingPickler
from typing import Any

__all__ = [
    "PROTOCOL",
    "Payload",
    "Problem",
    "TemporaryStorageError",
    "WalkerPickler",
    "find_problems",
    "measure_payload",
    "probe",
]

#: Protocol used for probing and counting. Protocol 5 passes buffers out of band (PEP 574),
#: so numpy data is counted without a copy; the real start uses ``pickle.DEFAULT_PROTOCOL``
#: (4 on Python 3.8-3.13, 5 from 3.14), which writes the same bytes in band.
PROTOCOL = 5

#: Deepest nesting the walker decomposes; a failing object below it is reported where it stands.
MAX_DEPTH = 100

_ATOMIC = (type(None), bool, int, float, complex, str, bytes, bytearray, range, types.EllipsisType)
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
_GENERATOR_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


@dataclass(frozen=True)
class Problem:
    """One object that cannot be pickled, at the deepest path that is itself at fault.

    Attributes:
        path: Python expression rooted at a root name, e.g. ``dataset.transform.transforms[2]``.
        type: the object's type, ``module.qualname`` (``builtins.`` dropped), e.g. ``function``.
        message: the pickler's own message (first line), e.g. ``cannot pickle 'module' object``.
        exc_type: the exception type the pickler raised, e.g. ``TypeError``.
        label: what the object is, by mechanism: ``lambda``, ``closure``, ``local-function``,
            ``local-class``, ``unimportable-function``, ``unimportable-class``, ``open-file``,
            ``sqlite``, ``module``, ``lock``, ``generator``, ``torch-generator``,
            ``temporary-tensor``, ``fork-context-semlock``, ``non-leaf-tensor``, ``too-deep``
            or ``other``.
        within: the innermost notable container on the path (``partial``, ``zipfile``,
            ``tarfile``, ``log-handler``), or ``None``.
        root: the root name the path starts with.
        qualname: ``__qualname__`` of a function or class at fault, else ``""``.
    """

    path: str
    type: str
    message: str
    exc_type: str
    label: str
    within: str | None = None
    root: str = ""
    qualname: str = ""


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


@contextmanager
def _spawning() -> Iterator[None]:
    previous = _mp_context.get_spawning_popen()
    _mp_context.set_spawning_popen(_ProbePopen())
    try:
        yield
    finally:
        _mp_context.set_spawning_popen(previous)


def _shared_storage(nbytes: int) -> None:  # pragma: no cover - stands in for a storage; never loaded
    raise RuntimeError("a size-only stand-in for a torch storage; it does not unpickle")


def _torch_storage_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    import torch.multiprocessing  # noqa: F401 - registers torch's ForkingPickler reducers

    return tuple(t for t in ForkingPickler._extra_reducers if t.__name__ == "UntypedStorage")


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
    tmp = sys.modules.get("torch.multiprocessing.reductions")
    if tmp is None:
        import torch.multiprocessing.reductions as tmp
    return tmp.StorageWeakRef, sys.modules["torch.multiprocessing"].get_sharing_strategy() == "file_descriptor"


_BASE: tuple[tuple, dict, tuple] = ((), {}, ())


def _base_table() -> tuple[dict, tuple[type, ...]]:
    """``copyreg.dispatch_table`` plus ``ForkingPickler._extra_reducers``, and torch's storage
    types; rebuilt whenever either registry (or the presence of torch) changes."""
    global _BASE
    key = (len(copyreg.dispatch_table), len(ForkingPickler._extra_reducers), "torch" in sys.modules)
    if _BASE[0] != key:
        storage_types = _torch_storage_types()  # may register torch's reducers first
        key = (len(copyreg.dispatch_table), len(ForkingPickler._extra_reducers), "torch" in sys.modules)
        table = dict(copyreg.dispatch_table)
        table.update(ForkingPickler._extra_reducers)
        _BASE = (key, table, storage_types)
    return _BASE[1], _BASE[2]


def _dispatch_table(payload: Payload, weakrefs: list | None = None) -> dict:
    """ForkingPickler's dispatch table, with CPU torch storages counted instead of shared.

    With ``weakrefs``, a weak reference to every CPU storage pickled is appended to it, so the
    caller can tell storages that outlive the dump from temporaries.
    """
    table, storage_types = _base_table()
    table = dict(table)
    weakref_type, _ = _storage_tracking() if storage_types else (None, False)
    for storage_type in storage_types:
        torch_reducer = table[storage_type]

        def reduce_storage(storage, _torch_reducer=torch_reducer):
            if storage.device.type != "cpu":
                return _torch_reducer(storage)  # CUDA and meta storages raise there, as in a real start
            payload.storage_bytes += storage.nbytes()
            if weakrefs is not None and weakref_type is not None and storage.nbytes():
                weakrefs.append(weakref_type(storage))
            return (_shared_storage, (storage.nbytes(),))

        table[storage_type] = reduce_storage
    return table


class WalkerPickler(ForkingPickler):
    """:class:`ForkingPickler` (with torch's reducers) that counts into a :class:`Payload`.

    ``ForkingPickler.__init__`` accepts no ``buffer_callback``, so this sets up the same
    dispatch table itself: ``copyreg.dispatch_table`` plus ``ForkingPickler._extra_reducers``.
    """

    def __init__(self, payload: Payload, protocol: int = PROTOCOL, weakrefs: list | None = None) -> None:
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
        Exception: whatever the pickler raises for ``obj`` (``PicklingError``, ``TypeError``,
            ``AttributeError``, ``RuntimeError`` ...).
    """
    payload = Payload()
    weakrefs: list = []
    with _spawning():
        pickler = WalkerPickler(payload, protocol, weakrefs)
        pickler.dump(obj)
        del pickler  # its memo keeps every object it pickled alive
    _, file_descriptor = _storage_tracking()
    if file_descriptor and any(ref.expired() for ref in weakrefs):
        raise TemporaryStorageError(
            "pickling creates a tensor that is freed before the worker starts; under the "
            "'file_descriptor' sharing strategy the worker fails with \"unable to resize file "
            "<filename not specified> to the right size\"")
    return payload


def probe(obj: Any, protocol: int = PROTOCOL) -> BaseException | None:
    """``None`` if ``obj`` pickles with ForkingPickler, else the exception it raised."""
    try:
        measure_payload(obj, protocol)
    except Exception as exc:  # noqa: BLE001 - user reducers may raise anything; it is the finding
        return exc
    return None


def _type_name(obj: Any) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}".removeprefix("builtins.")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _label(obj: Any, exc: BaseException) -> str:
    """What the object at fault is, by mechanism (see :class:`Problem`)."""
    msg = str(exc)
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


def _attributes(obj: Any) -> dict[int, str]:
    """``id(value) -> attribute name`` for the attributes an object stores.

    Reads the instance ``__dict__``, ``__slots__`` and C-level member/getset descriptors
    (never properties, which would run user code), plus ``__self__``/``__func__``/``__wrapped__``.
    """
    names: dict[int, str] = {}

    def add(name: str, value: Any) -> None:
        names.setdefault(id(value), name)

    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            if isinstance(k, str):
                add(k, v)
    for klass in type(obj).__mro__:
        for name, attr in vars(klass).items():
            if name in ("__dict__", "__weakref__") or (name.startswith("__") and name.endswith("__")):
                continue
            if isinstance(attr, (types.MemberDescriptorType, types.GetSetDescriptorType)):
                try:
                    add(name, attr.__get__(obj, type(obj)))
                except Exception:  # noqa: BLE001, S112 - an unset slot or a failing getter names nothing
                    continue
    for name in ("__self__", "__func__", "__wrapped__"):
        try:
            add(name, getattr(obj, name))
        except Exception:  # noqa: BLE001, S112
            continue
    return names


def _has_custom_getstate(obj: Any) -> bool:
    t = type(obj)
    custom = getattr(t, "__getstate__", None)
    return custom is not None and custom is not getattr(object, "__getstate__", None) and (
        t.__reduce_ex__ is object.__reduce_ex__ and t.__reduce__ is object.__reduce__
    )


class _Walker:
    """Finds every failing object below some roots; see :func:`find_problems`."""

    def __init__(self, protocol: int) -> None:
        self.protocol = protocol
        self.problems: list[Problem] = []
        self.reported: set[int] = set()
        self.keep: list[Any] = []  # children built by reducers stay alive so their ids stay unique
        self.table = _dispatch_table(Payload())

    # -- probing -----------------------------------------------------------------------------

    def failing(self, items: list[tuple[str, Any]]) -> list[tuple[str, Any, BaseException]]:
        """The items that fail on their own, found by probing groups and halving them."""
        items = [(p, o) for p, o in items if type(o) not in _ATOMIC]
        if not items:
            return []
        if len(items) > 8 and probe(tuple(o for _, o in items), self.protocol) is None:
            return []
        if len(items) > 8:
            mid = len(items) // 2
            return self.failing(items[:mid]) + self.failing(items[mid:])
        out = []
        for path, obj in items:
            exc = probe(obj, self.protocol)
            if exc is not None:
                out.append((path, obj, exc))
        return out

    # -- decomposition -----------------------------------------------------------------------

    def children(self, obj: Any, path: str) -> list[tuple[str, Any]] | None:
        """What pickling ``obj`` pickles next, each with its path; ``None`` for a leaf.

        Mirrors ``pickle.Pickler.save``: built-in containers are walked directly; functions and
        classes are saved by name (leaves); everything else goes through the dispatch table or
        ``__reduce_ex__(protocol)``. Raises what the reducer raises.
        """
        t = type(obj)
        if t is dict:
            out = []
            for i, (k, v) in enumerate(obj.items()):
                if _is_literal_key(k):
                    out.append((f"{path}[{k!r}]", v))
                else:
                    out.append((f"list({path}.keys())[{i}]", k))
                    out.append((f"list({path}.values())[{i}]", v))
            return out
        if t is list or t is tuple:
            return [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
        if t is set or t is frozenset:
            return [(f"list({path})[{i}]", v) for i, v in enumerate(obj)]
        if t is types.FunctionType or isinstance(obj, type):
            return None
        reducer = self.table.get(t)
        rv = reducer(obj) if reducer is not None else obj.__reduce_ex__(self.protocol)
        if isinstance(rv, str) or not isinstance(rv, tuple):
            return None
        self.keep.append(rv)
        return self._reduce_children(obj, path, rv)

    def _reduce_children(self, obj: Any, path: str, rv: tuple) -> list[tuple[str, Any]]:
        names = _attributes(obj)
        reduce_path = f"{path}.__reduce_ex__({self.protocol})"
        out: list[tuple[str, Any]] = []

        def named(value: Any, fallback: str) -> str:
            if value is type(obj):
                return f"{path}.__class__"
            name = names.get(id(value))
            return _attr(path, name) if name is not None else fallback

        func, args = rv[0], rv[1] if len(rv) > 1 else ()
        if func is copyreg.__newobj__ or func is getattr(copyreg, "__newobj_ex__", None):
            out.append((f"{path}.__class__", args[0]))
            rest = args[1:]
            if func is copyreg.__newobj__:
                out += [(named(a, f"{path}.__getnewargs__()[{i}]"), a) for i, a in enumerate(rest)]
            else:
                out += [(named(a, f"{reduce_path}[1][{i + 1}]"), a) for i, a in enumerate(rest)]
        else:
            out.append((named(func, f"{reduce_path}[0]"), func))
            out += [(named(a, f"{reduce_path}[1][{i}]"), a) for i, a in enumerate(args or ())]
        state = rv[2] if len(rv) > 2 else None
        if state is not None:
            state_path = f"{path}.__getstate__()" if _has_custom_getstate(obj) else f"{reduce_path}[2]"
            out += self._state_children(obj, path, state, state_path, named)
        if len(rv) > 3 and rv[3] is not None:
            items = list(rv[3])
            self.keep.append(items)
            out += [(f"{path}[{i}]", v) for i, v in enumerate(items)]
        if len(rv) > 4 and rv[4] is not None:
            pairs = list(rv[4])
            self.keep.append(pairs)
            for i, (k, v) in enumerate(pairs):
                if _is_literal_key(k):
                    out.append((f"{path}[{k!r}]", v))
                else:
                    out.append((f"list({path}.keys())[{i}]", k))
                    out.append((f"list({path}.values())[{i}]", v))
        seen: set[int] = set()
        unique = []
        for p, child in out:
            if id(child) not in seen:
                seen.add(id(child))
                unique.append((p, child))
        return unique

    def _state_children(self, obj: Any, path: str, state: Any, state_path: str,
                        named) -> list[tuple[str, Any]]:
        def from_dict(d: dict, base: str) -> list[tuple[str, Any]]:
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

    # -- the walk ----------------------------------------------------------------------------

    def locate(self, obj: Any, path: str, exc: BaseException, root: str,
               stack: frozenset[int], within: str | None) -> None:
        """Report the deepest failing objects at or below ``obj``, which fails with ``exc``."""
        if id(obj) in self.reported:
            return
        children = None
        if len(stack) < MAX_DEPTH:
            try:
                with _spawning():  # reducers that assert spawning run as in a real start
                    children = self.children(obj, path)
            except Exception:  # noqa: BLE001 - the reducer itself fails: obj is at fault
                children = None
        bad = []
        if children:
            inner = _notable(obj) or within
            here = stack | {id(obj)}
            # A child that is also an ancestor (a cycle, such as a bound method of the dataset
            # stored on the dataset) fails because of that ancestor's own problems.
            bad = self.failing(children)
            if isinstance(exc, RecursionError) and any(type(c) is type(obj) for _, c, _ in bad):
                # Too deep to pickle: report where the self-similar nesting (a list of lists, a
                # linked node chain) starts, not thousands of levels further down.
                bad = []
            for cpath, child, cexc in bad:
                if id(child) not in here:
                    self.locate(child, cpath, cexc, root, here, inner)
        if not bad:
            self.report(obj, path, exc, root, within)

    def report(self, obj: Any, path: str, exc: BaseException, root: str, within: str | None) -> None:
        self.reported.add(id(obj))
        self.keep.append(obj)
        self.problems.append(Problem(
            path=path,
            type=_type_name(obj),
            message=_first_line(exc),
            exc_type=type(exc).__name__ if isinstance(exc, TemporaryStorageError) else _type_name(exc),
            label=_label(obj, exc),
            within=within,
            root=root,
            qualname=getattr(obj, "__qualname__", "") if isinstance(obj, (type, types.FunctionType)) else "",
        ))


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


def find_problems(roots: Mapping[str, Any], protocol: int = PROTOCOL) -> list[Problem]:
    """Every object below ``roots`` that ForkingPickler cannot pickle, deepest first-found order.

    Args:
        roots: ``{root name: object}``, e.g. ``{"dataset": ds, "collate_fn": fn}``; each root
            name starts the paths of the problems found below it.
        protocol: pickle protocol used for probing (default 5).

    Returns:
        One :class:`Problem` per object at fault. An object reached from several paths is
        reported once, at the first path found; objects that pickle are never reported.
    """
    walker = _Walker(protocol)
    for name, obj in roots.items():
        exc = probe(obj, protocol)
        if exc is not None:
            walker.locate(obj, name, exc, name, frozenset(), None)
    return walker.problems
