"""Loading a ``harness diagnose`` target: ``package.module:attr`` or ``path/to/file.py:attr``.

The target names a ``DataLoader``, a ``Dataset`` (or any sized, indexable object a
``DataLoader`` accepts), or a zero-argument callable returning one. Resolving it runs the
user's code in this process: importing the module, getting the attribute, calling the
factory. Whatever that code raises, ``SystemExit``, ``KeyboardInterrupt`` and
``GeneratorExit`` included, becomes a one-line :class:`TargetError`; only a real Ctrl-C
interrupts (:func:`harness.inspect.walker.user_code_guard`). ``harness diagnose`` calls
:func:`load_target` in a child process, with a timeout.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.errors import TargetError
from harness.inspect.walker import describe_exception, reraise_if_interrupted, user_code_guard

__all__ = ["Progress", "TargetError", "load_target", "quiet"]

#: Called with a short description of each step before it starts (``"calling make_loader()"``).
Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """A :data:`Progress` that says nothing."""


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(f"{name}: module not found") from None
        raise TargetError(f"{name}: import failed: {describe_exception(exc)}") from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything on import
        reraise_if_interrupted(exc)
        raise TargetError(f"{name}: import failed: {describe_exception(exc)}") from None


def _import_file(path: Path) -> ModuleType:
    """Import ``path`` under its stem, registered in ``sys.modules`` so that its functions and
    classes pickle by reference as they would when a worker imports the module."""
    name = path.stem
    resolved = path.resolve()
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file and Path(existing_file).resolve() == resolved:
            return existing
        raise TargetError(
            f"{path}: module name {name!r} is already taken by "
            f"{existing_file or 'a built-in module'}; rename the file or use package.module:attr"
        )
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything on import
        sys.modules.pop(name, None)
        reraise_if_interrupted(exc)
        raise TargetError(f"{path}: import failed: {describe_exception(exc)}") from None
    return module


def _kind_of(obj: Any) -> str | None:
    """``loader``, ``dataset`` or ``None``."""
    from torch.utils.data import DataLoader, Dataset

    if isinstance(obj, DataLoader):
        return "loader"
    if isinstance(obj, Dataset):
        return "dataset"
    if (
        not callable(obj)
        and hasattr(obj, "__getitem__")
        and hasattr(obj, "__len__")
        and not isinstance(obj, (str, bytes, bytearray, Mapping))
    ):
        return "dataset"  # DataLoader accepts any sized indexable object as a map-style dataset
    return None


def _checked_kind(obj: Any, target: str) -> str | None:
    """:func:`_kind_of`, with whatever a hostile ``__getattr__`` or ``__class__`` raises as a
    :class:`TargetError`."""
    try:
        return _kind_of(obj)
    except BaseException as exc:  # noqa: BLE001 - user attribute hooks may raise anything
        reraise_if_interrupted(exc)
        raise TargetError(
            f"{target}: inspecting the object raised {describe_exception(exc)}"
        ) from None


def _split(target: str) -> tuple[str, str, bool]:
    """``(module part, attribute, whether the module part is a file)``.

    Raises:
        TargetError: the target is not ``module:attr`` or ``file.py:attr``.
    """
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise TargetError(f"{target!r}: expected package.module:attr or path/to/file.py:attr")
    is_file = module_part.endswith(".py") or "/" in module_part or os.sep in module_part
    return module_part, attr, is_file


@contextmanager
def _on_sys_path(folder: str) -> Iterator[None]:
    """``folder`` first on ``sys.path`` for the block, unless it is there already."""
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _module(module_part: str, is_file: bool) -> ModuleType:
    if not is_file:
        return _import_module(module_part)
    path = Path(module_part)
    if not path.is_file():
        raise TargetError(f"{module_part}: file not found")
    return _import_file(path)


def _attribute(obj: Any, module_part: str, attr: str, target: str) -> Any:
    """``obj.attr`` for a dotted ``attr`` (``Factory.build``)."""
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"{module_part}: has no attribute {attr!r}") from None
        except BaseException as exc:  # noqa: BLE001 - a module __getattr__ may raise anything
            reraise_if_interrupted(exc)
            raise TargetError(
                f"{target}: getting {attr!r} raised {describe_exception(exc)}"
            ) from None
    return obj


def _call(factory: Any, attr: str, target: str) -> Any:
    try:
        return factory()
    except BaseException as exc:  # noqa: BLE001 - the user's factory may raise anything
        reraise_if_interrupted(exc)
        raise TargetError(f"{target}: calling {attr}() raised {describe_exception(exc)}") from None


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
    step = progress or quiet
    module_part, attr, is_file = _split(target)
    folder = str(Path(module_part).resolve().parent) if is_file else os.getcwd()
    with _on_sys_path(folder), user_code_guard():
        step(f"importing {module_part}")
        obj = _attribute(_module(module_part, is_file), module_part, attr, target)
        if _checked_kind(obj, target) is None and callable(obj):
            step(f"calling {attr}()")
            obj = _call(obj, attr, target)
        kind = _checked_kind(obj, target)
    if kind is None:
        t = type(obj)
        raise TargetError(
            f"{target}: got {t.__module__}.{t.__qualname__}, not a DataLoader, a Dataset "
            "or a zero-argument callable returning one"
        )
    return obj
