"""Discover catalogue cases without importing them.

A case is a module of the ``cases`` package (or of another catalogue directory) that
assigns a literal ``CASE = {...}`` (or ``CASE = dict(...)``) at module level. The harness
reads that literal with :mod:`ast` (:mod:`harness.catalogue.literal`), so listing, selecting
and explaining cases never runs case code; only the isolated cell process imports a case
(see :mod:`harness.child.cell`).

A module case also defines ``run(cell)``. A *script case* (``"script": True``) is run as
``__main__`` by :func:`runpy.run_path`, exactly as ``python script.py`` would, so that
spawn and forkserver workers re-import it as ``__mp_main__``.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypedDict, cast

import jsonschema

from harness.catalogue.config import ConfigError, catalogue_dirs
from harness.catalogue.literal import read_case_file
from harness.errors import CatalogueError
from harness.shard.format import schema

__all__ = ["Case", "CatalogueError", "Catalogue", "discover", "default_catalogue_dir", "open_catalogue", "select"]

REQUIRED = ("id", "family", "title", "why", "expect", "sources")


class ExpectWhen(TypedDict, total=False):
    """One ``expect_when`` entry of a ``CASE``: the conditions (``python``, such as ``">=3.14"``,
    and ``sharing_strategy``) and what is expected where they hold."""

    python: str
    sharing_strategy: str
    expect: dict[str, str]
    expect_kind: dict[str, str]


class _RequiredDeclaration(TypedDict):
    id: str
    family: str
    title: str
    why: str
    expect: dict[str, str]
    sources: list[str]


class CaseDeclaration(_RequiredDeclaration, total=False):
    """A ``CASE`` literal that passed ``harness/schemas/case.schema.json`` (the schema tells each
    key); the keys of :data:`REQUIRED` are always there."""

    expect_kind: dict[str, str]
    expect_when: list[ExpectWhen]
    fix: str | None
    script: bool
    stdin: str
    requires: list[str]
    timeout_s: float
    matches: dict[str, list[dict[str, str]]]


@dataclass(frozen=True)
class Case:
    """One catalogue entry, as declared by its module's ``CASE`` literal.

    Attributes:
        id: unique id, e.g. ``mypkg-loader``.
        family: family id, e.g. ``unpicklable-callables``.
        title: one-line title.
        why: why it fails where it does (a few sentences).
        expect: expected outcome per method (``in-process``, ``fork``, ``spawn``, ``forkserver``).
        expect_kind: expected error ``kind`` per method, where the outcome is ``error``.
        fix: id of the good case that repairs this one, or ``None`` for a good case.
        sources: public report addresses or documentation sections.
        script: run as ``__main__`` with :func:`runpy.run_path` instead of calling ``run(cell)``.
        module: dotted module name, e.g. ``harness_cases.unpicklable_callables.transform_lambda``.
        path: the module's file.
        root: the directory to put on ``sys.path`` so ``module`` imports.
        import_root: a project directory cells also put on ``sys.path`` (its own package
            imports as from that directory), or ``None``.
        requires: preconditions such as ``"cuda"``; a cell that lacks one is ``skipped``.
        timeout_s: per-cell timeout override in seconds, or ``None`` for the run's default.
        expect_when: expectations that differ where a condition holds, applied in order over
            ``expect``/``expect_kind`` (see :meth:`expectation`); each is
            ``{"python": ">=3.14" | "<=3.13" | ..., "sharing_strategy": "file_system",
            "expect": {method: outcome}, "expect_kind": {method: kind}}``.
        matches: what a bad case stands for, ``{"objects": [...], "errors": [...]}``
            (read by :mod:`harness.inspect.hints`); empty when it declares nothing.
        stdin: a script case's ``"stdin"`` mode (``interactive``, ``pipe``), passed to the cell
            in its request; ``None`` when it runs as a file.
        root_on_pythonpath: whether cells also put ``root`` on ``PYTHONPATH``, so every
            process of the cell's tree imports the case (a catalogue case); ``False`` for a
            user's own script, which has its folder on its own ``sys.path`` only, as
            ``python script.py`` does (a subprocess it starts does not inherit it).
    """

    id: str
    family: str
    title: str
    why: str
    expect: dict[str, str]
    sources: tuple[str, ...]
    module: str
    path: Path
    root: Path
    expect_kind: dict[str, str] = field(default_factory=dict)
    fix: str | None = None
    script: bool = False
    requires: tuple[str, ...] = ()
    timeout_s: float | None = None
    expect_when: tuple[ExpectWhen, ...] = ()
    import_root: Path | None = None
    matches: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    stdin: str | None = None
    root_on_pythonpath: bool = True

    def expectation(self, python: tuple[int, int], sharing_strategy: str) -> tuple[dict[str, str], dict[str, str]]:
        """``(expect, expect_kind)`` on a runner with this ``python`` (major, minor) and torch
        ``sharing_strategy``, after every matching ``expect_when`` entry.

        An entry that sets a method's outcome drops that method's expected kind unless it
        gives one. Example: a dataset holding an ``itertools`` iterator pickles up to Python
        3.13 and fails from 3.14, where pickling support for ``itertools`` was removed.
        """
        expect, kinds = dict(self.expect), dict(self.expect_kind)
        for entry in self.expect_when:
            if not _condition_holds(entry, python, sharing_strategy):
                continue
            for method, outcome in entry.get("expect", {}).items():
                expect[method] = outcome
                kinds.pop(method, None)
            kinds.update(entry.get("expect_kind", {}))
        return expect, kinds

    @property
    def notebook(self) -> bool:
        """A notebook case: an ``.ipynb`` the cell runs in a real Jupyter kernel."""
        return self.path.suffix == ".ipynb"

    @property
    def bad(self) -> bool:
        """A case is bad when any start method is expected not to pass, anywhere (``expect_when``
        included: a case that only Python 3.14 breaks is bad)."""
        outcomes = [*self.expect.values(), *(o for e in self.expect_when for o in e.get("expect", {}).values())]
        return any(v != "pass" for v in outcomes)

    def to_json(self) -> dict[str, object]:
        """The public description used by ``harness list --json``."""
        return {
            "id": self.id,
            "family": self.family,
            "title": self.title,
            "why": self.why,
            "expect": dict(self.expect),
            "expect_kind": dict(self.expect_kind),
            "fix": self.fix,
            "sources": list(self.sources),
            "expect_when": [dict(e) for e in self.expect_when],
            "script": self.script,
            "requires": list(self.requires),
            "module": self.module,
            "path": str(self.path),
        }


@dataclass
class Catalogue:
    """Every case found, plus one error line per module that could not be read."""

    cases: list[Case]
    errors: list[str]

    def by_id(self) -> dict[str, Case]:
        """Cases keyed by id."""
        return {c.id: c for c in self.cases}


def default_catalogue_dir() -> Path:
    """Directory of the installed ``harness_cases`` package, found without importing it.

    Raises:
        CatalogueError: the ``harness_cases`` package is not installed.
    """
    spec = importlib.util.find_spec("harness_cases")
    if spec is None or not spec.submodule_search_locations:
        raise CatalogueError("the 'harness_cases' package (the built-in catalogue) is not importable; install this project (pip install -e .)")
    return Path(list(spec.submodule_search_locations)[0])


_PYTHON_CONDITION = re.compile(r"^(>=|<=|==|>|<)\s*3\.([0-9]{1,3})$")


def _condition_holds(entry: ExpectWhen, python: tuple[int, int], sharing_strategy: str) -> bool:
    if "sharing_strategy" in entry and entry["sharing_strategy"] != sharing_strategy:
        return False
    if "python" in entry:
        m = _PYTHON_CONDITION.match(entry["python"].strip())
        assert m is not None  # checked when the case was read
        op, minor = m.group(1), int(m.group(2))
        have = python[1] if python[0] == 3 else 99
        return {">=": have >= minor, "<=": have <= minor, "==": have == minor,
                ">": have > minor, "<": have < minor}[op]
    return True


def _jsonable(value: object) -> object:
    """``value`` with tuples as lists, as JSON Schema sees arrays."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


@cache
def _case_validator() -> jsonschema.Draft202012Validator:
    """The ``CASE`` schema's validator, built once per process (not once per case module)."""
    return jsonschema.Draft202012Validator(schema("case"))


def _check_case(meta: dict[str, object], path: Path) -> CaseDeclaration:
    """Validate ``CASE`` against ``harness/schemas/case.schema.json``; returns it as checked.

    The message is jsonschema's, except for an unknown key (named, with the known ones) and
    where the schema gives its own wording (``x-hint``: ids, version conditions).

    Raises:
        CatalogueError: one line naming ``path``, the key (``CASE['script']``) and the problem.
    """
    err = jsonschema.exceptions.best_match(_case_validator().iter_errors(_jsonable(meta)))
    if err is None:
        case = cast(CaseDeclaration, meta)  # what the schema just checked
        _check_patterns(case, path)
        return case
    path_parts = list(err.absolute_path)
    message = err.message
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {})
        extra = sorted((k for k in err.instance if k not in allowed), key=str)
        path_parts.append(extra[0] if extra else "?")
        message = f"unknown key (known: {', '.join(allowed)})"
    elif "x-hint" in err.schema:  # the schema's own wording for a pattern or a combination
        shown = repr(err.instance)
        message = f"{shown if len(shown) <= 60 else shown[:57] + '...'} {err.schema['x-hint']}"
    where = "".join(f"[{p!r}]" for p in path_parts)
    message = message if len(message) <= 300 else message[:300] + "..."
    raise CatalogueError(f"{path}: CASE{where}: {message}")


def _check_patterns(case: CaseDeclaration, path: Path) -> None:
    """Every ``CASE['matches']['errors'][i]['text']`` is a regular expression (the schema cannot
    tell; :mod:`harness.inspect.hints` searches error text with it).

    Raises:
        CatalogueError: one line naming ``path``, the key and why the pattern does not compile.
    """
    for i, entry in enumerate(case.get("matches", {}).get("errors", [])):
        text: object = entry.get("text")
        for j, pattern in enumerate(text if isinstance(text, list) else [] if text is None else [text]):
            where = f"['text'][{j}]" if isinstance(text, list) else "['text']"
            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise CatalogueError(f"{path}: CASE['matches']['errors'][{i}]{where}: {pattern!r} is not a "
                                     f"regular expression: {exc}") from None


def _read_notebook_meta(path: Path) -> dict[str, object] | None:
    """A notebook case's declaration: its ``metadata.harness`` object, or ``None`` when it has
    none (a notebook that is not a case).

    Raises:
        CatalogueError: one line naming ``path``: not readable JSON, or the declaration is not
            an object.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CatalogueError(f"{path}: cannot read the notebook: {exc}") from None
    meta = data.get("metadata", {}).get("harness") if isinstance(data, dict) and isinstance(data.get("metadata"), dict) else None
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise CatalogueError(f"{path}: metadata.harness must be an object, got {type(meta).__name__}")
    return {str(k): v for k, v in meta.items()}


def _read_case(path: Path, root: Path, module: str, import_root: Path | None = None) -> Case | None:
    """Parse one module (or notebook); ``None`` when it declares no ``CASE``.

    A notebook case (``.ipynb``) declares its ``CASE`` as the notebook's ``metadata.harness``
    object; it is a script case: the cell runs it in a real Jupyter kernel
    (:mod:`harness.notebook.kernel.driver`).
    """
    if path.suffix == ".ipynb":
        tree, meta = ast.Module(body=[], type_ignores=[]), _read_notebook_meta(path)
        if meta is not None:
            meta.setdefault("script", True)
            if meta.get("script") is not True or meta.get("stdin"):
                raise CatalogueError(f"{path}: a notebook case is a script case without 'stdin'")
    else:
        tree, meta = read_case_file(path)
    if meta is None:
        return None
    missing = [k for k in REQUIRED if k not in meta]
    if missing:
        raise CatalogueError(f"{path}: CASE lacks {', '.join(missing)}")
    case = _check_case(meta, path)
    expect = case["expect"]
    kinds = case.get("expect_kind", {})
    is_script = case.get("script", False)
    if case.get("stdin") and not is_script:
        raise CatalogueError(f"{path}: CASE['stdin'] needs 'script': True")
    if not is_script and not any(isinstance(s, ast.FunctionDef) and s.name == "run" for s in tree.body):
        raise CatalogueError(f"{path}: a module case must define run(cell)")
    return Case(
        id=str(case["id"]),
        family=str(case["family"]),
        title=str(case["title"]),
        why=" ".join(str(case["why"]).split()),
        expect=dict(expect),
        expect_kind=dict(kinds),
        fix=case.get("fix"),
        sources=tuple(case["sources"]),
        script=is_script,
        stdin=case.get("stdin"),
        requires=tuple(case.get("requires", ())),
        timeout_s=case.get("timeout_s"),
        expect_when=tuple(ExpectWhen(**e) for e in case.get("expect_when", ())),
        module=module,
        path=path.resolve(),
        root=root.parent.resolve(),
        import_root=import_root.resolve() if import_root else None,
        matches=dict(case.get("matches", {})),
    )


def _check_package_root(root: Path) -> None:
    """Raise :class:`CatalogueError` when ``root``'s cases cannot be imported as ``<root.name>.*``.

    Case modules are imported by their dotted name (``<directory>.<sub>.<file>``) with the
    directory's parent first on ``sys.path``, in the cell and in spawn workers alike. A
    directory without ``__init__.py`` is a namespace package (PEP 420), which loses to a regular
    package of the same name anywhere on ``sys.path`` (``cases``, the built-in catalogue, for one).
    """
    if not root.name.isidentifier():
        raise CatalogueError(f"{root}: a catalogue directory's name is the package its cases are "
                             f"imported as; {root.name!r} is not a Python identifier")
    if (root / "__init__.py").is_file():
        return
    spec = importlib.machinery.PathFinder.find_spec(root.name, [str(root.parent), *sys.path])
    places = [os.path.normcase(os.path.realpath(p)) for p in (spec.submodule_search_locations or [])] if spec else []
    if os.path.normcase(os.path.realpath(root)) not in places:
        where = spec.origin if spec and spec.origin else (places[0] if places else "another package")
        raise CatalogueError(f"{root}: its cases would be imported as package {root.name!r}, which is "
                             f"{where}; rename the directory or give it an __init__.py")


def _module_name(root: Path, path: Path) -> str:
    """``<root.name>.<sub>.<stem>`` for the case file ``path`` under ``root``.

    Raises:
        CatalogueError: a folder or file name that is not a Python identifier.
    """
    rel = path.relative_to(root).with_suffix("")
    for part in rel.parts:
        if not part.isidentifier():
            raise CatalogueError(f"{path}: {part!r} is not a Python identifier, so the case cannot be "
                                 "imported; rename it (e.g. with '_' for '-')")
    return ".".join((root.name, *rel.parts))


def discover(catalogue_dir: Path | list[Path] | None = None, *, import_root: Path | None = None) -> Catalogue:
    """Find every case under ``catalogue_dir`` (default: the installed ``harness_cases`` package).

    Args:
        catalogue_dir: one catalogue directory or several (a project may keep more than one).
            A directory needs no ``__init__.py``; its name is the package its cases are
            imported as (see :func:`_check_package_root`).
        import_root: a directory every cell puts on ``sys.path`` too, so that case modules
            import the project's own package as they would from that directory (the current
            directory of a project run; ``None`` for the built-in catalogue).

    Files and folders whose names start with ``_`` are support code, not cases. Each
    module that cannot be read yields one line in ``Catalogue.errors``; the rest still load.

    Raises:
        CatalogueError: a directory does not exist or cannot be imported as a package, or two
            cases share an id (in one catalogue or across two: both files are named).
    """
    roots = [Path(p) for p in catalogue_dir] if isinstance(catalogue_dir, (list, tuple)) else \
        [Path(catalogue_dir) if catalogue_dir else default_catalogue_dir()]
    roots = list({os.path.realpath(r): r for r in reversed(roots)}.values())[::-1]  # once each
    cases: list[Case] = []
    errors: list[str] = []
    seen: dict[str, Path] = {}
    packages: dict[str, Path] = {}
    for root in roots:
        if not root.is_dir():
            what = "is not a directory" if root.exists() else "catalogue directory does not exist"
            raise CatalogueError(f"{root}: {what}")
        _check_package_root(root)
        if root.name in packages and packages[root.name] != root.resolve():
            raise CatalogueError(f"{root}: its cases would be imported as package {root.name!r}, like "
                                 f"those of {packages[root.name]}; rename one of the two directories")
        packages[root.name] = root.resolve()
        for path in sorted([*root.rglob("*.py"), *root.rglob("*.ipynb")]):
            rel = path.relative_to(root)
            if any(part.startswith(("_", ".")) for part in rel.parts):
                continue
            try:
                case = _read_case(path, root, _module_name(root, path), import_root)
            except CatalogueError as exc:
                errors.append(str(exc))
                continue
            if case is None:
                continue
            if case.id in seen:
                raise CatalogueError(f"{path}: case id {case.id!r} already used by {seen[case.id]}")
            seen[case.id] = path
            cases.append(case)
    ids = {c.id for c in cases}
    for c in cases:
        if c.fix and c.fix not in ids:
            errors.append(f"{c.path}: fix {c.fix!r} names no case in the catalogue")
    return Catalogue(cases=cases, errors=errors)


def open_catalogue(cli_dirs: Path | list[Path] | None = None) -> Catalogue:
    """The catalogue a command works on: ``--catalogue`` directories when given, else the
    project's ``[tool.harness] catalogue`` (:mod:`harness.catalogue.config`), else the built-in one.

    A project's catalogue (either way) gets the current directory as its ``import_root``.

    Raises:
        CatalogueError: as :func:`discover`, or an unusable ``[tool.harness]`` table.
    """
    if isinstance(cli_dirs, (str, os.PathLike)):
        cli_dirs = [Path(cli_dirs)]
    try:
        dirs = catalogue_dirs(cli_dirs)
    except ConfigError as exc:
        raise CatalogueError(str(exc)) from None
    if dirs is None:
        return discover()
    return discover(dirs, import_root=Path.cwd())


def select(cases: list[Case], patterns: list[str] | None = None, families: list[str] | None = None) -> list[Case]:
    """Cases whose id matches any glob in ``patterns`` and whose family is in ``families``.

    Empty or ``None`` filters select everything.

    Raises:
        CatalogueError: a pattern or family matches no case (so typos do not pass silently).
    """
    chosen = list(cases)
    if patterns:
        for pat in patterns:
            if not any(fnmatch.fnmatchcase(c.id, pat) for c in cases):
                raise CatalogueError(f"--cases: {pat!r} matches no case (see 'harness list')")
        chosen = [c for c in chosen if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]
    if families:
        known = {c.family for c in cases}
        for fam in families:
            if fam not in known:
                raise CatalogueError(f"--families: unknown family {fam!r} (known: {', '.join(sorted(known))})")
        chosen = [c for c in chosen if c.family in families]
    return chosen
