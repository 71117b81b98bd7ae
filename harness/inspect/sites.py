"""Where a diagnosed problem's culprit is defined: the ``file`` and ``line`` of a finding.

``harness diagnose`` reports each problem at a path (``dataset.transform``); a CI annotation
and an editor need a source location too. The rules:

* a function or lambda: its definition (``co_filename``, ``co_firstlineno``: the ``def``
  line, or the first decorator's; the line a lambda starts on);
* a class: its ``class`` statement (found from the functions defined in its body, whose code
  objects name the file; then Python 3.13's ``__firstlineno__``; then :mod:`inspect`, only
  where the class's qualified name leads to the class itself, so a class made at run time
  under the name of another one is never placed at the other's line);
* ``functools.partial``: its function; a bound method, ``staticmethod`` or
  ``classmethod``: its function;
* an instance of a user-defined class: that class;
* an object with no definition site of its own (an open file, a lock, a generator, an
  instance of a standard-library or third-party class) and anything whose site cannot be
  found: the nearest enclosing object along the problem's path that has a user-defined
  site (:func:`site_along`), so the location points at the user's own code. Failing that,
  no location (``None``).

User-defined means defined in a real file outside the standard library and the
site-packages folders (:func:`is_library_file`). A file is shown relative to the current
directory when it lies under it (``pkg/data.py``), else as an absolute path.

Nothing here raises but a real Ctrl-C: the objects come from the user's code, whose
metaclass or module ``__getattr__`` may raise anything; a site that cannot be read is
``None``. Only C-level attributes of exact types are read from the objects themselves.
"""

from __future__ import annotations

import dis
import functools
import itertools
import linecache
import os
import re
import site
import sys
import sysconfig
import types
from collections.abc import Iterable
from typing import Any

__all__ = [
    "definition_site",
    "display_path",
    "first_user_site",
    "is_library_file",
    "project_file",
    "project_root",
    "locate",
    "set_project_root",
    "stored_site",
    "site_along",
    "user_site",
]

Site = tuple[str, int]
#: ``id(class)`` → ``(class, its site)``: the class stays alive, so its id stays its own.
SiteCache = dict[int, tuple[type, Site | None]]

_LIBRARY_DIRS: tuple[str, ...] | None = None


def _library_dirs() -> tuple[str, ...]:
    """Real paths of the standard library and every site-packages folder, with a trailing separator."""
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        dirs = set()
        paths = sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                dirs.add(paths[key])
        try:
            dirs.update(site.getsitepackages())
            dirs.add(site.getusersitepackages())
        except AttributeError:  # pragma: no cover - a virtualenv's old site.py
            pass
        dirs.update(p for p in sys.path if p.rstrip("/\\").endswith(("site-packages", "dist-packages")))
        _LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.realpath(d), "") for d in dirs if d}))
    return _LIBRARY_DIRS


def _contain(exc: BaseException) -> None:
    """Let a real Ctrl-C through (:func:`harness.inspect.walker.reraise_if_interrupted`); swallow the rest."""
    from harness.inspect.walker import reraise_if_interrupted

    reraise_if_interrupted(exc)


def _is_real_file(filename: Any) -> bool:
    """A file name a code object can carry that names a file (not ``<string>``, ``<stdin>``)."""
    return isinstance(filename, str) and bool(filename) and not (filename.startswith("<") and filename.endswith(">"))


#: The project root that paths are shown relative to, and where installed copies of the
#: project's own modules are looked for (:func:`set_project_root`); ``None``: the current directory.
_PROJECT_ROOT: str | None = None
#: Folders under a project root that are not its source (virtual environments, builds, caches).
_NOT_SOURCE = frozenset({".git", ".hg", ".nox", ".tox", ".venv", "venv", "env", "build", "dist",
                         "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".eggs"})


def set_project_root(root: str | None) -> None:
    """Show paths relative to ``root`` (``None``: the current directory, the default), and look
    for the project's own files there (:func:`project_file`)."""
    global _PROJECT_ROOT
    _PROJECT_ROOT = os.path.abspath(root) if root else None
    project_file.cache_clear()


def project_root() -> str:
    """The folder paths are shown relative to (:func:`set_project_root`; else the current one)."""
    return _PROJECT_ROOT or os.getcwd()


_root = project_root


@functools.lru_cache(maxsize=4096)
def project_file(filename: str) -> str | None:
    """The project's own source file that ``filename``, a module installed into a
    site-packages folder (``pip install .``, not editable), was copied from; else ``None``.

    ``site-packages/mypkg/data.py`` is looked for as ``ROOT/mypkg/data.py`` and
    ``ROOT/DIR/mypkg/data.py`` for each folder ``DIR`` of the project root (``src/`` and the
    like; not virtual environments or builds), ROOT being the project root
    (:func:`set_project_root`, default the current directory). A file with the same bytes is
    preferred; else the first one found (the install is older than the checkout).
    """
    try:
        real = os.path.realpath(filename)
        rel = next((real[len(d):] for d in _library_dirs()
                    if real.startswith(d) and d.rstrip("/\\").endswith(("site-packages", "dist-packages"))), None)
        if not rel:
            return None
        root = _root()
        candidates = [os.path.join(root, rel)]
        with os.scandir(root) as entries:
            candidates += [os.path.join(e.path, rel) for e in sorted(entries, key=lambda e: e.name)
                           if e.is_dir(follow_symlinks=False) and e.name not in _NOT_SOURCE
                           and not e.name.startswith(".") and not e.name.endswith(".egg-info")]
        found = [c for c in candidates if os.path.isfile(c) and os.path.realpath(c) != real]
        if not found:
            return None
        with open(real, "rb") as fh:
            installed = fh.read()
        for candidate in found:
            with open(candidate, "rb") as fh:
                if fh.read() == installed:
                    return candidate
        return found[0]
    except (OSError, ValueError):
        return None


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` lies in the standard library or a site-packages folder, and is
    not an installed copy of the project's own source (:func:`project_file`)."""
    real = os.path.join(os.path.realpath(filename), "")
    return real.startswith(_library_dirs()) and project_file(filename) is None


def display_path(filename: str) -> str:
    """``filename`` relative to the project root when under it (``/`` separators), else
    absolute; an installed copy of the project's own source is shown as that source
    (:func:`project_file`). The project root is the current directory unless
    :func:`set_project_root` set one."""
    try:
        filename = project_file(filename) or filename
        absolute = os.path.abspath(filename)
        cwd = _root()
        for path, base in ((absolute, cwd), (os.path.realpath(absolute), os.path.realpath(cwd))):
            if os.path.commonpath([path, base]) == base:
                return os.path.relpath(path, base).replace(os.sep, "/")
        return absolute
    except (OSError, ValueError):  # a vanished cwd; another drive on Windows
        return filename


def _code_site(code: Any) -> Site | None:
    if not isinstance(code, types.CodeType) or not _is_real_file(code.co_filename):
        return None
    return code.co_filename, code.co_firstlineno


def _function_of(obj: Any, depth: int = 0) -> types.FunctionType | None:
    """The Python function behind ``obj`` (a function, bound method, partial, static or class
    method), or ``None``. Reads only C-level attributes of exact types, never user hooks."""
    t = type(obj)
    if depth > 20:  # a partial of a partial of ...
        return None
    if t is types.FunctionType:
        function: types.FunctionType = obj
        return function
    if t is types.MethodType or t is staticmethod or t is classmethod:
        return _function_of(obj.__func__, depth + 1)
    if issubclass(t, functools.partial):
        return _function_of(functools.partial.func.__get__(obj), depth + 1)
    return None


def _module_file(cls: type) -> str | None:
    module = sys.modules.get(type.__dict__["__module__"].__get__(cls))
    filename = getattr(module, "__file__", None) if module is not None else None
    return filename if _is_real_file(filename) else None


def _body_functions(cls: type) -> Iterable[types.FunctionType]:
    qualname = type.__dict__["__qualname__"].__get__(cls)
    for value in type.__dict__["__dict__"].__get__(cls).values():
        candidates = [value.fget, value.fset, value.fdel] if type(value) is property else [value]
        for candidate in candidates:
            func = _function_of(candidate)
            inner = func.__dict__.get("__harness_guard__") if func is not None else None
            if inner is not None:  # the pytest guard's wrapper of an __init__ (harness.guard.watch)
                func = _function_of(inner)
            if func is not None and func.__qualname__.startswith(qualname + "."):
                yield func


def _class_line(filename: str, name: str, before: int) -> int | None:
    """The ``class name`` line above line ``before`` of ``filename``, indented less than it."""
    lines = linecache.getlines(filename)
    if not 0 < before <= len(lines):
        return None
    indent = len(lines[before - 1]) - len(lines[before - 1].lstrip())
    pattern = re.compile(rf"^(\s*)class\s+{re.escape(name)}\b")
    for number in range(before - 1, 0, -1):
        m = pattern.match(lines[number - 1])
        if m and len(m.group(1)) < indent:
            return number
    return None


def _resolves_to(cls: type, qualname: str) -> bool:
    """Whether the class's module and qualified name lead to ``cls`` itself."""
    if "<locals>" in qualname:
        return True  # inspect finds local classes by their enclosing functions
    obj: Any = sys.modules.get(type.__dict__["__module__"].__get__(cls))
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def _class_site(cls: type) -> Site | None:
    module_file = _module_file(cls)
    sites = []
    for func in _body_functions(cls):
        code_site = _code_site(func.__code__)
        if code_site and (module_file is None or os.path.realpath(code_site[0]) == os.path.realpath(module_file)):
            sites.append(code_site)
    name = type.__dict__["__name__"].__get__(cls)
    if sites:
        filename, first = min(sites, key=lambda s: s[1])
        return filename, _class_line(filename, name, first) or first
    if module_file is None:
        return None
    first_line = type.__dict__["__dict__"].__get__(cls).get("__firstlineno__")  # Python 3.13+
    if type(first_line) is int:
        return module_file, first_line
    if not _resolves_to(cls, type.__dict__["__qualname__"].__get__(cls)):
        return None  # inspect would find the class of that name, a different one
    import inspect

    _, line = inspect.getsourcelines(cls)
    return module_file, line


def definition_site(obj: Any, cache: SiteCache | None = None) -> Site | None:
    """``(file, line)`` where ``obj`` itself is defined, or ``None``.

    A function, lambda, bound method, ``partial`` or class has a site wherever it is defined,
    a library included; any other object has its class's site only when that class is
    user-defined (:func:`user_site`). ``file`` is as the code object names it (see
    :func:`display_path`). ``cache`` maps ``id(class)`` to its site (the caller keeps the
    classes alive). Never raises.
    """
    try:
        func = _function_of(obj)
        if func is not None:
            return _code_site(func.__code__)
        if issubclass(type(obj), type):
            return _cached_class_site(obj, cache)
        site_ = _cached_class_site(type(obj), cache)
        return site_ if site_ is not None and not is_library_file(site_[0]) else None
    except BaseException as exc:  # noqa: BLE001 - a hostile metaclass or a source that cannot be read
        _contain(exc)
        return None


def _cached_class_site(cls: type, cache: SiteCache | None) -> Site | None:
    if cache is not None and id(cls) in cache:
        cached: Site | None = cache[id(cls)][1]
        return cached
    try:
        found = _class_site(cls)
    except BaseException as exc:  # noqa: BLE001 - inspect raises OSError, TypeError; user code anything
        _contain(exc)
        found = None
    if cache is not None:
        cache[id(cls)] = (cls, found)  # the class stays alive, so its id stays its own
    return found


def user_site(obj: Any, cache: SiteCache | None = None) -> Site | None:
    """:func:`definition_site` when it lies in user code (not a library file), else ``None``."""
    found = definition_site(obj, cache)
    try:
        return found if found is not None and not is_library_file(found[0]) else None
    except (OSError, ValueError):  # a file name the OS rejects
        return None


def site_along(culprit: Any, enclosing: Iterable[Any], cache: SiteCache | None = None,
               stored_as: str | None = None) -> tuple[str | None, int | None]:
    """``(file, line)`` of :func:`locate`."""
    file, line, _ = locate(culprit, enclosing, cache, stored_as)
    return file, line


def locate(culprit: Any, enclosing: Iterable[Any], cache: SiteCache | None = None,
           stored_as: str | None = None) -> tuple[str | None, int | None, str]:
    """``(file, line, how)`` for a problem, ``file`` as :func:`display_path` shows it:

    * ``defined``: the culprit's own site (a function, a class, an instance of a user class);
    * ``stored``: for a culprit its innermost holder keeps as attribute ``stored_as``, the
      line of the holder's class that stores it (:func:`stored_site`: ``self._f = open(path)``);
    * ``inside``: the nearest enclosing object's user-defined site;
    * ``(None, None, "")`` when none is known.

    Args:
        culprit: the object at fault.
        enclosing: the objects that hold it, innermost first, out to the path's root.
        cache: see :func:`definition_site`.
        stored_as: the attribute name under which the innermost holder keeps the culprit.
    """
    found = definition_site(culprit, cache)
    if found is not None:
        return display_path(found[0]), found[1], "defined"
    holders = iter(enclosing)
    if stored_as:
        holder = next(holders, None)
        stored = stored_site(holder, stored_as) if holder is not None else None
        if stored is not None:
            return display_path(stored[0]), stored[1], "stored"
        holders = itertools.chain([holder], holders)
    file, line = first_user_site(holders, cache)
    return file, line, "inside" if file is not None else ""


def stored_site(holder: Any, attr: str) -> Site | None:
    """Where ``holder``'s user-defined class (or a user-defined base) stores ``attr`` on its
    instances: the first ``self.<attr> = ...`` of its ``__init__``, else of its other methods,
    found in their bytecode (``STORE_ATTR`` on the first argument), so no source is needed.
    ``None`` when no user class stores it so (``setattr``, a library class). Never raises."""
    try:
        for cls in type(holder).__mro__[:-1]:  # not object
            functions = sorted(_body_functions(cls), key=lambda f: (f.__name__ != "__init__", f.__code__.co_firstlineno))
            for func in functions:
                line = _attribute_store_line(func.__code__, attr)
                if line is not None and _is_real_file(func.__code__.co_filename) and not is_library_file(
                        func.__code__.co_filename):
                    return func.__code__.co_filename, line
    except BaseException as exc:  # noqa: BLE001 - a hostile class or bytecode we do not know
        _contain(exc)
    return None


def _attribute_store_line(code: types.CodeType, attr: str) -> int | None:
    """The line of the first ``STORE_ATTR attr`` on the code's first argument, or ``None``."""
    if code.co_argcount < 1 or attr not in code.co_names:
        return None
    first = code.co_varnames[0]
    line = None
    previous: Any = None
    for instr in dis.get_instructions(code):
        if instr.starts_line is not None and not isinstance(instr.starts_line, bool):
            line = instr.starts_line  # Python 3.10-3.12; 3.13+ gives positions below
        positions = getattr(instr, "positions", None)
        if positions is not None and positions.lineno is not None:
            line = positions.lineno
        if instr.opname == "STORE_ATTR" and instr.argval == attr and previous is not None:
            loaded = previous.argval if previous.opname.startswith("LOAD_FAST") else None
            if loaded == first or (isinstance(loaded, tuple) and loaded and loaded[-1] == first):
                return line
        previous = instr
    return None


def first_user_site(objs: Iterable[Any], cache: SiteCache | None = None) -> tuple[str | None, int | None]:
    """``(file, line)`` of the first of ``objs`` with a user-defined site (:func:`user_site`),
    ``file`` as :func:`display_path` shows it; ``(None, None)`` when none has one."""
    for obj in objs:
        found = user_site(obj, cache)
        if found is not None:
            return display_path(found[0]), found[1]
    return None, None
