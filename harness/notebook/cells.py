"""Where a notebook's code lies: its top-level definitions, by cell and line.

Read statically with nbformat and :mod:`ast`; IPython syntax (``%magic``, ``!shell``) is
turned into Python first by IPython's own input transformer, which keeps line numbers. A cell
that still does not parse is skipped. Cells are numbered from 1 among all the notebook's
cells, markdown included, as Jupyter shows them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["definitions", "missing_names", "move_hint"]

#: ``Can't get attribute 'X' on <module '__main__' ...>`` (up to 3.13) and Python 3.14's
#: ``module '__main__' has no attribute 'X'``: what a spawn worker could not find.
_MISSING = re.compile(r"Can't get attribute '([\w.]+)' on <module '__(?:mp_)?main__'|"
                      r"module '__(?:mp_)?main__' has no attribute '([\w.]+)'")


def _python(source: str) -> str:
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - ipykernel brings IPython
        return source
    try:
        return str(TransformerManager().transform_cell(source))
    except Exception:  # noqa: BLE001 - a cell IPython cannot transform stays as it is
        return source


def definitions(notebook: Path) -> dict[str, tuple[int, int]]:
    """``{name: (cell, line)}`` of every top-level ``class``, ``def`` and assigned name; a name
    defined in several cells is at its last definition (what the kernel holds at the end)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    out: dict[str, tuple[int, int]] = {}
    for index, cell in enumerate(nb.cells, 1):
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(_python(str(cell.get("source", ""))))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out[node.name] = (index, node.lineno)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = (index, node.lineno)
    return out


def missing_names(text: str) -> list[str]:
    """The ``__main__`` attributes a spawn worker could not find, in order, each once."""
    names: list[str] = []
    for m in _MISSING.finditer(text):
        name = (m.group(1) or m.group(2)).split(".")[0]
        if name not in names:
            names.append(name)
    return names


def move_hint(notebook: Path, text: str) -> str:
    """``move Squares (cell 3, line 1) into a .py module beside the notebook ...``, naming the
    definitions the workers could not find in ``text`` (a run's stderr and root cause); ``""``
    when none is named there or defined in the notebook."""
    try:
        defined = definitions(notebook)
    except Exception:  # noqa: BLE001 - an unreadable notebook: no hint
        return ""
    found = [(n, defined[n]) for n in missing_names(text) if n in defined]
    if not found:
        return ""
    module = re.sub(r"\W", "_", notebook.stem) + "_defs"
    names = ", ".join(f"{n} (cell {c}, line {line})" for n, (c, line) in found)
    imports = ", ".join(n for n, _ in found)
    return (f"spawn and forkserver workers cannot find what a notebook defines in its __main__: move {names} "
            f"into a .py module beside the notebook, such as {module}.py, and import it there "
            f"(from {module} import {imports})")
