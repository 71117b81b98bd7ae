"""``harness lint --fix``: rewrite what a finding shows so that a spawn or forkserver worker can
pickle it, keeping every comment and every untouched line as it was.

The analysis (what may move, what it captures, whether the result means the same) is
:mod:`ast` and :mod:`symtable`; the edit is :mod:`libcst`, which keeps the source's
formatting and comments. One finding is fixed at a time and the module is linted again, until
nothing fixable is left. A fix is offered only where it provably keeps what the code does:

* ``HL101``, a lambda: it becomes a module-level ``def NAME(params): return (body)``, inserted
  before the top-level statement that holds it, and the lambda becomes ``NAME``. A lambda that
  reads locals of the function it is in becomes ``functools.partial(NAME, a=a)``, the locals
  keyword-only parameters of ``NAME``: only when each is bound once, before the lambda and
  outside any loop, so that binding it early gives the value the closure would have read.
* ``HL102``, a function defined in a function: it moves to module level, before the top-level
  statement that holds it. One that reads its enclosing function's locals (a closure) moves as
  ``_NAME`` with those locals as keyword-only parameters, and ``NAME = functools.partial(_NAME,
  a=a)`` takes its place, under the same conditions as a lambda's.
* ``HL103``, a class defined in a function (or a member of one): the class moves to module
  level when it reads none of the function's locals.
* ``HL302``, a function or class defined directly under the main guard: it moves to just
  before the guard, when it reads no name that only the guarded block binds.
* ``HL301``, a script that starts workers at import time: the statements from the first one
  that does real work to the end of the script move under ``if __name__ == "__main__":``
  (merged into an existing guard at the end); imports, definitions, literal constants and
  what the script's functions and classes read stay where they are.

The rest (``HL201``, ``HL202``, ``HL303``, notebooks) is reported, not rewritten: moving a
resource into ``__getstate__`` or a notebook cell into a module changes more than the finding's
node. The Python multiprocessing guide names the two rules these fixes follow: define what
workers use at module level, and guard the entry point
(https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import symtable
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.lint.analyze import Hit, is_main_guard
from harness.lint.engine import Finding, lint_source
from harness.lint.sources import Source, SourceError

if TYPE_CHECKING:  # pragma: no cover
    from harness.inspect.hints import Hints

__all__ = ["FIXABLE", "FixResult", "Unfixable", "fix_text"]

#: The rules ``--fix`` rewrites.
FIXABLE = ("HL101", "HL102", "HL103", "HL201", "HL301", "HL302")
#: Most fixes applied to one file (each is followed by a fresh lint of the result), and most
#: attempts, refusals included; what is left past them is named, to be fixed by another run.
MAX_FIXES = 200
MAX_ATTEMPTS = 2000
_BUILTINS = frozenset(dir(builtins))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
_SCOPES = (*_DEFINITIONS, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


class Unfixable(Exception):
    """A finding whose fix cannot be proven to keep what the code does: ``str(exc)`` says why."""


@dataclass
class FixResult:
    """What :func:`fix_text` did to one source.

    Attributes:
        text: the fixed source (the original when nothing was fixed).
        fixed: one line per applied fix (``24:47: HL101 fixed: lambda -> def transform``), at
            the finding's place in the source as it was given.
        refused: ``(finding, reason)`` for each fixable finding left as it was.
    """

    text: str
    fixed: list[str] = field(default_factory=list)
    refused: list[tuple[Finding, str]] = field(default_factory=list)
    #: ``line:column`` of each refused finding in the source as it was given (by ``id``)
    places: dict[int, str] = field(default_factory=dict)


# -- what the source binds -----------------------------------------------------------------------


def _own(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes`` not inside a nested function, class or lambda body (the
    nested definitions themselves, their decorators, defaults and bases are yielded)."""
    todo = list(reversed(nodes))
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, _DEFINITIONS):
            args = node.args if isinstance(node, _FUNCTIONS) else None
            extra: list[ast.AST] = [*node.decorator_list]
            if args is not None:
                extra += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            else:
                extra += [*node.bases, *(k.value for k in node.keywords)]  # type: ignore[union-attr]
            todo.extend(reversed(extra))
            continue
        if isinstance(node, ast.Lambda):
            todo.extend(reversed([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]))
            continue
        todo.extend(reversed(list(ast.iter_child_nodes(node))))


def _bound_by(stmt: ast.AST) -> set[str]:
    """The names a statement binds in its own scope."""
    out: set[str] = set()
    for node in _own([stmt]):
        if isinstance(node, _DEFINITIONS):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
    return out


def _loaded(nodes: Sequence[ast.AST]) -> set[str]:
    return {n.id for n in _own(nodes) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _start_line(node: ast.AST) -> int:
    lines = [node.lineno]  # type: ignore[attr-defined]
    if isinstance(node, _DEFINITIONS):
        lines += [d.lineno for d in node.decorator_list]
    return int(min(lines))


class _Module:
    """One parsed module and the facts the fixes need about it."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.tree = ast.parse(text, filename=str(path))
        try:
            self.symbols = symtable.symtable(text, str(path), "exec")
        except SyntaxError as exc:  # pragma: no cover - ast.parse accepted it
            raise Unfixable(f"symbol table: {exc.msg}") from None
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.generated: set[str] = set()
        #: every name any scope reads or binds as a module-level (global) name
        self.globals_anywhere: set[str] = set()
        todo = [self.symbols]
        while todo:
            table = todo.pop()
            self.globals_anywhere.update(s.get_name() for s in table.get_symbols() if s.is_global())
            todo.extend(table.get_children())
        self.guard: ast.If | None = None
        for stmt in self.tree.body:
            if is_main_guard(stmt):
                assert isinstance(stmt, ast.If)
                self.guard = stmt
        # module-level bindings, with the index of the first top-level statement binding each
        self.first_binding: dict[str, int] = {}
        self.guard_only: set[str] = set()
        guarded: set[str] = set()
        for index, stmt in enumerate(self.tree.body):
            if is_main_guard(stmt):
                assert isinstance(stmt, ast.If)
                for sub in stmt.body:
                    guarded |= _bound_by(sub)
                continue
            for name in _bound_by(stmt):
                self.first_binding.setdefault(name, index)
        self.guard_only = guarded - set(self.first_binding)
        counts = Counter(n for stmt in self.tree.body for n in _bound_by(stmt))
        counts.update(n for stmt in self.tree.body if is_main_guard(stmt) for sub in stmt.body  # type: ignore[attr-defined]
                      for n in _bound_by(sub))
        self.rebound = {n for n, c in counts.items() if c > 1}
        self.rebound |= {n for g in ast.walk(self.tree) if isinstance(g, ast.Global) for n in g.names}
        self.future_annotations = any(
            isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations" for a in s.names)
            for s in self.tree.body)

    # -- where a node sits -------------------------------------------------------------------

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parent:
            node = self.parent[node]
            yield node

    def top_index(self, node: ast.AST) -> int:
        """The index in the module body of the top-level statement holding ``node``."""
        top = node
        for ancestor in self.ancestors(node):
            if ancestor is self.tree:
                break
            top = ancestor
        return self.tree.body.index(top)  # type: ignore[arg-type]

    def enclosing_functions(self, node: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda]:
        """The function scopes around ``node``, innermost first."""
        return [a for a in self.ancestors(node) if isinstance(a, (*_FUNCTIONS, ast.Lambda))]

    def ordinal(self, node: ast.AST) -> int:
        """``node``'s index among the module's nodes of its kind, in source order (libcst visits
        them in the same order, so the two trees meet there)."""
        return self.of_kind(node).index(node)

    def of_kind(self, node: ast.AST) -> list[ast.AST]:
        kinds: tuple[type, ...] = _FUNCTIONS if isinstance(node, _FUNCTIONS) else (type(node),)
        found = [n for n in ast.walk(self.tree) if isinstance(n, kinds)]
        return sorted(found, key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]

    # -- symbol tables -----------------------------------------------------------------------

    def table(self, node: ast.AST) -> symtable.SymbolTable:
        """The symbol table of a function, lambda or class node."""
        name = "lambda" if isinstance(node, ast.Lambda) else node.name  # type: ignore[attr-defined]
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        found = [t for t in self._tables(self.symbols)
                 if t.get_lineno() == node.lineno and str(t.get_type()).lower().endswith(kind)  # type: ignore[attr-defined]
                 and t.get_name() in (name, "<lambda>")]
        if not found:
            raise Unfixable("no symbol table for it")
        if len(found) > 1:
            same_line = [n for n in self.of_kind(node) if n.lineno == node.lineno]  # type: ignore[attr-defined]
            if len(same_line) != len(found):
                raise Unfixable("several definitions on one line")
            return found[same_line.index(node)]
        return found[0]

    def _tables(self, table: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
        for child in table.get_children():
            yield child
            yield from self._tables(child)

    def frees(self, node: ast.AST) -> list[str]:
        """The names ``node`` reads from the functions around it (a closure's cells), sorted."""
        table = self.table(node)
        return sorted(s.get_name() for s in table.get_symbols() if s.is_free())

    def globals_read(self, node: ast.AST) -> set[str]:
        """The module-level names read anywhere inside ``node`` (all nested scopes included)."""
        out: set[str] = set()
        todo = [self.table(node)]
        while todo:
            table = todo.pop()
            out.update(s.get_name() for s in table.get_symbols()
                       if s.is_global() and s.is_referenced())
            todo.extend(table.get_children())
        return out


# -- the checks --------------------------------------------------------------------------------


def _definition_time_names(module: _Module, node: ast.AST) -> set[str]:
    """The names evaluated when ``node`` (a def, class or lambda) is defined: decorators,
    defaults, annotations (unless postponed), bases, and a class body's own statements."""
    exprs: list[ast.AST] = []
    if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
        args = node.args
        exprs += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if isinstance(node, _FUNCTIONS):
            exprs += node.decorator_list
            if not module.future_annotations:
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                exprs += [a.annotation for a in every if a is not None and a.annotation is not None]
                if node.returns is not None:
                    exprs.append(node.returns)
        return _loaded(exprs)
    assert isinstance(node, ast.ClassDef)
    exprs += [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    names = _loaded(exprs)
    body_bound: set[str] = set()
    for stmt in node.body:
        for sub in _own([stmt]):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in body_bound:
                names.add(sub.id)
            if isinstance(sub, _DEFINITIONS) and sub is not stmt:
                continue
        if isinstance(stmt, _FUNCTIONS):
            names |= _definition_time_names(module, stmt)
        body_bound |= _bound_by(stmt)
    if module.future_annotations:
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign):
                names -= _loaded([stmt.annotation]) - _loaded([stmt.target] + ([stmt.value] if stmt.value else []))
    return names


def _immutable(node: ast.AST) -> bool:
    """A literal that is the same value however often it is evaluated: numbers, strings,
    bytes, ``None``, tuples of those (a list or dict default is a new object each time)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_immutable(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _immutable(node.operand)
    if isinstance(node, ast.BinOp):
        return _immutable(node.left) and _immutable(node.right)
    return False


def _check_definition_time(module: _Module, node: ast.AST, before: int) -> None:
    """Raise :class:`Unfixable` unless ``node``, defined once at module level just before the
    top-level statement ``before`` instead of where it was, is made with the same values:
    what its decorators, defaults, annotations and bases read must be module names bound
    once, by a statement before ``before`` (or builtins nothing rebinds), and its default
    values plain names or immutable literals (a ``[]`` default, or a lambda one, made each time
    the enclosing code ran would become one object)."""
    for name in sorted(_definition_time_names(module, node)):
        if name in _BUILTINS and name not in module.first_binding and name not in module.guard_only \
                and name not in module.rebound:
            continue
        if module.first_binding.get(name, len(module.tree.body)) >= before:
            raise Unfixable(f"its definition reads {name!r}, which is not bound at module level before it")
        if name in module.rebound:
            raise Unfixable(f"its definition reads {name!r}, which the module binds more than once")
    defaults: list[ast.expr] = []
    for sub in [node, *(n for n in ast.walk(node) if isinstance(n, _FUNCTIONS))] if isinstance(node, ast.ClassDef) else [node]:
        if isinstance(sub, (*_FUNCTIONS, ast.Lambda)):
            defaults += [*sub.args.defaults, *(d for d in sub.args.kw_defaults if d is not None)]
    for default in defaults:
        if not (_immutable(default) or _inert(default) and not isinstance(default, (ast.List, ast.Subscript))):
            raise Unfixable(f"its default at line {default.lineno} is made anew each time it is defined")
    if isinstance(node, ast.ClassDef):
        if node.keywords:
            raise Unfixable("its class keywords run code of a base class when it is defined")
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if not (_inert(target) and ast.unparse(target).split(".")[-1] == "dataclass"):
                raise Unfixable("it is decorated (a class decorator may depend on where it runs)")
        for stmt in node.body:
            if isinstance(stmt, (*_FUNCTIONS, ast.Pass)) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                continue
            if isinstance(stmt, ast.AnnAssign) and (stmt.value is None or _immutable(stmt.value)):
                continue
            if isinstance(stmt, ast.Assign) and _immutable(stmt.value):
                continue
            if isinstance(stmt, ast.ClassDef):
                _check_definition_time(module, stmt, before)
                continue
            raise Unfixable(f"its body runs code at line {stmt.lineno} each time the class is made")


def _check_no_guard_names(module: _Module, node: ast.AST) -> None:
    """Raise when ``node``'s code reads a name bound only under the main guard (a worker, which
    imports the script as ``__mp_main__``, would not have it)."""
    for name in sorted(module.globals_read(node) & module.guard_only):
        raise Unfixable(f"it reads {name!r}, which only the main guard binds")


def _binding_sites(function: ast.AST, name: str) -> list[tuple[str, ast.AST]]:
    """``(how, node)`` for each place ``function``'s own scope binds ``name``: ``param``,
    ``assign`` (a plain ``name = value``), or ``other`` (a tuple target, ``for``, ``with``,
    an augmented assignment, ``del``, an import, a definition, ``except ... as``)."""
    out: list[tuple[str, ast.AST]] = []
    args = function.args  # type: ignore[attr-defined]
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    out += [("param", function) for a in params if a is not None and a.arg == name]
    body = function.body if isinstance(function, _FUNCTIONS) else [function.body]  # type: ignore[attr-defined]
    plain: set[int] = set()
    for node in _own(body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name) and target.id == name:
                    out.append(("assign", node))
                    plain.add(id(target))
    for node in _own(body):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            if id(node) not in plain:
                out.append(("other", node))
        elif not isinstance(node, (ast.Name, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor,
                                   ast.With, ast.AsyncWith, ast.withitem, ast.NamedExpr, ast.comprehension)) \
                and not isinstance(node, ast.expr) and name in _shallow_bound(node):
            out.append(("other", node))
    return out


def _shallow_bound(node: ast.AST) -> set[str]:
    """Names a definition, import, ``except ... as`` or ``match`` capture binds by itself."""
    if isinstance(node, _DEFINITIONS):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    return set()


def _check_captures(module: _Module, node: ast.AST, captures: list[str]) -> None:
    """Raise unless binding each captured name when ``node`` is defined gives the value its
    closure would read when called: a parameter, or one plain assignment before ``node``, in a
    block around it and in no loop, never rebound (``nonlocal`` included)."""
    start = _start_line(node)
    enclosing = module.enclosing_functions(node)
    if any(isinstance(a, _COMPREHENSIONS) for a in module.ancestors(node)):
        raise Unfixable("it is inside a comprehension and reads its locals")
    from harness.lint.analyze import RESOURCE_CALLS, ModuleAnalysis

    resolver = ModuleAnalysis(module.tree)
    for name in captures:
        if name in ("self", "cls"):
            raise Unfixable(f"it reads {name!r}: a partial would pickle that whole object into every worker")
        owner = next((f for f in enclosing if name in module.table(f).get_identifiers()
                      and module.table(f).lookup(name).is_local()), None)
        if owner is None:
            raise Unfixable(f"it reads {name!r} from an enclosing scope that cannot be followed")
        for sub in ast.walk(owner):
            if isinstance(sub, ast.Nonlocal) and name in sub.names:
                raise Unfixable(f"{name!r} is rebound through nonlocal")
        sites = _binding_sites(owner, name)
        if len(sites) != 1:
            raise Unfixable(f"it reads {name!r}, which is bound {len(sites)} times in {getattr(owner, 'name', 'the lambda')!r}")
        how, site = sites[0]
        args = getattr(owner, "args", None)
        if how == "param" and args is not None and [*args.posonlyargs, *args.args][:1] \
                and [*args.posonlyargs, *args.args][0].arg == name \
                and any(isinstance(a, ast.ClassDef) for a in module.ancestors(owner)):
            raise Unfixable(f"it reads {name!r}, the instance a method is called on: a partial would "
                            "pickle that whole object into every worker")
        if how == "assign" and isinstance(site.value, ast.Call):  # type: ignore[attr-defined]
            called = resolver.dotted(site.value.func)  # type: ignore[attr-defined]
            if called in RESOURCE_CALLS or called.endswith((".Lock", ".RLock", "Client", "Connection")):
                raise Unfixable(f"it reads {name!r}, a {called} that cannot be pickled into a worker")
        if how == "other" and isinstance(site, _DEFINITIONS):
            raise Unfixable(f"it calls {name!r}, defined in {getattr(owner, 'name', 'the lambda')!r}: "
                            f"move {name!r} to module level first")
        if how == "other":
            raise Unfixable(f"it reads {name!r}, which is bound by a loop, a with, an import or another "
                            "statement that is no plain assignment or parameter")
        if how == "assign":
            if site.lineno >= start:  # type: ignore[attr-defined]
                raise Unfixable(f"it reads {name!r}, which is assigned after it is defined")
            value = site.value  # type: ignore[attr-defined]
            if isinstance(value, ast.Lambda):
                raise Unfixable(f"it reads {name!r}, a lambda")
            between = []
            for ancestor in module.ancestors(site):
                if ancestor is owner:
                    break
                between.append(ancestor)
            if any(isinstance(a, _LOOPS) for a in between):
                raise Unfixable(f"it reads {name!r}, which is assigned in a loop")
            node_ancestors = set(map(id, module.ancestors(node)))
            if not all(id(a) in node_ancestors for a in between):
                raise Unfixable(f"it reads {name!r}, which is assigned in a block that does not hold it")


def _module_name(module: _Module, wanted: str, site: ast.AST) -> str:
    """``wanted``, made an identifier that no module-level code binds or reads and that no
    function around ``site`` (where the new name is used) binds: there it names the new
    module-level definition and nothing else."""
    base = re.sub(r"\W", "_", wanted) or "fn"
    if base[0].isdigit() or keyword.iskeyword(base):
        base = f"_{base}"
    taken = set(module.first_binding) | module.guard_only | module.globals_anywhere | module.generated
    for function in module.enclosing_functions(site):
        taken |= set(module.table(function).get_identifiers())
    for owner in module.ancestors(site):
        if isinstance(owner, ast.ClassDef):
            taken |= set().union(*(_bound_by(stmt) for stmt in owner.body))
    name, n = base, 1
    while name in taken or name in _BUILTINS or keyword.iskeyword(name):
        name = f"{base}_{n}"
        n += 1
    module.generated.add(name)
    return name


def _functools_ok(module: _Module) -> None:
    """Raise unless ``functools`` can only mean the module: no scope binds the name otherwise."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Name) and node.id == "functools" and isinstance(node.ctx, (ast.Store, ast.Del)) \
                or isinstance(node, ast.arg) and node.arg == "functools" \
                or isinstance(node, ast.Global) and "functools" in node.names \
                or isinstance(node, _DEFINITIONS) and node.name == "functools":
            raise Unfixable("the module binds 'functools' to something else")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                plain = isinstance(node, ast.Import) and alias.name == "functools" and not alias.asname
                if bound == "functools" and not (plain and node in module.tree.body):
                    raise Unfixable("the module binds 'functools' to something else")


# -- the plans -----------------------------------------------------------------------------------


@dataclass
class _Plan:
    """One edit, in terms both trees share (kinds and ordinals)."""

    action: str  # lambda | move | guard
    kind: str = ""  # Lambda | FunctionDef | ClassDef
    ordinal: int = -1
    before: int = -1  # the top-level statement the new definition goes before
    name: str = ""  # the module-level name of the new or moved definition
    rebind: str = ""  # for a moved closure: the name the partial is bound to in its place
    captures: list[str] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)  # guard: the top-level statements moved under it
    merge: bool = False  # guard: an existing guard at the end takes the moved statements


def _locate(module: _Module, hit: Hit, kinds: tuple[type, ...]) -> ast.AST:
    """The node of ``kinds`` at the hit's line and column."""
    for node in ast.walk(module.tree):
        if isinstance(node, kinds) and node.lineno == hit.line and node.col_offset + 1 == hit.column:  # type: ignore[attr-defined]
            return node
    raise Unfixable("its node was not found")


def _qualnames(module: _Module) -> dict[ast.AST, str]:
    out: dict[ast.AST, str] = {}

    def walk(body: Sequence[ast.AST], prefix: str) -> None:
        for node in body:
            for sub in _own([node]):
                if isinstance(sub, _DEFINITIONS):
                    qualname = f"{prefix}{sub.name}"
                    out[sub] = qualname
                    inner = f"{qualname}.<locals>." if isinstance(sub, _FUNCTIONS) else f"{qualname}."
                    walk(sub.body, inner)

    walk(module.tree.body, "")
    return out


def _check_class_bound(module: _Module, node: ast.AST) -> None:
    """Raise when ``node`` depends on the class it is written in: a private name (``__x``, which
    Python mangles to ``_Class__x`` inside a class body), or zero-argument ``super()`` and
    ``__class__`` (the ``__class__`` cell of the class's methods)."""
    if not any(isinstance(a, ast.ClassDef) for a in module.ancestors(node)):
        return
    for sub in ast.walk(node):
        name = (sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute)
                else sub.arg if isinstance(sub, ast.arg) else "")
        if name.startswith("__") and not name.endswith("__"):
            raise Unfixable(f"it uses {name!r}, which Python mangles with the name of the class it is in")
        if name == "__class__" or (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                                   and sub.func.id == "super" and not sub.args):
            raise Unfixable("it uses super() or __class__, which need the class it is in")


def _plan_lambda(module: _Module, hit: Hit) -> _Plan:
    node = _locate(module, hit, (ast.Lambda,))
    assert isinstance(node, ast.Lambda)
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Await)) for n in ast.walk(node.body)):
        raise Unfixable("its body yields or assigns")
    _check_class_bound(module, node)
    before = module.top_index(node)
    _check_no_guard_names(module, node)
    captures = module.frees(node)
    if captures:
        _check_captures(module, node, captures)
        _functools_ok(module)
    _check_definition_time(module, node, before)
    parent = module.parent.get(node)
    assigned = (parent.targets[0].id if isinstance(parent, ast.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name) else "")
    if assigned and parent in module.tree.body and not captures and module.first_binding.get(assigned) == before \
            and sum(1 for s in module.tree.body if assigned in _bound_by(s)) == 1:
        # ``name = lambda ...`` at module level: the def takes the assignment's place (PEP 8, E731)
        return _Plan("lambda", "Lambda", module.ordinal(node), before, assigned, rebind="=")
    wanted = hit.reaches.rsplit(".", 1)[-1] if hit.reaches else (assigned or "fn")
    return _Plan("lambda", "Lambda", module.ordinal(node), before, _module_name(module, wanted, node),
                 captures=captures)


def _plan_move(module: _Module, hit: Hit) -> _Plan:
    """A local function or class (or the local class a member hit is in) to module level."""
    qualnames = _qualnames(module)
    parts = hit.name.split(".")
    if "<locals>" not in parts:
        raise Unfixable("it is not defined in a function")
    cut = len(parts) - parts[::-1].index("<locals>")
    wanted = ".".join(parts[: cut + 1])
    nodes = [n for n, q in qualnames.items() if q == wanted]
    nodes = [n for n in nodes if _start_line(n) <= hit.line <= (n.end_lineno or n.lineno)] or nodes  # type: ignore[attr-defined]
    if len(nodes) != 1:
        raise Unfixable(f"{wanted!r} is defined {len(nodes)} times")
    node = nodes[0]
    assert isinstance(node, _DEFINITIONS)
    if isinstance(node, _FUNCTIONS) and node.decorator_list:
        raise Unfixable("it is decorated (a decorator may depend on where it runs)")
    enclosing = module.enclosing_functions(node)
    if any(isinstance(f, ast.Lambda) for f in enclosing):
        raise Unfixable("it is inside a lambda")
    _check_class_bound(module, node)
    parent = module.parent[node]
    if not any(node in getattr(parent, f, ()) for f in ("body", "orelse", "finalbody")) or isinstance(parent, ast.ClassDef):
        raise Unfixable("it is not a statement of a function body")
    for ancestor in module.ancestors(node):
        if ancestor is enclosing[0]:
            break
        if isinstance(ancestor, _LOOPS):
            raise Unfixable("it is defined in a loop")
    before = module.top_index(node)
    captures = module.frees(node)
    if node.name in module.first_binding or node.name in module.guard_only:
        if not captures:
            raise Unfixable(f"the module already binds {node.name!r}")
    for function in enclosing:
        if function is enclosing[0]:
            if len(_binding_sites(function, node.name)) != 1:
                raise Unfixable(f"{node.name!r} is bound more than once in {function.name!r}")  # type: ignore[union-attr]
        elif node.name in module.table(function).get_identifiers() and module.table(function).lookup(node.name).is_local():
            raise Unfixable(f"{getattr(function, 'name', '')!r} also binds {node.name!r}")
    if captures:
        if isinstance(node, ast.ClassDef):
            raise Unfixable(f"it reads {', '.join(map(repr, captures))} from the function it is in")
        if node.name in captures:
            raise Unfixable("it calls itself by its local name")
        _check_captures(module, node, captures)
        _functools_ok(module)
        owner = getattr(enclosing[0], "name", "")
        # a one- or two-letter closure (``f``) is named after the factory that made it
        wanted = f"_{node.name}" if len(node.name) > 2 or not owner else f"_{owner}_{node.name}"
        new_name = _module_name(module, wanted, node)
        _check_definition_time(module, node, before)
        return _Plan("move", type(node).__name__ if isinstance(node, ast.ClassDef) else "FunctionDef",
                     module.ordinal(node), before, new_name, rebind=node.name, captures=captures)
    _check_definition_time(module, node, before)
    kind = "ClassDef" if isinstance(node, ast.ClassDef) else "FunctionDef"
    return _Plan("move", kind, module.ordinal(node), before, node.name)


def _plan_out_of_guard(module: _Module, hit: Hit) -> _Plan:
    guard = module.guard
    if guard is None:
        raise Unfixable("no main guard holds it")
    nodes = [s for s in guard.body if isinstance(s, _DEFINITIONS) and s.name == hit.name.split(".")[0]
             and _start_line(s) <= hit.line <= (s.end_lineno or s.lineno)]
    if len(nodes) != 1:
        raise Unfixable("it is not a definition directly under the main guard")
    node = nodes[0]
    if node.name in module.first_binding:
        raise Unfixable(f"the module also binds {node.name!r} outside the guard")
    if sum(1 for s in guard.body if node.name in _bound_by(s)) != 1:
        raise Unfixable(f"the guard binds {node.name!r} more than once")
    before = module.tree.body.index(guard)
    _check_definition_time(module, node, before)
    reads = module.globals_read(node) & module.guard_only - {node.name}
    if reads:
        raise Unfixable(f"it reads {', '.join(map(repr, sorted(reads)))}, which only the main guard binds")
    kind = "ClassDef" if isinstance(node, ast.ClassDef) else "FunctionDef"
    return _Plan("move", kind, module.ordinal(node), before, node.name)


def _pure(node: ast.AST) -> bool:
    """A literal (numbers, strings, containers of them, names of ``None``/``True``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_pure(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _pure(k) for k in node.keys) and all(_pure(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _pure(node.operand)
    if isinstance(node, ast.BinOp):
        return _pure(node.left) and _pure(node.right)
    return False


def _inert(node: ast.AST) -> bool:
    """An expression evaluated with no side effect: names, attributes, literals, subscripts
    of those (``Dataset[int]``)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _inert(node.value)
    if isinstance(node, ast.Subscript):
        return _inert(node.value) and _inert(node.slice)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_inert(e) for e in node.elts)
    return _pure(node)


def _inert_definition(stmt: ast.stmt) -> bool:
    """A definition whose creation runs no code of the script's: undecorated, its defaults,
    annotations and bases plain names or literals, and (a class) a body of such definitions,
    literal constants and its docstring."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return stmt.value is not None and _pure(stmt.value)
    if isinstance(stmt, _FUNCTIONS):
        args = stmt.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None),
                 *(a.annotation for a in every if a is not None and a.annotation is not None),
                 *([stmt.returns] if stmt.returns is not None else [])]
        return not stmt.decorator_list and all(_inert(p) for p in parts)
    if isinstance(stmt, ast.ClassDef):
        return (not stmt.decorator_list and not stmt.keywords and all(_inert(b) for b in stmt.bases)
                and all(_inert_definition(s) or isinstance(s, ast.Pass)
                        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in stmt.body))
    return False


def _plan_guard(module: _Module, hit: Hit) -> _Plan:
    """Move the script's work under the main guard; what a worker needs stays."""
    body = module.tree.body
    guard_index = body.index(module.guard) if module.guard is not None else None
    if guard_index is not None and guard_index != len(body) - 1:
        raise Unfixable("statements follow the main guard")
    end = guard_index if guard_index is not None else len(body)
    hit_index = next((i for i, s in enumerate(body[:end])
                      if _start_line(s) <= hit.line <= (s.end_lineno or s.lineno)), None)
    if hit_index is None:
        raise Unfixable("the worker start was not found outside the guard")

    def definition_like(index: int, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, *_DEFINITIONS)):
            return True
        if index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return True  # the docstring
        return isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _pure(stmt.value)

    kept = {i for i in range(end) if definition_like(i, body[i])}
    # what the definitions read when called (in a worker too), and, to a fixpoint, what the
    # statements binding that read, and the method calls that set those objects up
    # (``parser.add_argument(...)``): those statements stay at module level
    needed: set[str] = set()
    for i in kept:
        if isinstance(body[i], _DEFINITIONS):
            needed |= module.globals_read(body[i])
    values: set[str] = set()  # needed names bound by an assignment (objects, not modules or definitions)

    def sets_up(stmt: ast.stmt) -> bool:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return False
        owner = call.func.value
        while isinstance(owner, ast.Attribute):
            owner = owner.value
        return isinstance(owner, ast.Name) and owner.id in values

    changed = True
    while changed:
        changed = False
        for i in range(end):
            stmt = body[i]
            if i in kept:
                continue
            bound = _bound_by(stmt) & needed
            if bound or sets_up(stmt):
                kept.add(i)
                needed |= _loaded([stmt])
                values |= bound
                changed = True
    moved = [i for i in range(end) if i not in kept]
    if moved:  # a literal constant after the first moved statement that no definition reads moves too
        for i in sorted(kept):
            if i > moved[0] and isinstance(body[i], (ast.Assign, ast.AnnAssign)) and not (_bound_by(body[i]) & needed):
                kept.discard(i)
        moved = [i for i in range(end) if i not in kept]
    # a call made for its effect before the worker start (``torch.set_default_dtype(...)``,
    # ``logging.basicConfig(...)``, ``setup()``) may set up the process the workers need: it
    # stays at module level, where a spawned worker runs it again as before, unless it works
    # on what moves (``parser.add_argument(...)`` when ``parser`` moves into main)
    moving = set().union(*(_bound_by(body[i]) for i in moved))
    kept |= {i for i, stmt in enumerate(body[:hit_index]) if isinstance(stmt, ast.Expr)
             and isinstance(stmt.value, ast.Call) and not (_loaded([stmt]) & moving)}
    moved = [i for i in range(end) if i not in kept]
    if not moved or hit_index not in moved:
        raise Unfixable(f"line {body[hit_index].lineno} starts workers and binds what the script's "
                        "definitions read")
    for i in sorted(kept):
        if i < moved[0]:
            continue
        stmt = body[i]
        if not _inert_definition(stmt):
            raise Unfixable(f"line {stmt.lineno} would have to stay at module level, after work that "
                            f"moves under the guard (line {body[moved[0]].lineno})")
        earlier = set().union(*(_loaded([body[j]]) | _bound_by(body[j]) for j in moved if j < i))
        if _bound_by(stmt) & earlier:
            raise Unfixable(f"line {stmt.lineno} binds a name the work before it uses")
    for i in moved:
        if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Return)) for n in _own([body[i]])):
            raise Unfixable(f"line {body[i].lineno} cannot move into a block")
    # The work becomes ``def main():`` called under the guard; its names become main's locals,
    # so nothing at module level may bind or read them, nor may the work look itself up by name.
    work = [body[i] for i in moved]
    guard_body = list(module.guard.body) if module.guard is not None else []
    work_bound = set().union(*(_bound_by(s) for s in work))
    if not work_bound:  # calls only: they go under the guard as they are
        return _Plan("guard", moved=moved, merge=guard_index is not None)
    for stmt in guard_body:
        if isinstance(stmt, _DEFINITIONS):
            raise Unfixable(f"the main guard defines {stmt.name!r} (HL302 moves it first)")
    work += guard_body
    work_bound |= set().union(*(_bound_by(s) for s in guard_body))
    kept_bound = set().union(*(_bound_by(body[i]) for i in kept))
    for name in sorted(work_bound & (kept_bound | needed)):
        raise Unfixable(f"{name!r} is bound by the work and used at module level: in main() it would be a local")
    dynamic = {"globals", "locals", "vars", "exec", "eval"}
    for node in _own(work):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in dynamic:
            raise Unfixable(f"line {node.lineno} calls {node.func.id}(), which would see main()'s names")
    name = _module_name(module, "main", module.tree)
    return _Plan("guard", moved=moved, merge=guard_index is not None, name=name)


#: Handles a Dataset may open again in each worker, for reading, with the same arguments:
#: dotted call -> (a stream whose position is state, the mode's position, its default). A
#: temporary file, a lock, a logging handler, a generator, a module, a ``torch.Generator`` and a
#: ``cv2.VideoCapture`` (its frame position) are not: opening another one is not the same thing.
_REOPENABLE: dict[str, tuple[bool, int | None, str]] = {
    "open": (True, 1, "r"), "io.open": (True, 1, "r"), "codecs.open": (True, 1, "r"),
    "gzip.open": (True, 1, "rb"), "gzip.GzipFile": (True, 1, "rb"), "bz2.open": (True, 1, "rb"),
    "bz2.BZ2File": (True, 1, "r"), "lzma.open": (True, 1, "rb"), "tarfile.open": (True, 1, "r"),
    "zipfile.ZipFile": (False, 1, "r"), "h5py.File": (False, 1, "r"), "numpy.load": (False, None, ""),
    "sqlite3.connect": (False, None, ""),
}
#: Handles that could be opened again but whose opener does not pickle: ``lmdb.open`` is the C
#: class ``Environment``, which pickle looks up on ``builtins`` and does not find (observed by
#: tests/e2e/test_lint_fix_proof.py).
_OPENER_UNPICKLABLE = ("lmdb.open", "lmdb.Environment")


def _plan_resource(module: _Module, hit: Hit) -> _Plan:
    """A Dataset's handles become openers (``functools.partial`` of the same call), opened at
    the same moment as before in the parent, and again on first use in each worker: a property
    opens it, and ``__getstate__`` leaves the open handle out of the pickle."""
    from harness.lint.analyze import ModuleAnalysis

    class_name = hit.name.split(".")[0]
    classes = [n for n in ast.walk(module.tree) if isinstance(n, ast.ClassDef) and n.name == class_name
               and n.lineno <= hit.line <= (n.end_lineno or n.lineno)]
    if len(classes) != 1:
        raise Unfixable(f"class {class_name!r} was not found once")
    cls = classes[0]
    hits = [h for h in ModuleAnalysis(module.tree).hits
            if h.rule in ("HL201", "HL202") and h.name.startswith(f"{class_name}.")
            and cls.lineno <= h.line <= (cls.end_lineno or cls.lineno)]
    members = {n.name for n in cls.body if isinstance(n, _DEFINITIONS)}
    members |= {t.id for n in cls.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    if members & {"__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", "__slots__", "__getattr__"}:
        raise Unfixable("the class defines its own pickling or attribute lookup")
    init = next(n for n in cls.body if isinstance(n, _FUNCTIONS) and n.name == "__init__")
    me = init.args.args[0].arg if init.args.args else "self"
    attributes: list[str] = []
    for each in hits:
        attribute = each.name.split(".", 1)[1]
        if each.call in _OPENER_UNPICKLABLE:
            raise Unfixable(f"self.{attribute} holds {each.call}, whose opener cannot be pickled (a C class "
                            "pickle cannot find by name)")
        if each.call not in _REOPENABLE:
            raise Unfixable(f"self.{attribute} holds {each.call or each.label}: one opened again in each "
                            "worker would not be the same thing (its position, or what it guards)")
        statement = next((s for s in init.body if isinstance(s, ast.Assign) and s.lineno == each.line), None)
        if statement is None or len(statement.targets) != 1 or not isinstance(statement.value, ast.Call):
            raise Unfixable(f"self.{attribute} is not assigned the call itself, in __init__'s own body")
        stream, position, default = _REOPENABLE[each.call]
        call = statement.value
        mode: ast.expr | None = next((k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None and position is not None and len(call.args) > position:
            mode = call.args[position]
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise Unfixable("its call takes *args or **kwargs")
        text_mode = default if mode is None else (mode.value if isinstance(mode, ast.Constant) else None)
        if position is not None and (not isinstance(text_mode, str) or set(text_mode) & set("wax+")):
            raise Unfixable(f"self.{attribute} is not opened read-only (mode {text_mode!r})")
        if each.call == "sqlite3.connect" and call.args and isinstance(call.args[0], ast.Constant) \
                and call.args[0].value in (":memory:", ""):
            raise Unfixable(f"self.{attribute} is an in-memory database: another connection is another database")
        if f"_{attribute}" in members or f"_{attribute}_open" in members or attribute in members:
            raise Unfixable(f"the class already has a member named like self.{attribute}")
        # self.NAME is assigned once, in that statement, and never deleted
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and node.attr in (attribute, f"_{attribute}", f"_{attribute}_open") \
                    and isinstance(node.ctx, (ast.Store, ast.Del)) and node is not statement.targets[0]:
                raise Unfixable(f"self.{attribute} is assigned or deleted elsewhere")
        if stream:
            after = [n for s in init.body if s.lineno > statement.lineno for n in ast.walk(s)]
            if any(isinstance(n, ast.Attribute) and n.attr == attribute and isinstance(n.value, ast.Name)
                   and n.value.id == me for n in after):
                raise Unfixable(f"__init__ reads self.{attribute} after opening it: a worker's own handle "
                                "would not be where the parent's is")
        attributes.append(attribute)
    _functools_ok(module)
    if not attributes:
        raise Unfixable("no handle found")
    return _Plan("resource", "ClassDef", module.ordinal(cls), name=me, captures=attributes,
                 before=module.top_index(cls))


_PLANNERS = {"HL101": _plan_lambda, "HL201": _plan_resource, "HL102": _plan_move, "HL103": _plan_move,
             "HL302": _plan_out_of_guard, "HL301": _plan_guard}


# -- the edit (libcst) ---------------------------------------------------------------------------


def _apply(text: str, plan: _Plan) -> str:
    """The source with ``plan`` made (libcst: untouched code keeps its formatting)."""
    import libcst as cst

    module = cst.parse_module(text)
    if plan.action == "guard":
        return _apply_guard(module, plan)
    if plan.action == "resource":
        return _apply_resource(module, plan)
    return _apply_definition(module, plan)


def _blank_lines(cst_module: object, count: int) -> list[object]:
    import libcst as cst

    return [cst.EmptyLine(indent=False) for _ in range(count)]


def _apply_definition(module: object, plan: _Plan) -> str:
    import libcst as cst

    assert isinstance(module, cst.Module)

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.seen = 0
            self.node: cst.CSTNode | None = None

        def _visit(self, node: cst.CSTNode) -> None:
            if self.seen == plan.ordinal and self.node is None:
                self.node = node
            self.seen += 1

        def visit_Lambda(self, node: cst.Lambda) -> None:
            if plan.kind == "Lambda":
                self._visit(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if plan.kind == "FunctionDef":
                self._visit(node)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            if plan.kind == "ClassDef":
                self._visit(node)

    finder = Find()
    module.visit(finder)
    target = finder.node
    if target is None:
        raise Unfixable("its node was not found by libcst")
    partial = ""
    if plan.captures:
        partial = "functools.partial({}, {})".format(plan.name, ", ".join(f"{c}={c}" for c in plan.captures))
    new_definition: cst.BaseStatement
    if isinstance(target, cst.Lambda):
        params = target.params
        if plan.captures:
            extra = [cst.Param(cst.Name(c)) for c in plan.captures]
            star = params.star_arg
            if not isinstance(star, (cst.Param, cst.ParamStar)):
                star = cst.ParamStar()
            params = params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, *extra])
        params_code = module.code_for_node(params)
        body_code = module.code_for_node(target.body)
        if module.code_for_node(target).count("#") > params_code.count("#") + body_code.count("#"):
            raise Unfixable("a comment inside it would be lost")
        if "\n" in body_code or "\r" in body_code:
            body_code = f"({body_code})"  # a line break inside brackets is still one line
        nl = module.default_newline
        new_definition = cst.parse_statement(f"def {plan.name}({params_code}):{nl}    return {body_code}{nl}",
                                             config=module.config_for_parsing)
        replacement: cst.BaseExpression = cst.parse_expression(partial) if partial else cst.Name(plan.name)
        replacement = replacement.with_changes(lpar=target.lpar, rpar=target.rpar) if target.lpar else replacement
        replaced_with: cst.CSTNode | None = replacement
        in_place: cst.BaseStatement | None = None
    else:
        assert isinstance(target, (cst.FunctionDef, cst.ClassDef))
        moved = target
        if plan.captures:
            assert isinstance(moved, cst.FunctionDef)
            params = moved.params
            extra = [cst.Param(cst.Name(c)) for c in plan.captures]
            star = params.star_arg
            if not isinstance(star, (cst.Param, cst.ParamStar)):
                star = cst.ParamStar()
            params = params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, *extra])
            moved = moved.with_changes(name=cst.Name(plan.name), params=params)
        new_definition = moved.with_changes(leading_lines=[*_leading_without_blanks(moved.leading_lines)])
        replaced_with = None
        in_place = (cst.parse_statement(f"{plan.rebind} = {partial}{module.default_newline}", config=module.config_for_parsing)
                    .with_changes(leading_lines=target.leading_lines)) if partial else None
    new_definition = new_definition.with_changes(
        leading_lines=[*_blank_lines(module, 2), *new_definition.leading_lines])

    class Edit(cst.CSTTransformer):
        def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[no-untyped-def]
            if original is target:
                if replaced_with is not None:
                    return replaced_with
                return in_place if in_place is not None else cst.RemoveFromParent()
            if isinstance(updated, cst.IndentedBlock) and isinstance(original, cst.IndentedBlock):
                if not updated.body:
                    return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
                if original.body and original.body[0] is target and in_place is None:
                    first = updated.body[0]  # the block's new first line: no blank line above it
                    body = [first.with_changes(leading_lines=_leading_without_blanks(first.leading_lines)),  # type: ignore[attr-defined]
                            *updated.body[1:]]
                    return updated.with_changes(body=body)
            return updated

    if plan.rebind == "=":  # the assignment itself becomes the def
        body = list(module.body)
        statement = body[plan.before]
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            raise Unfixable("several statements share its line")
        assert isinstance(new_definition, cst.FunctionDef) and isinstance(new_definition.body, cst.IndentedBlock)
        # a comment after the assignment stays on its line, the def's
        header = new_definition.body.with_changes(header=statement.trailing_whitespace)
        body[plan.before] = new_definition.with_changes(leading_lines=statement.leading_lines, body=header)
        return module.with_changes(body=body).code
    edited = module.visit(Edit())
    assert isinstance(edited, cst.Module)
    body = list(edited.body)
    anchor = body[plan.before]
    body[plan.before] = anchor.with_changes(leading_lines=_two_blank(anchor.leading_lines))
    body.insert(plan.before, new_definition)
    if plan.captures and not _imports_functools(edited):
        _insert_functools(body, plan.before)
    return edited.with_changes(body=body).code


def _insert_functools(body: list[Any], limit: int) -> None:
    """Insert ``import functools`` into a module's statements (:func:`_import_slot`), with the
    blank lines the import it goes before has."""
    import libcst as cst

    index = _import_slot(body, limit)
    new_import = cst.parse_statement("import functools\n")
    if index < len(body):
        new_import = new_import.with_changes(leading_lines=[ln for ln in body[index].leading_lines if ln.comment is None])
    body.insert(index, new_import)


def _apply_resource(module: object, plan: _Plan) -> str:
    import libcst as cst

    assert isinstance(module, cst.Module)
    me, attributes = plan.name, plan.captures
    found: list[cst.ClassDef] = []

    class Find(cst.CSTVisitor):
        seen = 0

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            if Find.seen == plan.ordinal:
                found.append(node)
            Find.seen += 1

    module.visit(Find())
    if not found:
        raise Unfixable("its class was not found by libcst")
    target = found[0]
    config = module.config_for_parsing

    def opener(line: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine] | None:
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
            return None
        assign = line.body[0]
        (element,) = assign.targets
        tgt = element.target
        if not (isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value == me
                and tgt.attr.value in attributes and isinstance(assign.value, cst.Call)):
            return None
        name, call = tgt.attr.value, assign.value
        callee = module.code_for_node(call.func)
        args = ", ".join(module.code_for_node(a).strip().rstrip(",") for a in call.args)
        partial = f"functools.partial({callee}{', ' if args else ''}{args})"
        nl = module.default_newline
        first = cst.parse_statement(f"{me}._{name}_open = {partial}  # opened again in each worker{nl}", config=config)
        second = cst.parse_statement(f"{me}._{name} = {me}._{name}_open(){nl}", config=config)
        assert isinstance(first, cst.SimpleStatementLine) and isinstance(second, cst.SimpleStatementLine)
        return [first.with_changes(leading_lines=line.leading_lines),
                second.with_changes(trailing_whitespace=line.trailing_whitespace)]

    properties = "".join(
        f"@property\ndef {name}(self):\n"
        f"    \"\"\"The handle: opened again on first use in a worker, which gets none in its pickle.\"\"\"\n"
        f"    if self._{name} is None:\n        self._{name} = self._{name}_open()\n    return self._{name}\n\n"
        for name in attributes)
    dropped = "".join(f'    state["_{name}"] = None\n' for name in attributes)
    extra = cst.parse_module((properties + "def __getstate__(self):\n    state = self.__dict__.copy()\n"
                              + dropped + "    return state\n").replace("\n", module.default_newline), config=config)

    class Edit(cst.CSTTransformer):
        def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
            if original.name.value != "__init__" or not isinstance(updated.body, cst.IndentedBlock):
                return updated
            body: list[cst.BaseStatement] = []
            for stmt in updated.body.body:
                made = opener(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
                body.extend(made if made else [stmt])
            return updated.with_changes(body=updated.body.with_changes(body=body))

    def edit_class(cls: cst.ClassDef) -> cst.ClassDef:
        edited = cls.visit(Edit())
        assert isinstance(edited, cst.ClassDef) and isinstance(edited.body, cst.IndentedBlock)
        members = list(edited.body.body)
        index = next(i for i, m in enumerate(members) if isinstance(m, cst.FunctionDef) and m.name.value == "__init__")
        added = [m.with_changes(leading_lines=[cst.EmptyLine(indent=False), *_leading_without_blanks(m.leading_lines)])
                 for m in extra.body]
        return edited.with_changes(body=edited.body.with_changes(body=[*members[:index + 1], *added, *members[index + 1:]]))

    class Replace(cst.CSTTransformer):
        def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
            return edit_class(updated) if original is target else updated

    edited = module.visit(Replace())
    assert isinstance(edited, cst.Module)
    if _imports_functools(edited):
        return edited.code
    body = list(edited.body)
    _insert_functools(body, plan.before)
    return edited.with_changes(body=body).code


def _leading_without_blanks(lines: Sequence[Any]) -> list[Any]:
    """A moved definition's comment lines above it, without the blank lines before them."""
    import libcst as cst

    out = list(lines)
    while out and isinstance(out[0], cst.EmptyLine) and out[0].comment is None:
        out.pop(0)
    return out


def _two_blank(lines: Sequence[Any]) -> list[Any]:
    import libcst as cst

    lines = list(lines)
    blanks = 0
    for line in lines:
        if isinstance(line, cst.EmptyLine) and line.comment is None:
            blanks += 1
        else:
            break
    return [cst.EmptyLine(indent=False) for _ in range(max(0, 2 - blanks))] + lines


def _imports_functools(module: object) -> bool:
    import libcst as cst

    assert isinstance(module, cst.Module)
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import) and any(
                        isinstance(a.name, cst.Name) and a.name.value == "functools" and a.asname is None
                        for a in small.names):
                    return True
    return False


def _is_future(stmt: Any) -> bool:
    import libcst as cst

    first = stmt.body[0]
    return isinstance(first, cst.ImportFrom) and isinstance(first.module, cst.Name) and first.module.value == "__future__"


def _import_slot(body: Sequence[object], limit: int) -> int:
    """Where ``import functools`` goes: before the first top-level import (``__future__``
    aside) ahead of ``limit``, where the standard library's imports go; else after the
    docstring, or at ``limit``."""
    import libcst as cst

    def is_import(stmt: object) -> bool:
        return isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)

    for index, stmt in enumerate(body[:limit]):
        if is_import(stmt) and not (isinstance(stmt.body[0], cst.ImportFrom)  # type: ignore[attr-defined]
                                    and isinstance(stmt.body[0].module, cst.Name)  # type: ignore[attr-defined]
                                    and stmt.body[0].module.value == "__future__"):  # type: ignore[attr-defined]
            return index
    index = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        index = 1
    while index < len(body) and is_import(body[index]) and _is_future(body[index]):
        index += 1  # after the __future__ imports, which must come first
    return min(index, max(limit, index))


def _apply_guard(module: object, plan: _Plan) -> str:
    import libcst as cst

    assert isinstance(module, cst.Module)
    cst_body = list(module.body)
    # libcst keeps ``a; b`` on one line as one statement; ast counts two
    if len(ast.parse(module.code).body) != len(cst_body):
        raise Unfixable("several statements share a line")
    moved = [cst_body[i] for i in plan.moved]
    stay = [stmt for i, stmt in enumerate(cst_body) if i not in plan.moved]
    if plan.merge:
        guard = stay.pop()
        assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
        suite = guard.body
    leading = list(moved[0].leading_lines)
    moved[0] = moved[0].with_changes(leading_lines=_leading_without_blanks(leading))
    blanks = [ln for ln in leading if ln.comment is None][:2]
    for index in range(1, len(moved)):  # inside the block: one blank line at most, no trailing spaces
        lines: list[cst.EmptyLine] = []
        for line in moved[index].leading_lines:
            if line.comment is None:
                if lines and lines[-1].comment is None:
                    continue
                line = line.with_changes(indent=False, whitespace=cst.SimpleWhitespace(""))
            lines.append(line)
        moved[index] = moved[index].with_changes(leading_lines=lines)
    old: list[cst.BaseStatement] = list(suite.body) if plan.merge else []
    if old:
        old[0] = old[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *old[0].leading_lines])  # type: ignore[attr-defined]
    first_blanks = blanks if plan.moved[0] > 0 else []
    if plan.name:  # def main(): the work (and what the guard did), called under the guard
        function = cst.FunctionDef(name=cst.Name(plan.name), params=cst.Parameters(),
                                   body=cst.IndentedBlock(body=[*moved, *old]),
                                   leading_lines=_two_blank(first_blanks) if plan.moved[0] > 0 else [])
        call = cst.parse_statement(f"{plan.name}()\n")
        new_guard = (guard.with_changes(body=suite.with_changes(body=[call]), leading_lines=_two_blank([]))
                     if plan.merge else
                     cst.If(test=cst.parse_expression('__name__ == "__main__"'), body=cst.IndentedBlock(body=[call]),
                            leading_lines=_two_blank([])))
        if stay and plan.moved[0] < len(stay):
            function = function.with_changes(leading_lines=_two_blank(function.leading_lines))
        return module.with_changes(body=[*stay, function, new_guard]).code
    if plan.merge:
        new_guard = guard.with_changes(body=suite.with_changes(body=[*moved, *old]),
                                       leading_lines=blanks or guard.leading_lines)
    else:
        new_guard = cst.If(test=cst.parse_expression('__name__ == "__main__"'), body=cst.IndentedBlock(body=moved),
                           leading_lines=first_blanks)
    if stay and plan.moved[0] < len(stay):  # definitions stayed after the moved work
        new_guard = new_guard.with_changes(leading_lines=_two_blank(new_guard.leading_lines))
    return module.with_changes(body=[*stay, new_guard]).code


# -- the loop ------------------------------------------------------------------------------------


def _key(finding: Finding) -> tuple[str, str, str]:
    return (finding.rule, finding.hit.name, finding.hit.reaches)


def fix_text(text: str, path: Path, *, select: Sequence[str] = (), ignore: Sequence[str] = (),
             hints: Hints | None = None) -> FixResult:
    """Fix what can be fixed in one module's source.

    Args:
        text: the module's source.
        path: its file (for messages; a ``.ipynb`` is never rewritten).
        select, ignore: rule codes or prefixes, as for ``harness lint``.
        hints: the catalogue's hints, which name each finding's case and fix (default: the
            built-in catalogue and the project's, :func:`harness.inspect.hints.catalogue_hints`).

    Returns:
        The :class:`FixResult`: the fixed text, what was fixed and what was refused, with why.

    Raises:
        SourceError: the source does not parse (nothing is rewritten).
    """
    result = FixResult(text)
    if path.suffix != ".py":
        return result
    if hints is None:
        from harness.inspect.hints import catalogue_hints

        hints = catalogue_hints()
    # refusals by place in the current text (two lambdas reaching collate_fn in one function
    # share a name; a fix moves lines, and then every refusal is tried again)
    refused: dict[tuple[str, int, int], tuple[Finding, str]] = {}

    def spot(finding: Finding) -> tuple[str, int, int]:
        return (finding.rule, finding.line, finding.column)

    fixes = 0
    findings = lint_source(Source(path, result.text), select=select, ignore=ignore, hints=hints)
    # where each finding is in the file as it was: later passes see the rewritten text
    where: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    for finding in findings:
        where.setdefault(_key(finding), []).append((finding.line, finding.column))

    def rank(finding: Finding) -> int:
        """Its index among the current findings of its key (moves keep their order)."""
        same = [f for f in findings if _key(f) == _key(finding)]
        return next((i for i, f in enumerate(same) if f is finding), 0)

    def place(finding: Finding) -> str:
        spots = where.get(_key(finding), [])
        index = rank(finding)
        line, column = spots[index] if index < len(spots) else (finding.line, finding.column)
        return f"{line}:{column}"

    for _ in range(MAX_ATTEMPTS):
        todo = [f for f in findings if f.rule in FIXABLE and spot(f) not in refused]
        if not todo or fixes >= MAX_FIXES:
            for finding in todo:
                refused[spot(finding)] = (finding, f"not tried: more than {MAX_FIXES} fixes in one file; "
                                                   "run --fix again")
            break
        finding = todo[0]
        try:
            module = _Module(result.text, path)
            plan = _PLANNERS[finding.rule](module, finding.hit)
            new_text = _apply(result.text, plan)
            compile(new_text, str(path), "exec", dont_inherit=True)
            after = lint_source(Source(path, new_text), select=select, ignore=ignore, hints=hints)
        except Unfixable as exc:
            refused[spot(finding)] = (finding, str(exc))
            continue
        except (SyntaxError, ValueError, RecursionError, SourceError) as exc:
            refused[spot(finding)] = (finding, f"the rewrite would not compile ({type(exc).__name__})")
            continue
        except Exception as exc:  # libcst's own ParserSyntaxError and the like: leave the file be
            if type(exc).__module__.startswith("libcst"):
                refused[spot(finding)] = (finding, f"libcst cannot rewrite it ({type(exc).__name__})")
                continue
            raise
        counts_before = Counter(map(_key, findings))
        counts_after = Counter(map(_key, after))
        if counts_after[_key(finding)] >= counts_before[_key(finding)] or any(
                counts_after[k] > counts_before[k] for k in counts_after):
            refused[spot(finding)] = (finding, "the rewrite would not remove it, or would add another finding")
            continue
        guarded = f"def {plan.name}(), called under the main guard" if plan.name else "under the main guard"
        reopened = f"self.{', self.'.join(plan.captures)} opened again in each worker"
        what = {"lambda": f"lambda -> def {plan.name}", "guard": guarded, "resource": reopened}.get(
            plan.action, f"{plan.rebind or plan.name} -> module level{' (functools.partial)' if plan.captures else ''}")
        result.fixed.append(f"{place(finding)}: {finding.rule} fixed: {what}")
        if rank(finding) < len(where.get(_key(finding), [])):
            where[_key(finding)].pop(rank(finding))
        result.text, findings = new_text, after
        fixes += 1
        refused.clear()  # a fix may unblock another (a definition the guard held)
    result.refused = [(f, refused[spot(f)][1]) for f in findings if f.rule in FIXABLE and spot(f) in refused]
    result.places = {id(f): place(f) for f, _ in result.refused}
    return result
