"""Diagnosing a notebook's loaders inside its own kernel, after its cells ran.

``harness diagnose NOTEBOOK.ipynb[:NAME]`` runs the notebook (:mod:`.driver`), then this, in
the kernel: the named objects of the notebook's ``__main__`` (every ``DataLoader`` in it
without a name) are checked as the pytest guard checks a construction
(:func:`harness.guard.check.snapshot` and :func:`~harness.guard.check.resolve`): pickled
here, loaded in one clean checker process prepared as a spawned worker, which, as a spawn
worker of a kernel, cannot find what the notebook defines (``Can't get attribute 'X' on
<module '__main__'>``). Every culprit defined in a cell is placed at the notebook, its cell
and the line in that cell: the kernel compiles each cell under a file name of its own, whose
source IPython keeps in :mod:`linecache`; it is matched with the notebook's cells.

The result file is ``{"diagnoses": [{"name", "diagnosis"}], "errors": [{"name", "error"}]}``
(:func:`harness.inspect.diagnose.diagnosis_to_child`), written once, atomically.
"""

from __future__ import annotations

import dataclasses
import json
import linecache
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["cell_sites", "diagnose_main"]


def cell_sites(notebook: Path) -> dict[str, int]:
    """``{kernel file name: cell}`` for every cell of ``notebook`` whose source the kernel
    compiled (matched through :mod:`linecache`, which holds each cell's transformed source)."""
    import nbformat

    from harness.notebook.cells import _python

    nb = nbformat.read(str(notebook), as_version=4)
    by_source: dict[str, int] = {}
    for index, cell in enumerate(nb.cells, 1):
        if cell.get("cell_type") == "code":
            by_source[_python(str(cell.get("source", ""))).rstrip()] = index
            by_source.setdefault(str(cell.get("source", "")).rstrip(), index)
    out: dict[str, int] = {}
    for filename, entry in list(linecache.cache.items()):
        lines = entry[2] if isinstance(entry, tuple) and len(entry) > 2 else None
        if not isinstance(lines, list):
            continue
        cell = by_source.get("".join(lines).rstrip())
        if cell is not None:
            out[filename] = cell
    return out


def _placed(problem: Any, sites: dict[str, int], shown: str) -> Any:
    if problem.file is None:
        return problem
    for filename, cell in sites.items():
        if problem.file == filename or os.path.abspath(problem.file) == os.path.abspath(filename):
            return dataclasses.replace(problem, file=shown, cell=cell)
    return problem


def _targets(names: list[str]) -> tuple[list[tuple[str, Any]], list[dict[str, str]]]:
    from torch.utils.data import DataLoader, Dataset

    main = vars(sys.modules["__main__"])
    if not names:
        found = [(k, v) for k, v in main.items() if not k.startswith("_") and isinstance(v, DataLoader)]
        return found, [] if found else [{"name": "", "error": "the notebook's namespace holds no DataLoader"}]
    out, errors = [], []
    for name in names:
        if name not in main:
            errors.append({"name": name, "error": f"the notebook defines no {name!r}"})
        elif not isinstance(main[name], (DataLoader, Dataset)):
            t = type(main[name])
            errors.append({"name": name, "error": f"{name} is a {t.__module__}.{t.__qualname__}, not a DataLoader or Dataset"})
        else:
            out.append((name, main[name]))
    return out, errors


def diagnose_main(spec_json: str, notebook: str) -> None:
    """Diagnose, write the result file named in the spec; never raises (a failure is written)."""
    spec = json.loads(spec_json)
    result: dict[str, Any] = {"diagnoses": [], "errors": []}
    try:
        _diagnose(spec, Path(notebook), result)
    except BaseException as exc:  # noqa: BLE001 - the result file says it; the kernel goes on
        result["errors"].append({"name": "", "error": f"internal error: {type(exc).__name__}: {exc}"})
    from harness.child.fileio import write_atomic

    write_atomic(Path(spec["result"]), json.dumps(result).encode("utf-8"))


def _diagnose(spec: dict[str, Any], notebook: Path, result: dict[str, Any]) -> None:
    from torch.utils.data import DataLoader

    from harness.guard.check import resolve, snapshot
    from harness.guard.checker import Checker
    from harness.inspect import sites
    from harness.inspect.diagnose import Diagnosis, diagnosis_to_child

    targets, errors = _targets(list(spec.get("names") or []))
    result["errors"] += errors
    shown = sites.display_path(str(notebook))
    checker = Checker(float(spec.get("timeout_s") or 60))
    try:
        for name, obj in targets:
            kind = "loader" if isinstance(obj, DataLoader) else "dataset"
            verdict = resolve(snapshot(obj, kind, None, spec["method"], checker, None), checker)
            where = cell_sites(notebook)
            d = Diagnosis(target=f"{shown}:{name}", method=spec["method"], num_workers=verdict.num_workers,
                          payload=verdict.payload, batch_note=verdict.note,
                          findings=[dataclasses.replace(f, problem=_placed(f.problem, where, shown)) for f in verdict.findings],
                          hazards=[dataclasses.replace(f, problem=_placed(f.problem, where, shown)) for f in verdict.hazards])
            result["diagnoses"].append({"name": name, "diagnosis": diagnosis_to_child(d)})
    finally:
        checker.close()
