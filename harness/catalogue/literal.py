"""The one reader of a case module's ``CASE`` declaration, without running the module.

Discovery (:mod:`harness.catalogue.discover`), the cell request (the ``stdin`` a script case
declares, read by the harness for :class:`harness.child.request.CellRequest`) and ``harness
explain`` (which folds the declaration out of a diff) all find ``CASE`` here, so they agree on
which statement declares it and on which forms it may take:

* the statement is the *last* module-level assignment to ``CASE`` (``CASE = ...`` or
  ``CASE: dict = ...``), the one whose value the module has once it ran;
* its value is a literal (strings, numbers, booleans, ``None``, lists, tuples, sets, dicts)
  in which any dict may also be written as a ``dict(key=value, ...)`` call, at any depth.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.child.request import STDIN_MODES
from harness.errors import CatalogueError

__all__ = ["case_statement", "case_value", "declared_stdin", "read_case_file"]


def case_statement(tree: ast.Module) -> ast.Assign | ast.AnnAssign | None:
    """The module-level statement that gives ``CASE`` its value, or ``None`` when there is none.

    The last of ``CASE = ...`` and ``CASE: T = ...`` (an annotation without a value does not
    count): the module's ``CASE`` once it ran.
    """
    found: ast.Assign | ast.AnnAssign | None = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CASE" for t in stmt.targets
        ):
            found = stmt
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "CASE"
            and stmt.value is not None
        ):
            found = stmt
    return found


def _is_dict_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
    )


def case_value(node: ast.expr) -> object:
    """The value of a literal expression in which dicts may also be ``dict(key=value, ...)`` calls.

    Raises:
        ValueError: the expression is not such a literal (a name, another call, ``**``
            unpacking, an operator).
        TypeError: a dict key that cannot be hashed (a list).
    """
    if isinstance(node, ast.Call) and _is_dict_call(node):
        if any(kw.arg is None for kw in node.keywords):
            raise ValueError("dict(**...) is not a literal")
        return {kw.arg: case_value(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Dict):
        keys = [key for key in node.keys if key is not None]  # None: a ``**mapping`` entry
        if len(keys) != len(node.keys):
            raise ValueError("{**...} is not a literal")
        return {
            case_value(key): case_value(value) for key, value in zip(keys, node.values, strict=True)
        }
    if isinstance(node, ast.List):
        return [case_value(elt) for elt in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(case_value(elt) for elt in node.elts)
    return ast.literal_eval(node)


def read_case_file(path: Path) -> tuple[ast.Module, dict[str, object] | None]:
    """Parse a case module and read its ``CASE``: ``(module tree, CASE or None)``.

    Raises:
        CatalogueError: one line naming ``path``: it cannot be read or parsed, or its ``CASE``
            is not a literal dict.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise CatalogueError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path}: cannot read: {exc}") from None
    stmt = case_statement(tree)
    if stmt is None or stmt.value is None:
        return tree, None
    try:
        meta = case_value(stmt.value)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        raise CatalogueError(
            f"{path}: CASE must be a literal dict (strings, numbers, lists, dicts or "
            "dict(...) calls; no names or other calls)"
        ) from None
    if not isinstance(meta, dict):
        raise CatalogueError(f"{path}: CASE must be a dict, got {type(meta).__name__}")
    return tree, {str(k): v for k, v in meta.items()}


def declared_stdin(path: Path) -> str | None:
    """The ``"stdin"`` mode (one of :data:`~harness.child.request.STDIN_MODES`) that the script
    at ``path`` declares in its ``CASE``, or ``None``: it declares none, or ``path`` is not a
    readable module with a literal ``CASE`` (a user's script run by ``harness reproduce``)."""
    try:
        _, meta = read_case_file(path)
    except CatalogueError:
        return None
    mode = meta.get("stdin") if meta else None
    return mode if isinstance(mode, str) and mode in STDIN_MODES else None
