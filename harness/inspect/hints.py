"""What each catalogue case stands for, served to ``diagnose``, ``reproduce`` and the pytest plugin.

A bad case declares, in its ``CASE`` literal, the findings that are its mechanism
(``harness/schemas/case.schema.json``, key ``matches``)::

    "matches": {
        "objects": [{"is": "lambda", "path": "collate_fn*"}],        # what diagnose finds
        "errors": [{"kind": "pickle", "text": "<lambda>"}],         # what reproduce sees
    }

so the harness names no case: a new case teaches ``diagnose`` and ``reproduce`` by itself.

**Objects** (a :class:`harness.inspect.walker.Problem` on a pickle path). Each key holds one
pattern or a list of them (any may match); patterns are :mod:`fnmatch` globs, matched case
sensitively (as ``harness run --cases`` matches ids), except ``is``:

* ``type``: the culprit's class or one of its bases, ``module.qualname`` (``builtins.``
  dropped): ``sqlite3.*``, ``_thread.lock``, ``module``, ``itertools.*``;
* ``name``: the ``__qualname__`` of the function or class at fault (never matches other
  objects): ``<lambda>``, ``*.__init__.<locals>.*``;
* ``path``: the path (``collate_fn*``, ``worker_init_fn*``, ``indices*``);
* ``within``: the class (or a base) of an object holding the culprit on its path:
  ``zipfile.ZipFile``, ``logging.Handler``, ``functools.partial``;
* ``is``: what the walker calls the culprit (:data:`harness.inspect.walker.LABELS`):
  ``lambda``, ``closure``, ``local-function``, ``local-class``, ``open-file``, ...

**Static patterns** (a :class:`harness.lint.analyze.Hit` that ``harness lint`` finds in
source it never runs): ``rule`` (the rule code, ``HL101``), ``is`` (the walker's label, as
for objects, and ``main-guard``), ``scope`` (``function``, ``module``, ``main-guard``,
``notebook``, ``init``), and globs ``reaches`` (``collate_fn``, ``dataset.transform``),
``within`` (``torchvision.transforms.Compose``), ``call`` (``h5py.File``), ``name`` (the
qualified name, ``*.<locals>.[A-Z]*.*``) and ``base`` (a class's base,
``torchvision.transforms.v2.*``).

A declaration without ``path`` is not about the first batch coming back (paths rooted at
``batch``), and one without ``is`` is not about user code that raised, or an object that
pickles but does not load (``is: raised``, ``is: unpickle``): no case of the built-in
catalogue shows those, and the message and source location already say what failed.

**Errors** (a classified run or traceback): ``kind``, the verdict's kind (one or a list), and
``text``, regular expressions searched in the error text, the verdict's message and root cause
(one line each), as ``pytest.raises(match=...)`` searches an exception's message:
``r"Can't get attribute '[A-Z][^']*' on <module '__mp_main__'"``. A ``text`` that is not a
regular expression leaves its declaration out, with a line in :attr:`Hints.errors`.

**The most specific declaration wins.** A declaration matches when each of its keys does.
When several match, the one naming the most telling keys wins, in the order ``within``,
``path``, ``name``, ``type``, ``is`` for objects and ``text``, ``kind`` for errors (where an
object sits says more than what it is); then the one whose matching patterns are longer (a
lambda made in ``__init__``, ``*.__init__.<locals>.*``, over any lambda); then the project's
own catalogue before the built-in one, then the case id. Only bad cases (expected to fail
somewhere) are served.

Reading is cheap: the catalogue is read with :mod:`ast` (no case is imported, nothing imports
torch) once per process and catalogue (:func:`catalogue_hints`). The catalogue is the
built-in one plus, where the current directory's ``pyproject.toml`` declares one
(``[tool.harness] catalogue``, :mod:`harness.catalogue.config`), the project's own; a project
catalogue that cannot be read is left out.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from harness.catalogue.discover import Case
    from harness.inspect.walker import Problem
    from harness.lint.analyze import Hit

__all__ = [
    "ERROR_KEYS",
    "OBJECT_KEYS",
    "STATIC_KEYS",
    "Declaration",
    "Hints",
    "case_for_error",
    "catalogue_hints",
    "fix_description",
    "matches_error",
    "matches_object",
    "matches_static",
]

#: Keys of an object declaration, the most telling first.
OBJECT_KEYS = ("within", "path", "name", "type", "is")
#: Keys of an error declaration, the most telling first.
ERROR_KEYS = ("text", "kind")
#: Keys of a static declaration, the most telling first.
STATIC_KEYS = ("call", "within", "base", "reaches", "name", "scope", "is", "rule")
#: Problems only a declaration with ``is`` naming them can match.
_OPT_IN_LABELS = ("raised", "unpickle")


def _glob(pattern: str, value: str) -> bool:
    return fnmatch.fnmatchcase(value, pattern)


def _equal(pattern: str, value: str) -> bool:
    return value == pattern


def _search(pattern: str, value: str) -> bool:
    return re.search(pattern, value) is not None


_MATCHERS = {
    "within": _glob,
    "path": _glob,
    "name": _glob,
    "type": _glob,
    "is": _equal,
    "kind": _equal,
    "text": _search,
    "rule": _equal,
    "scope": _equal,
    "reaches": _glob,
    "call": _glob,
    "base": _glob,
}


def _best(key: str, patterns: Sequence[str], values: Sequence[str]) -> int | None:
    """The length of the longest of ``patterns`` matching one of ``values``, or ``None``."""
    match = _MATCHERS[key]
    found = [len(p) for p in patterns if any(match(p, v) for v in values)]
    return max(found) if found else None


def _score(
    patterns: Mapping[str, Sequence[str]], values: Mapping[str, Sequence[str]], order: Sequence[str]
) -> tuple[int, ...] | None:
    """One flag per key of ``order`` (declared), then the length of the matching patterns; ``None``
    unless every declared key matches."""
    total = 0
    for key, declared in patterns.items():
        length = _best(key, declared, values[key])
        if length is None:
            return None
        total += length
    return (*(int(key in patterns) for key in order), total)


def _object_values(p: Problem) -> dict[str, tuple[str, ...]]:
    """What each object key is matched against, for ``p``."""
    return {
        "within": p.holders,
        "path": (p.path,),
        "name": (p.qualname,) if p.qualname else (),
        "type": p.classes,
        "is": (p.label,),
    }


def matches_object(patterns: Mapping[str, Sequence[str]], p: Problem) -> tuple[int, ...] | None:
    """How specifically an object declaration matches ``p``, or ``None`` when it does not.

    Returns:
        One flag per key of :data:`OBJECT_KEYS` (the key is declared), then the length of its
        matching patterns: larger is more specific.
    """
    if p.root == "batch" and "path" not in patterns:
        return None
    if p.label in _OPT_IN_LABELS and "is" not in patterns:
        return None
    return _score(patterns, _object_values(p), OBJECT_KEYS)


def matches_static(patterns: Mapping[str, Sequence[str]], hit: Hit) -> tuple[int, ...] | None:
    """How specifically a static declaration matches a lint hit, or ``None``; see :func:`matches_object`."""
    values = {"rule": (hit.rule,), "is": (hit.label,), "scope": (hit.scope,), "reaches": (hit.reaches,),
              "within": hit.within, "call": (hit.call,) if hit.call else (), "name": (hit.name,),
              "base": hit.bases}
    return _score(patterns, values, STATIC_KEYS)


def matches_error(
    patterns: Mapping[str, Sequence[str]], kind: str | None, text: str
) -> tuple[int, ...] | None:
    """How specifically an error declaration matches a verdict's ``kind`` and error ``text``, or
    ``None``; see :func:`matches_object`."""
    return _score(patterns, {"kind": (kind,) if kind else (), "text": (text,)}, ERROR_KEYS)


@dataclass(frozen=True)
class Declaration:
    """One entry of a case's ``matches.objects`` or ``matches.errors``.

    Attributes:
        case: the case that declares it.
        order: the case's place: the project's catalogue first, then the built-in one.
        patterns: key → its patterns (a single pattern is a list of one).
        where: where it is declared, ``CASE['matches']['objects'][0]``.
    """

    case: Case
    order: int
    patterns: Mapping[str, tuple[str, ...]]
    where: str


def _unusable(entry: Mapping[str, tuple[str, ...]]) -> str | None:
    """Why an error declaration cannot be used (a ``text`` that is no regular expression), or ``None``."""
    for pattern in entry.get("text", ()):
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"{pattern!r} is not a regular expression: {exc}"
    return None


def _declarations(
    cases: Sequence[Case], section: str, errors: list[str]
) -> tuple[Declaration, ...]:
    """Every bad case's declarations in ``section``; unusable ones are left out, named in ``errors``."""
    out = []
    for order, case in enumerate(cases):
        if not case.bad:
            continue
        for i, entry in enumerate(case.matches.get(section, ())):
            patterns = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in entry.items()}
            where = f"CASE['matches']['{section}'][{i}]"
            why = _unusable(patterns)
            if why:
                errors.append(f"{case.path}: {where}['text']: {why}")
                continue
            out.append(Declaration(case, order, patterns, where))
    return tuple(out)


def _winner(scored: Iterable[tuple[tuple[int, ...] | None, Declaration]]) -> Case | None:
    """The case of the most specific matching declaration (``None``: no score), ties to the
    more trusted catalogue, then to the smaller id."""
    ranked = [
        (tuple(-x for x in score), d.order, d.case.id, d.case)
        for score, d in scored
        if score is not None
    ]
    return min(ranked, key=lambda r: r[:3])[3] if ranked else None


@dataclass(frozen=True)
class Hints:
    """The declarations of one catalogue, and its cases by id (for fixes and titles).

    Attributes:
        cases: every case by id (the project's case wins over a built-in one of the same id).
        objects: every bad case's object declarations.
        texts: every bad case's error declarations.
        errors: one line per declaration left out (naming the case file and the key).
        statics: every bad case's static declarations (``harness lint``).
    """

    cases: Mapping[str, Case]
    objects: tuple[Declaration, ...]
    texts: tuple[Declaration, ...]
    errors: tuple[str, ...] = ()
    statics: tuple[Declaration, ...] = ()

    @classmethod
    def from_cases(cls, cases: Sequence[Case]) -> Hints:
        """Hints from ``cases``, the most trusted catalogue first."""
        by_id: dict[str, Case] = {}
        for case in cases:
            by_id.setdefault(case.id, case)
        errors: list[str] = []
        objects = _declarations(cases, "objects", errors)
        texts = _declarations(cases, "errors", errors)
        statics = _declarations(cases, "static", errors)
        return cls(by_id, objects, texts, tuple(errors), statics)

    def case_for_problem(self, p: Problem) -> Case | None:
        """The case whose object declaration matches ``p`` most specifically, or ``None``."""
        return _winner((matches_object(d.patterns, p), d) for d in self.objects)

    def case_for_hit(self, hit: Hit) -> Case | None:
        """The case whose static declaration matches a lint hit most specifically, or ``None``."""
        return _winner((matches_static(d.patterns, hit), d) for d in self.statics)

    def case_for_error(self, kind: str | None, text: str) -> Case | None:
        """The case whose error declaration matches most specifically, or ``None``.

        Args:
            kind: the verdict's kind (``pickle``, ``main-attribute``, ...), or ``None``.
            text: the error text: the verdict's message and root cause.
        """
        return _winner((matches_error(d.patterns, kind, text), d) for d in self.texts)

    def fix_description(self, fix_id: str | None) -> str:
        """``"id (title)"`` for a fix case, ``"id"`` when the catalogue lacks it, ``""`` for none."""
        if not fix_id:
            return ""
        case = self.cases.get(fix_id)
        return f"{fix_id} ({case.title})" if case else fix_id


def _project_dirs() -> tuple[Path, ...]:
    """The current directory's ``[tool.harness] catalogue``, or ``()`` (none, or unreadable)."""
    from harness.catalogue.config import ConfigError, catalogue_dirs

    try:
        return tuple(catalogue_dirs(None) or ())
    except ConfigError:
        return ()


@functools.lru_cache(maxsize=8)
def _hints_for(project: tuple[Path, ...]) -> Hints:
    from harness.catalogue.discover import CatalogueError, discover

    cases: list[Case] = []
    for dirs in ([list(project)] if project else []) + [None]:
        try:
            cases += discover(dirs).cases
        except CatalogueError:  # a project catalogue that cannot be read; no built-in one
            continue
    return Hints.from_cases(cases)


def catalogue_hints(catalogue_dirs: Sequence[Path] | None = None) -> Hints:
    """The hints of the built-in catalogue plus a project's own, read once per process.

    Args:
        catalogue_dirs: the project's catalogue directories; default: the current directory's
            ``[tool.harness] catalogue``, if any.
    """
    project = (
        tuple(Path(d).resolve() for d in catalogue_dirs)
        if catalogue_dirs is not None
        else _project_dirs()
    )
    return _hints_for(project)


def case_for_error(kind: str | None, text: str) -> Case | None:
    """:meth:`Hints.case_for_error` of :func:`catalogue_hints`."""
    return catalogue_hints().case_for_error(kind, text)


def fix_description(fix_id: str | None) -> str:
    """:meth:`Hints.fix_description` of :func:`catalogue_hints`."""
    return catalogue_hints().fix_description(fix_id)
