"""Catalogue knowledge for ``diagnose``, ``reproduce`` and the pytest plugin: which case a finding matches.

(Being moved out of the tools: for now the same candidate lists as before.)
"""

from __future__ import annotations

import fnmatch
from typing import Any

from harness.inspect.walker import Problem

__all__ = ["case_for_problem", "catalogue_cases", "fix_description", "pick_case"]


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
