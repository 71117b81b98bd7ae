"""Seeing every ``Dataset`` and ``DataLoader`` a test session constructs, as it was constructed.

:class:`ConstructionWatch` wraps ``__init__`` of ``torch.utils.data.DataLoader`` and of every
subclass of it and of ``torch.utils.data.Dataset`` (map-style and iterable), those defined
already and those defined later (through ``__init_subclass__``). When the outermost
``__init__`` of an object returns normally, the callback gets the object and its
construction site: the first frame up the stack outside the harness, outside torch and
outside that object's own ``__init__`` chain. So an object is seen once, after every
subclass's ``__init__`` has run and before the test can use it.

An ``__init__`` that a class gets after it was created (``@dataclasses.dataclass``, attrs,
an assignment), or a subclass whose base's ``__init_subclass__`` does not call ``super()``,
is wrapped when the first instance is created: ``DataLoader`` and ``Dataset`` get a
``__new__`` that wraps every unwrapped ``__init__`` of the class's MRO, then creates the
object as the next ``__new__`` in the MRO would (``object.__new__``, with its argument
rules, ``Objects/typeobject.c``: ``object_new``).

A ``Dataset`` subclass with no ``__init__`` of its own anywhere gets one on ``Dataset``
itself, which accepts arguments exactly where ``object.__init__`` would (``object_init``:
``X() takes no arguments``; called with arguments from a subclass's ``__init__``:
``object.__init__() takes exactly one argument (the instance to initialize)``).

Everything is undone by :meth:`ConstructionWatch.uninstall`. The wrappers keep the wrapped
function as ``__wrapped__`` (:func:`functools.wraps`; :func:`inspect.signature` follows it)
and as ``__harness_guard__`` (:mod:`harness.inspect.sites` places a class by the function it
wraps). While :meth:`ConstructionWatch.quiet` is active on a thread (the guard's own
``DataLoader(dataset)``), nothing is reported on that thread.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["ConstructionWatch", "Site"]

#: ``(absolute file, line)`` of the frame that constructed an object.
Site = tuple[str, int]

_HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def _torch_dir() -> str:
    import torch

    return os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")


class ConstructionWatch:
    """Wraps the constructors; calls ``callback(obj, site)`` once per constructed object.

    Args:
        callback: called with the object and its :data:`Site` after its outermost
            ``__init__`` returned normally; what it raises is the caller's to contain (the
            guard catches everything).
    """

    def __init__(self, callback: Callable[[Any, Site | None], None]) -> None:
        self.callback = callback
        self._local = threading.local()
        self._patched: list[tuple[type, Any, Any]] = []  # (class, attribute, previous value or _ABSENT)
        self._torch_dir = ""
        self._bases: tuple[type, ...] = ()

    # -- installing ------------------------------------------------------------------------

    def install(self) -> None:
        """Wrap ``DataLoader``, ``Dataset`` and every subclass defined so far; hook later ones."""
        from torch.utils.data import DataLoader, Dataset

        self._torch_dir = _torch_dir()
        self._bases = (DataLoader, Dataset)
        self._wrap(DataLoader)
        self._give_dataset_an_init(Dataset)
        for base in self._bases:
            for cls in _all_subclasses(base):
                self._wrap(cls)
            self._hook_subclasses(base)
            self._give_new(base)

    def uninstall(self) -> None:
        """Restore every attribute that :meth:`install` and later subclass hooks changed (the
        stand-in ``__new__`` stays, doing nothing more than ``object.__new__``: CPython cannot
        give a class its ``tp_new`` slot back once ``__new__`` was set, :func:`_stand_in_new`)."""
        for cls, name, previous in reversed(self._patched):
            if name is _WATCHING:
                if _WATCHING.get(cls) is self:
                    del _WATCHING[cls]
                continue
            try:
                if previous is _ABSENT:
                    delattr(cls, name)
                else:
                    setattr(cls, name, previous)
            except (AttributeError, TypeError):  # pragma: no cover - a class made read-only since
                pass
        self._patched.clear()

    def _set(self, cls: type, name: str, value: Any) -> None:
        self._patched.append((cls, name, cls.__dict__.get(name, _ABSENT)))
        setattr(cls, name, value)

    def _wrap(self, cls: type) -> None:
        """Wrap ``cls.__init__`` where ``cls`` defines it and it is not wrapped already."""
        init = cls.__dict__.get("__init__")
        if not isinstance(init, types.FunctionType) or hasattr(init, "__harness_guard__"):
            return  # none, wrapped already, or not a plain function (a callable object, a
            # staticmethod: Python calls those without the instance)
        try:
            self._set(cls, "__init__", self._wrapper(init))
        except (AttributeError, TypeError):  # a class that refuses new attributes
            pass

    def _wrapper(self, init: Any) -> Any:
        watch = self

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - it is an __init__
            watch._enter(self)
            done = False
            try:
                init(self, *args, **kwargs)
                done = True
            finally:
                watch._leave(self, done)

        __init__.__harness_guard__ = init  # type: ignore[attr-defined]
        return __init__

    def _give_dataset_an_init(self, dataset: type) -> None:
        """``Dataset.__init__``: seen for subclasses that define none; as ``object.__init__``."""
        watch = self

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - it is an __init__
            cls = type(self)
            following = _following(cls, dataset, "__init__")
            watch._enter(self)
            done = False
            try:
                if following is not object.__init__:  # a base after Dataset in the MRO (dict, ...)
                    following(self, *args, **kwargs)
                elif args or kwargs:  # object_init's rules
                    if cls.__init__ is not __init__:
                        raise TypeError("object.__init__() takes exactly one argument (the instance to initialize)")
                    if _is_object_new(cls.__new__):
                        raise TypeError(f"{cls.__name__}() takes no arguments")
                done = True
            finally:
                watch._leave(self, done)

        __init__.__qualname__ = f"{dataset.__qualname__}.__init__"
        __init__.__module__ = dataset.__module__
        __init__.__harness_guard__ = object.__init__  # type: ignore[attr-defined]
        if "__init__" not in dataset.__dict__:
            self._set(dataset, "__init__", __init__)
            _OBJECT_LIKE_INITS.add(__init__)

    def _give_new(self, base: type) -> None:
        """Make this watch the one :func:`_stand_in_new` wraps for (installing it once)."""
        if "__new__" not in base.__dict__:
            setattr(base, "__new__", staticmethod(_stand_in_new(base)))  # noqa: B010 - a class attribute
        if getattr(base.__dict__["__new__"], "__func__", None) in _OBJECT_LIKE_NEWS:
            _WATCHING[base] = self
            self._patched.append((base, _WATCHING, _ABSENT))

    def _wrap_mro(self, cls: type) -> None:
        for klass in cls.__mro__:
            if klass in self._bases or klass is object:
                return
            if "__init__" in klass.__dict__ and issubclass(klass, self._bases):
                self._wrap(klass)

    def _hook_subclasses(self, base: type) -> None:
        watch = self
        previous = base.__dict__.get("__init_subclass__")
        base_class: type = base

        def __init_subclass__(cls: Any, /, **kwargs: Any) -> None:  # noqa: N807 - the hook's name
            if previous is not None:
                previous.__get__(None, cls)(**kwargs)
            else:
                super(base_class, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]
            watch._wrap(cls)

        self._set(base, "__init_subclass__", classmethod(__init_subclass__))

    # -- constructing ----------------------------------------------------------------------

    def _depths(self) -> dict[int, int]:
        depths: dict[int, int] | None = getattr(self._local, "depths", None)
        if depths is None:
            depths = self._local.depths = {}
        return depths

    def _enter(self, obj: Any) -> None:
        depths = self._depths()
        depths[id(obj)] = depths.get(id(obj), 0) + 1

    def _leave(self, obj: Any, done: bool) -> None:
        depths = self._depths()
        left = depths.get(id(obj), 1) - 1
        if left > 0:
            depths[id(obj)] = left
            return
        depths.pop(id(obj), None)
        if done and not getattr(self._local, "quiet", 0):
            self.callback(obj, self._site(obj))

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Nothing constructed on this thread inside the block is reported."""
        self._local.quiet = getattr(self._local, "quiet", 0) + 1
        try:
            yield
        finally:
            self._local.quiet -= 1

    def _site(self, obj: Any) -> Site | None:
        """The first frame outside the harness, torch and ``obj``'s own ``__init__`` chain."""
        frame: Any = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            absolute = os.path.abspath(filename) if not filename.startswith("<") else filename
            if absolute.startswith((_HARNESS_DIR, self._torch_dir)):
                frame = frame.f_back
                continue
            if code.co_name == "__init__" and frame.f_locals.get("self") is obj:
                frame = frame.f_back
                continue
            return absolute, frame.f_lineno
        return None


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()
_OBJECT_NEW: Any = object.__new__
#: The ``__init__`` and ``__new__`` functions installed here that stand in for ``object``'s.
_OBJECT_LIKE_INITS: set[Any] = set()
_OBJECT_LIKE_NEWS: set[Any] = {_OBJECT_NEW}


def _is_object_new(new: Any) -> bool:
    return new in _OBJECT_LIKE_NEWS


#: The watch each base's stand-in ``__new__`` wraps for, while one is installed.
_WATCHING: dict[type, ConstructionWatch] = {}


def _stand_in_new(base: type) -> Any:
    """``base.__new__``, installed once per process and never removed.

    While a watch is installed, it wraps what the class's MRO left unwrapped; then it creates
    the object as the next ``__new__`` in the MRO would, with ``object_new``'s argument rules
    where that is ``object.__new__``. It stays after :meth:`ConstructionWatch.uninstall`:
    deleting a ``__new__`` set on a class leaves its ``tp_new`` slot calling ``__new__`` by
    name (``update_one_slot`` in ``Objects/typeobject.c`` keeps the current slot for
    ``object.__new__``'s wrapper), and ``object.__new__`` then refuses every argument.
    """

    base_class: Any = base

    def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - it is a __new__
        watch = _WATCHING.get(base)
        if watch is not None:
            watch._wrap_mro(cls)
        following = super(base_class, cls).__new__
        if following is not _OBJECT_NEW:
            return following(cls, *args, **kwargs)
        if args or kwargs:  # object_new's rules, this __new__ standing in for object's
            if not _is_object_new(cls.__new__):
                raise TypeError("object.__new__() takes exactly one argument (the type to instantiate)")
            if cls.__init__ in _OBJECT_LIKE_INITS or cls.__init__ is object.__init__:
                raise TypeError(f"{cls.__name__}() takes no arguments")
        return _OBJECT_NEW(cls)

    __new__.__qualname__ = f"{base.__qualname__}.__new__"
    __new__.__module__ = base.__module__
    _OBJECT_LIKE_NEWS.add(__new__)
    return __new__


def _following(cls: type, base: type, name: str) -> Any:
    """``name`` as the first class after ``base`` in ``cls``'s MRO defines it."""
    mro = cls.__mro__
    for klass in mro[mro.index(base) + 1:]:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return getattr(object, name)


def _all_subclasses(base: type) -> list[type]:
    """Every subclass of ``base`` defined so far, each once, parents first."""
    seen: dict[int, type] = {}
    stack = [base]
    while stack:
        cls = stack.pop()
        try:
            subs: list[type] = type.__subclasses__(cls)
        except TypeError:  # pragma: no cover - a metaclass without __subclasses__
            continue
        for sub in subs:
            if id(sub) not in seen:
                seen[id(sub)] = sub
                stack.append(sub)
    return list(seen.values())
