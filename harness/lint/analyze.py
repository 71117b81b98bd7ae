"""The static analysis of ``harness lint``: what in a module's source would not reach a worker.

Pure :mod:`ast`: no user code is imported or run, and nothing imports torch. One
:class:`ModuleAnalysis` per file finds :class:`Hit` s, each at the culprit's own line:

* **values that reach a worker** (rules ``HL101`` to ``HL103``, ``HL302``, ``HL303``). Every
  ``DataLoader(...)`` call (any callee whose name ends in ``DataLoader``, so subclasses and
  ``torch.utils.data.DataLoader`` alike, and ``super().__init__(...)`` in a subclass) has its ``dataset``, ``collate_fn`` and
  ``worker_init_fn`` arguments followed (the sampler stays in the parent process): through names bound in the
  enclosing scopes, through constructor calls (the arguments a Dataset class's ``__init__``
  stores as ``self.NAME`` reach ``dataset.NAME``; a library class such as
  ``transforms.Compose`` is taken to keep what it is given), ``functools.partial``, containers,
  and the parameters of the module's own helper functions (``make_loader(ds, lambda b: b)``
  where ``make_loader`` passes its parameter on as ``collate_fn``). What is found there is
  what the pickle of a spawn or forkserver worker start refuses: a lambda (pickled by a
  ``<lambda>`` name no module has), a function or class defined inside a function
  (``f.<locals>.g``), and, in a script, a definition under the main guard (a spawned worker
  imports the script as ``__mp_main__``, where the guarded block never ran), or, in a
  notebook, any definition (the kernel's ``__main__`` is no file a worker can import).
* **Dataset attributes** (``HL201``, ``HL202``, and ``HL101``/``HL102`` for callables): what a
  ``Dataset`` subclass stores as ``self.NAME`` in ``__init__``: an open file (``open``,
  ``zipfile.ZipFile``, ``gzip.open`` ...), a ``sqlite3`` connection, a lock or a logging
  handler (which holds one), a generator, a module object, a ``torch.Generator``, a library
  handle (h5py ``File``, ``lmdb.open``, ``cv2.VideoCapture``, the ``NpzFile`` of ``np.load``
  of an ``.npz``), or an ``itertools`` iterator (pickled up to Python 3.13 only: a hazard).
  A class that defines ``__getstate__``, ``__reduce__`` or ``__reduce_ex__`` decides its own
  pickling and is left alone.
* **no main guard** (``HL301``): in a ``.py`` file, a statement outside any function, class and
  ``if __name__ == "__main__":`` block that starts workers: a ``DataLoader`` whose
  ``num_workers`` is not ``0``, ``torch.multiprocessing.spawn``, a ``Pool``, a ``Process``, a
  ``ProcessPoolExecutor``, or a call of a function of the module that does. Python's
  multiprocessing guide: "Safe importing of main module"
  (https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods).

A ``DataLoader`` whose ``num_workers`` is a literal ``0`` (or absent: the default) pickles
nothing; its hits say so (``workers="zero"``) and are warnings, as the pytest guard reports such
loaders ("would fail once workers are used").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["DATALOADER_ARGS", "Hit", "ModuleAnalysis", "RESOURCE_CALLS"]

#: DataLoader parameters whose value is pickled into every worker, with their positions in
#: ``torch.utils.data.DataLoader.__init__`` (torch 2.x). The sampler and batch sampler stay in
#: the parent (``_MultiProcessingDataLoaderIter`` sends the workers the dataset, the collate
#: function and the ``worker_init_fn``, and the indices through queues): the catalogue's case
#: of a sampler class defined in a function passes under every start method.
DATALOADER_ARGS = {"dataset": 0, "collate_fn": 6, "worker_init_fn": 10}
_NUM_WORKERS_POSITION = 5

#: Calls whose result a Dataset must not keep from ``__init__``: dotted name -> walker label
#: (:data:`harness.inspect.walker.LABELS`).
RESOURCE_CALLS = {
    "open": "open-file", "io.open": "open-file", "codecs.open": "open-file",
    "gzip.open": "open-file", "gzip.GzipFile": "open-file", "bz2.open": "open-file",
    "bz2.BZ2File": "open-file", "lzma.open": "open-file", "tarfile.open": "open-file",
    "zipfile.ZipFile": "open-file", "tempfile.TemporaryFile": "open-file",
    "tempfile.NamedTemporaryFile": "open-file",
    "sqlite3.connect": "sqlite",
    "threading.Lock": "lock", "threading.RLock": "lock", "threading.Condition": "lock",
    "threading.Semaphore": "lock", "threading.BoundedSemaphore": "lock", "threading.Event": "lock",
    "logging.StreamHandler": "lock", "logging.FileHandler": "lock",
    "logging.handlers.RotatingFileHandler": "lock", "logging.handlers.WatchedFileHandler": "lock",
    "torch.Generator": "torch-generator",
    "h5py.File": "other", "lmdb.open": "other", "lmdb.Environment": "other",
    "cv2.VideoCapture": "other", "numpy.load": "open-file",
    "os.scandir": "other", "os.walk": "generator", "glob.iglob": "generator",
}
#: Methods whose result is a generator (``Path(folder).iterdir()``).
GENERATOR_METHODS = frozenset({"iterdir", "glob", "rglob"})
#: Methods that return the object they are called on (``torch.Generator().manual_seed(7)``).
_SELF_RETURNING = frozenset({"manual_seed"})
_WORKER_STARTS = ("torch.multiprocessing.spawn", "multiprocessing.spawn", "torch.multiprocessing.start_processes")
_WORKER_CLASSES = ("Pool", "Process", "ProcessPoolExecutor")
#: Where a ``Pool`` or ``Process`` of processes comes from (``multiprocessing.dummy`` and
#: ``ThreadPool`` are threads, which start no interpreter).
_PROCESS_MODULES = ("multiprocessing", "torch.multiprocessing", "concurrent.futures", "billiard")
_PICKLING_HOOKS = ("__getstate__", "__reduce__", "__reduce_ex__")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Depth of the value chase (names bound to names bound to calls ...).
_MAX_DEPTH = 12


@dataclass(frozen=True)
class Hit:
    """One thing in the source that a spawn or forkserver worker start would not survive.

    Attributes:
        rule: the rule code (:data:`harness.lint.rules.RULES`).
        label: what it is, in the walker's words: ``lambda``, ``closure``, ``local-function``,
            ``local-class``, ``open-file``, ``sqlite``, ``lock``, ``generator``, ``module``,
            ``torch-generator``, ``itertools``, ``other``; ``main-guard`` for ``HL301``.
        scope: where it is defined: ``function``, ``module``, ``main-guard``, ``notebook`` or
            ``init`` (in a Dataset's ``__init__``).
        reaches: the loader argument it reaches (``collate_fn``, ``dataset.transform``), or the
            Dataset attribute (``dataset.fh``); ``""`` for ``HL301``.
        within: the dotted names of the calls it is wrapped in on its way, outermost first
            (``torchvision.transforms.Compose``, ``functools.partial``).
        call: the call that made it (``h5py.File``), or ``""``.
        name: the culprit's qualified name, as ``__qualname__`` would be (``<lambda>``,
            ``run.<locals>.add_one``, ``run.<locals>.Augment.shift``), or the attribute that
            holds a resource (``H5Squares.f``).
        line: 1-based line of the culprit in the module's text.
        column: 1-based column.
        workers: ``yes`` (a literal ``num_workers`` above 0), ``unknown`` (not a literal, or no
            loader in sight), ``zero`` (a literal 0 or the default).
        detail: the end of the one-line message (what is wrong, in words).
        bases: for a class, its bases' dotted names (``torchvision.transforms.v2.Transform``).
    """

    rule: str
    label: str
    scope: str
    reaches: str
    within: tuple[str, ...]
    call: str
    name: str
    line: int
    column: int
    workers: str
    detail: str
    bases: tuple[str, ...] = ()


@dataclass
class _Binding:
    kind: str  # value | def | class | param | import | module-import
    node: ast.AST | None
    scope: _Scope


class _Scope:
    """The names a module, function or class body binds, and where it sits."""

    def __init__(self, node: ast.AST, parent: _Scope | None, kind: str) -> None:
        self.node = node
        self.parent = parent
        self.kind = kind  # module | function | class
        self.names: dict[str, list[_Binding]] = {}

    def bind(self, name: str, kind: str, node: ast.AST | None) -> None:
        self.names.setdefault(name, []).append(_Binding(kind, node, self))

    def lookup(self, name: str) -> list[_Binding]:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names and (scope.kind != "class" or scope is self):
                return scope.names[name]
            scope = scope.parent
        return []

    @property
    def in_function(self) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if scope.kind == "function":
                return True
            scope = scope.parent
        return False


def is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (either operand order, ``==`` only)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        yield from node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        yield node.target


def _names_in(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _names_in(elt)
    elif isinstance(target, ast.Starred):
        yield from _names_in(target.value)


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body``, not descending into nested functions, lambdas or classes
    (their own statements belong to their own scopes; the definitions themselves are yielded,
    with their decorators, defaults and bases). Expression contexts (``Load``, ``Store``) are
    left out. In source order, depth first."""
    todo: list[ast.AST] = list(reversed(body))
    scopes = (*_FUNCTIONS, ast.ClassDef)
    pop, extend = todo.pop, todo.extend
    while todo:
        node = pop()
        yield node
        if isinstance(node, scopes):
            extend(reversed([*node.decorator_list, *_defaults(node)]))
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) > 64 and all(
                isinstance(e, ast.Constant) for e in node.elts):
            continue  # a data literal: nothing in it can reach a worker
        children: list[ast.AST] = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                children.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                children.append(value)
        if children:
            children.reverse()
            extend(children)


def _defaults(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, _FUNCTIONS):
        return [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.ClassDef):
        return [*node.bases, *(k.value for k in node.keywords)]
    return []


def _unsubscripted(base: ast.expr) -> ast.expr:
    """``Dataset`` for a generic base ``Dataset[T]``."""
    return base.value if isinstance(base, ast.Subscript) else base


def _params(args: ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


class ModuleAnalysis:
    """Analyse one module's source.

    Args:
        tree: the parsed module.
        notebook: the module is a notebook's code cells (definitions live in a kernel's
            ``__main__``; no main guard is needed or looked for).

    The hits are in :attr:`hits`, sorted by line and column, each once.
    """

    def __init__(self, tree: ast.Module, *, notebook: bool = False) -> None:
        self.tree = tree
        self.notebook = notebook
        self.aliases: dict[str, str] = {}
        self.module_imports: set[str] = set()
        self.scope_of: dict[ast.AST, _Scope] = {}
        #: each scope's own nodes (not those of nested scopes), computed once
        self.own: dict[ast.AST, list[ast.AST]] = {}
        self._loader_call: dict[ast.Call, bool] = {}
        self._calls: list[tuple[ast.Call, _Scope]] | None = None
        self.guarded: set[ast.AST] = set()  # definitions and statements under the main guard
        self.generators: set[ast.AST] = set()
        self._hits: dict[tuple[str, int, int, str], Hit] = {}
        self.module = self._build_scope(tree, None, "module")
        self._mark_guarded()
        self._find_generators()
        self._dataset_classes = self._datasets()
        self._param_reach: dict[ast.AST, dict[str, tuple[str, str]]] = {}
        self._helpers()
        self._loaders()
        self._dataset_attributes()
        if not notebook:
            self._main_guard()

    # -- names ---------------------------------------------------------------------------------

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        """Record what an import statement binds (anywhere in the module: one alias table)."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                    self.module_imports.add(alias.asname)
                else:
                    top = alias.name.split(".")[0]
                    self.aliases[top] = top
                    self.module_imports.add(top)
        elif node.module and not node.level:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def dotted(self, node: ast.AST) -> str:
        """The dotted name of a ``Name``/``Attribute`` chain, imports resolved (``np.load`` is
        ``numpy.load``); ``""`` for anything else."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return ""
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def _build_scope(self, node: ast.AST, parent: _Scope | None, kind: str) -> _Scope:
        scope = _Scope(node, parent, kind)
        self.scope_of[node] = scope
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            for name in _params(node.args):
                scope.bind(name, "param", node)
        nested: list[tuple[ast.AST, str]] = []
        # A lambda binds only its parameters (a lambda inside a lambda gets no scope of its own).
        own = list(ast.walk(node.body)) if isinstance(node, ast.Lambda) else list(_own_nodes(node.body))  # type: ignore[attr-defined]
        self.own[node] = own
        if isinstance(node, ast.Lambda):
            own = []  # a lambda binds only its parameters (a lambda inside one gets no scope)
        for sub in own:
            if isinstance(sub, _FUNCTIONS):
                scope.bind(sub.name, "def", sub)
                nested.append((sub, "function"))
            elif isinstance(sub, ast.ClassDef):
                scope.bind(sub.name, "class", sub)
                nested.append((sub, "class"))
            elif isinstance(sub, ast.Lambda) and sub is not node:
                nested.append((sub, "function"))
            elif isinstance(sub, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                value = sub.value
                for target in _targets(sub):
                    for name in _names_in(target):
                        single = isinstance(target, ast.Name)
                        scope.bind(name, "value" if single and value is not None else "other", value)
            elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
                for name in _names_in(sub.target):
                    scope.bind(name, "other", None)
            elif isinstance(sub, ast.withitem) and sub.optional_vars is not None:
                for name in _names_in(sub.optional_vars):
                    scope.bind(name, "other", None)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                self._import(sub)
                for alias in sub.names:
                    name = (alias.asname or alias.name).split(".")[0]
                    module = isinstance(sub, ast.Import)
                    scope.bind(name, "module-import" if module else "import", sub)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                continue
        for child, child_kind in nested:
            self._build_scope(child, scope, child_kind)
        return scope

    def _mark_guarded(self) -> None:
        for stmt in self.tree.body:
            if is_main_guard(stmt):
                assert isinstance(stmt, ast.If)
                for node in _own_nodes(stmt.body):
                    self.guarded.add(node)

    def _find_generators(self) -> None:
        for node, own in self.own.items():
            if isinstance(node, _FUNCTIONS) and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
                self.generators.add(node)

    def _scope_kind(self, binding: _Binding) -> str:
        """Where a definition lives: ``function``, ``main-guard``, ``notebook``, ``module``."""
        if binding.scope.in_function:
            return "function"
        if binding.node in self.guarded:
            return "main-guard"
        if self.notebook:
            return "notebook"
        return "module"

    # -- the value chase -----------------------------------------------------------------------

    def _hit(self, hit: Hit) -> None:
        key = (hit.rule, hit.line, hit.column, hit.name)
        known = self._hits.get(key)
        rank = {"yes": 0, "unknown": 1, "zero": 2}
        if known is None or rank[hit.workers] < rank[known.workers]:
            self._hits[key] = hit

    @staticmethod
    def _qualname(scope: _Scope, name: str) -> str:
        """``name`` bound in ``scope``, qualified as ``__qualname__`` would be."""
        parts = [name]
        while scope is not None and scope.kind != "module":
            owner = getattr(scope.node, "name", "<lambda>")
            parts.append(f"{owner}.<locals>" if scope.kind == "function" else owner)
            scope = scope.parent  # type: ignore[assignment]
        return ".".join(reversed(parts))

    def _definition_hit(self, binding: _Binding, reaches: str, within: tuple[str, ...],
                        workers: str, member: tuple[ast.AST, ...] = ()) -> None:
        """A hit for a definition (or a member of a class definition, ``member`` the chain of
        nested definitions after it) that reaches a worker, when where it lives makes it
        unreachable by name; nothing for a module-level definition of a ``.py`` file."""
        top = binding.node
        assert isinstance(top, (*_FUNCTIONS, ast.ClassDef))
        node = member[-1] if member else top
        assert isinstance(node, (*_FUNCTIONS, ast.ClassDef))
        where = self._scope_kind(binding)
        is_class = isinstance(node, ast.ClassDef)
        what = "class" if is_class else "function"
        qualname = ".".join([self._qualname(binding.scope, top.name), *(m.name for m in member)])  # type: ignore[attr-defined]
        if where == "function":
            if is_class:
                rule, label = "HL103", "local-class"
            else:
                rule, label = "HL102", "closure" if self._captures(node, binding.scope) else "local-function"
            owner = getattr(binding.scope.node, "name", "<lambda>")
            detail = (f"{what} {node.name!r} is defined inside {owner!r} "
                      f"(pickled by reference as '{qualname}', which no worker can import)")
        elif where == "main-guard":
            rule, label = "HL302", "local-class" if is_class else "local-function"
            detail = (f"{what} {qualname!r} is defined under the main guard: a spawned worker imports the "
                      "script as __mp_main__, where that block never ran")
        elif where == "notebook":
            rule, label = "HL303", "local-class" if is_class else "local-function"
            detail = (f"{what} {qualname!r} is defined in the notebook: a spawned worker cannot import "
                      "the kernel's __main__")
        else:
            return
        bases = tuple(self.dotted(b) for b in node.bases if self.dotted(b)) if isinstance(node, ast.ClassDef) else ()
        self._hit(Hit(rule, label, where, reaches, within, "", qualname, node.lineno,
                      node.col_offset + 1, workers, detail, bases))

    def _captures(self, node: ast.AST, scope: _Scope) -> bool:
        """Whether a nested function reads a name bound in an enclosing function."""
        inner = self.scope_of.get(node)
        if inner is None:
            return False
        local = set(inner.names)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in local:
                outer: _Scope | None = scope
                while outer is not None and outer.kind != "module":
                    if outer.kind == "function" and sub.id in outer.names:
                        return True
                    outer = outer.parent
        return False

    def chase(self, expr: ast.AST | None, scope: _Scope, reaches: str, workers: str,
              within: tuple[str, ...] = (), depth: int = 0, seen: frozenset[object] = frozenset()) -> None:
        """Follow ``expr`` (a value that reaches a worker as ``reaches``) to what it is made of."""
        if expr is None or depth > _MAX_DEPTH:
            return
        if isinstance(expr, ast.Lambda):
            where = "function" if scope.in_function else "main-guard" if expr in self.guarded else (
                "notebook" if self.notebook else "module")
            if where == "function" and getattr(scope.node, "name", "") == "__init__" and reaches.startswith("dataset."):
                where = "init"
            self._hit(Hit("HL101", "lambda", where, reaches, within, "", self._qualname(scope, "<lambda>")
                          if scope.in_function else "<lambda>", expr.lineno, expr.col_offset + 1, workers,
                          "a lambda is pickled by its name '<lambda>', which no module has"))
        elif isinstance(expr, ast.Name):
            if expr.id in seen:
                return
            for binding in scope.lookup(expr.id):
                if binding.kind in ("def", "class"):
                    self._definition_hit(binding, reaches, within, workers)
                elif binding.kind == "value":
                    self.chase(binding.node, binding.scope, reaches, workers, within, depth + 1,
                               seen | {expr.id})
                elif binding.kind == "param" and isinstance(binding.node, (*_FUNCTIONS, ast.Lambda)):
                    if isinstance(binding.node, _FUNCTIONS):
                        self._param_reach.setdefault(binding.node, {}).setdefault(expr.id, (reaches, workers))
                    default = self._default_of(binding.node, expr.id)
                    if default is not None and binding.scope.parent is not None:
                        self.chase(default, binding.scope.parent, reaches, workers, within, depth + 1,
                                   seen | {expr.id})
        elif isinstance(expr, ast.Attribute):
            self._chase_member(expr, scope, reaches, workers, within)
        elif isinstance(expr, ast.Call):
            self._chase_call(expr, scope, reaches, workers, within, depth, seen)
        elif isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            for elt in expr.elts:
                self.chase(elt, scope, reaches, workers, within, depth + 1, seen)
        elif isinstance(expr, ast.Dict):
            for value in expr.values:
                self.chase(value, scope, reaches, workers, within, depth + 1, seen)
        elif isinstance(expr, ast.IfExp):
            self.chase(expr.body, scope, reaches, workers, within, depth + 1, seen)
            self.chase(expr.orelse, scope, reaches, workers, within, depth + 1, seen)
        elif isinstance(expr, ast.BoolOp):
            for value in expr.values:
                self.chase(value, scope, reaches, workers, within, depth + 1, seen)
        elif isinstance(expr, (ast.Starred, ast.NamedExpr)):
            self.chase(expr.value, scope, reaches, workers, within, depth + 1, seen)

    @staticmethod
    def _default_of(func: ast.AST, name: str) -> ast.expr | None:
        """The default value of parameter ``name`` (evaluated where the function is defined)."""
        if not isinstance(func, (*_FUNCTIONS, ast.Lambda)):
            return None
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        offset = len(positional) - len(args.defaults)
        for i, arg in enumerate(positional):
            if arg.arg == name and i >= offset:
                return args.defaults[i - offset]
        for kwarg, kwdefault in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            if kwarg.arg == name:
                return kwdefault
        return None

    def _chase_member(self, expr: ast.Attribute, scope: _Scope, reaches: str, workers: str,
                      within: tuple[str, ...]) -> None:
        """``Local.method`` or ``Local.Nested``: a member of a class defined where no worker can
        import it is no more importable than the class."""
        chain: list[str] = []
        root: ast.AST = expr
        while isinstance(root, ast.Attribute):
            chain.append(root.attr)
            root = root.value
        if not isinstance(root, ast.Name):
            return
        for binding in scope.lookup(root.id):
            if binding.kind != "class":
                continue
            members: list[ast.AST] = []
            current: ast.AST | None = binding.node
            lambda_member = False
            for attr in reversed(chain):
                body = getattr(current, "body", []) if isinstance(current, ast.ClassDef) else []
                found = next((n for n in body if isinstance(n, (*_FUNCTIONS, ast.ClassDef)) and n.name == attr), None)
                if found is None and isinstance(current, ast.ClassDef):
                    # ``collate = lambda b: b`` in a class body: the attribute is that lambda
                    value = next((n.value for n in body if isinstance(n, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == attr for t in n.targets)), None)
                    if isinstance(value, ast.Lambda):
                        self.chase(value, self.scope_of.get(current, scope), reaches, workers, within)
                        lambda_member = True
                    break
                current = found
                if found is not None:
                    members.append(found)
            if not lambda_member:
                self._definition_hit(binding, reaches, within, workers, tuple(members))

    def _callee_bindings(self, call: ast.Call, scope: _Scope) -> list[_Binding]:
        if isinstance(call.func, ast.Name):
            return [b for b in scope.lookup(call.func.id) if b.kind in ("def", "class")]
        return []

    def _chase_call(self, call: ast.Call, scope: _Scope, reaches: str, workers: str,
                    within: tuple[str, ...], depth: int, seen: frozenset[object]) -> None:
        name = self.dotted(call.func)
        bindings = self._callee_bindings(call, scope)
        if name == "functools.partial":
            inner = (*within, "functools.partial")
            for arg in (*call.args, *(k.value for k in call.keywords)):
                self.chase(arg, scope, reaches, workers, inner, depth + 1, seen)
            return
        for binding in bindings:
            node = binding.node
            if isinstance(node, ast.ClassDef):
                self._definition_hit(binding, reaches, within, workers)
                self._chase_init(node, call, scope, reaches, workers, within, depth, seen)
            elif isinstance(node, _FUNCTIONS):
                self._chase_returns(node, call, scope, reaches, workers, within, depth, seen)
        if bindings:
            return
        if isinstance(call.func, ast.Attribute):
            self._chase_member(call.func, scope, reaches, workers, within)
        last = name.rsplit(".", 1)[-1] if name else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
        if last[:1].isupper():  # a library class: it keeps what it is given
            inner = (*within, name) if name else within
            for arg in call.args:
                self.chase(arg, scope, reaches, workers, inner, depth + 1, seen)
            for kw in call.keywords:
                sub = f"{reaches}.{kw.arg}" if kw.arg and "." not in reaches else reaches
                self.chase(kw.value, scope, sub, workers, inner, depth + 1, seen)

    def _bound_arguments(self, func: ast.AST, call: ast.Call, skip_self: bool) -> dict[str, ast.expr]:
        assert isinstance(func, _FUNCTIONS)
        positional = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
        if skip_self and positional:
            positional = positional[1:]
        out: dict[str, ast.expr] = {}
        for name, arg in zip(positional, call.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            out[name] = arg
        for kw in call.keywords:
            if kw.arg:
                out[kw.arg] = kw.value
        return out

    def _chase_init(self, cls: ast.ClassDef, call: ast.Call, scope: _Scope, reaches: str, workers: str,
                    within: tuple[str, ...], depth: int, seen: frozenset[object]) -> None:
        init = next((n for n in cls.body if isinstance(n, _FUNCTIONS) and n.name == "__init__"), None)
        if init is None or any(isinstance(n, _FUNCTIONS) and n.name in _PICKLING_HOOKS for n in cls.body):
            return
        stored = self._stored_params(init)
        for param, arg in self._bound_arguments(init, call, skip_self=True).items():
            for attr in stored.get(param, ()):
                self.chase(arg, scope, f"{reaches}.{attr}" if "." not in reaches else reaches, workers,
                           within, depth + 1, seen)

    @staticmethod
    def _stored_params(init: ast.AST) -> dict[str, list[str]]:
        """``{param: [attributes]}``: the ``self.ATTR = ...`` statements of ``__init__`` whose
        value uses the parameter (``self.t = transform``, ``self.t = Compose([transform])``)."""
        assert isinstance(init, _FUNCTIONS)
        params = _params(init.args)
        if not params:
            return {}
        me, rest = params[0], set(params[1:])
        out: dict[str, list[str]] = {}
        for node in _own_nodes(init.body):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            attrs = [t.attr for t in _targets(node)
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me]
            if not attrs:
                continue
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id in rest}
            for param in used:
                out.setdefault(param, []).extend(attrs)
        return out

    def _chase_returns(self, func: ast.AST, call: ast.Call, scope: _Scope, reaches: str, workers: str,
                       within: tuple[str, ...], depth: int, seen: frozenset[object]) -> None:
        """A call of one of the module's functions: its result holds the arguments of the
        parameters its ``return`` statements use, and what those statements make."""
        assert isinstance(func, _FUNCTIONS)
        inner = self.scope_of.get(func)
        if inner is None or func in seen:
            return
        returned: set[str] = set()
        for node in _own_nodes(func.body):
            if isinstance(node, ast.Return) and node.value is not None:
                returned |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                self.chase(node.value, inner, reaches, workers, within, depth + 1, seen | {func})
        for param, arg in self._bound_arguments(func, call, skip_self=False).items():
            if param in returned:
                self.chase(arg, scope, reaches, workers, within, depth + 1, seen)

    # -- loaders -------------------------------------------------------------------------------

    def _is_loader_call(self, call: ast.Call, scope: _Scope | None = None) -> bool:
        """A ``DataLoader`` (or subclass) construction: a callee named ``...DataLoader`` that is
        not bound in the module to something else (a function or a lambda of that name), or a
        class of the module deriving from one."""
        known = self._loader_call.get(call)
        if known is None and self._is_super_init(call) and scope is not None:
            # super().__init__(dataset, collate_fn=...) in a DataLoader subclass's method
            owner = scope.parent if scope.kind == "function" else None
            known = bool(owner and owner.kind == "class" and isinstance(owner.node, ast.ClassDef)
                         and self._is_loader_class(owner.node))
            self._loader_call[call] = known
        if known is None:
            name = self.dotted(call.func)
            bound = self._callee_all(call, scope or self.module)
            classes = [b.node for b in bound if isinstance(b.node, ast.ClassDef)]
            if classes:
                known = any(self._is_loader_class(c) for c in classes)
            elif bound and all(b.kind in ("def", "value", "param", "other") for b in bound):
                known = False  # a name of the user's own that shadows the class
            else:
                known = name.rsplit(".", 1)[-1].endswith("DataLoader")
            self._loader_call[call] = known
        return known

    @staticmethod
    def _is_super_init(call: ast.Call) -> bool:
        func = call.func
        return (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super")

    def _callee_all(self, call: ast.Call, scope: _Scope) -> list[_Binding]:
        return scope.lookup(call.func.id) if isinstance(call.func, ast.Name) else []

    def _is_loader_class(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        for base in cls.bases:
            base = _unsubscripted(base)
            if self.dotted(base).rsplit(".", 1)[-1].endswith("DataLoader"):
                return True
            if isinstance(base, ast.Name) and depth < 10:
                for b in self.module.lookup(base.id):
                    if isinstance(b.node, ast.ClassDef) and self._is_loader_class(b.node, depth + 1):
                        return True
        return False

    def workers_of(self, call: ast.Call, scope: _Scope) -> str:
        """``yes``, ``zero`` or ``unknown``: the ``num_workers`` of a loader call."""
        value: ast.AST | None = None
        for arg, given in self._keywords(call):
            if arg == "num_workers":
                value = given
            elif arg is None:
                return "unknown"
        if value is None and len(call.args) > _NUM_WORKERS_POSITION:
            value = call.args[_NUM_WORKERS_POSITION]
        if value is None:
            return "unknown" if any(isinstance(a, ast.Starred) for a in call.args) else "zero"
        return self._literal_workers(value, scope, 0)

    def _literal_workers(self, value: ast.AST, scope: _Scope, depth: int) -> str:
        if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
            return "zero" if value.value == 0 else "yes"
        if isinstance(value, ast.Name) and depth < 4:
            bound = scope.lookup(value.id)
            if len(bound) == 1 and bound[0].kind == "value" and bound[0].node is not None:
                return self._literal_workers(bound[0].node, bound[0].scope, depth + 1)
        return "unknown"

    def _calls_with_scope(self) -> list[tuple[ast.Call, _Scope]]:
        """Every call, with the scope its names are looked up in (computed once)."""
        if self._calls is None:
            self._calls = [(sub, self.scope_of[node]) for node, own in self.own.items()
                           for sub in own if isinstance(sub, ast.Call)]
        return self._calls

    @staticmethod
    def _keywords(call: ast.Call) -> Iterator[tuple[str | None, ast.expr]]:
        """``(name, value)`` of each keyword, a literal ``**{"name": value}`` opened."""
        for kw in call.keywords:
            if kw.arg is None and isinstance(kw.value, ast.Dict):
                for key, value in zip(kw.value.keys, kw.value.values, strict=False):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        yield key.value, value
                    else:
                        yield None, value
            else:
                yield kw.arg, kw.value

    def forks(self, call: ast.Call) -> bool:
        """The loader's workers are forked (``multiprocessing_context="fork"``, or
        ``get_context("fork")``): they inherit the dataset, nothing of it is pickled, and the
        script is not imported again (spdl's ``multi_thread_preprocessing.py`` example)."""
        for arg, value in self._keywords(call):
            if arg != "multiprocessing_context":
                continue
            if isinstance(value, ast.Constant):
                return value.value == "fork"
            if isinstance(value, ast.Call) and self.dotted(value.func).endswith("get_context") and value.args:
                first = value.args[0]
                return isinstance(first, ast.Constant) and first.value == "fork"
        return False

    def _loader_arguments(self, call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
        if self.forks(call):
            return
        for name, position in DATALOADER_ARGS.items():
            for arg, value in self._keywords(call):
                if arg == name:
                    yield name, value
            if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
                yield name, call.args[position]

    def _helpers(self) -> None:
        """Which parameters of the module's functions reach a loader argument inside them."""
        for call, scope in self._calls_with_scope():
            if self._is_loader_call(call, scope):
                workers = self.workers_of(call, scope)
                for name, value in self._loader_arguments(call):
                    if isinstance(value, ast.Name):
                        for binding in scope.lookup(value.id):
                            if binding.kind == "param" and isinstance(binding.node, _FUNCTIONS):
                                self._param_reach.setdefault(binding.node, {})[value.id] = (name, workers)

    def _loaders(self) -> None:
        calls = list(self._calls_with_scope())
        for call, scope in calls:
            if self._is_loader_call(call, scope):
                workers = self.workers_of(call, scope)
                for name, value in self._loader_arguments(call):
                    self.chase(value, scope, name, workers)
        # helper functions: make_loader(ds, lambda b: b)
        for call, scope in calls:
            for binding in self._callee_bindings(call, scope):
                reach = self._param_reach.get(binding.node) if binding.kind == "def" and binding.node else None
                if not reach or binding.node is None:
                    continue
                for param, arg in self._bound_arguments(binding.node, call, skip_self=False).items():
                    if param in reach:
                        where, workers = reach[param]
                        self.chase(arg, scope, where, workers)

    # -- Dataset classes -----------------------------------------------------------------------

    def _datasets(self) -> list[ast.ClassDef]:
        classes = [n for n in self.scope_of if isinstance(n, ast.ClassDef)]
        names: set[str] = set()
        found: list[ast.ClassDef] = []
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls in found:
                    continue
                for base in cls.bases:
                    dotted = self.dotted(_unsubscripted(base))
                    last = dotted.rsplit(".", 1)[-1]
                    if (last.endswith("Dataset") and not last.endswith("DataLoader")) or dotted in names:
                        found.append(cls)
                        names.add(cls.name)
                        changed = True
                        break
        return found

    def _resource(self, value: ast.AST, init_scope: _Scope, attr: str) -> tuple[str, str] | None:
        """``(label, call)`` when ``value`` (stored as ``self.ATTR`` in ``__init__``) is a resource."""
        if isinstance(value, ast.GeneratorExp):
            return "generator", "generator expression"
        if isinstance(value, ast.Name):
            bound = init_scope.lookup(value.id)
            last = bound[-1] if bound else None
            if last is not None and last.kind == "module-import":
                return "module", f"import {self.aliases.get(value.id, value.id)}"
            if last is not None and last.kind == "value" and last.scope is init_scope and last.node is not None:
                return self._resource(last.node, init_scope, attr)
            return None
        if isinstance(value, ast.Call):
            name = self.dotted(value.func)
            if isinstance(value.func, ast.Attribute) and not name:
                if value.func.attr in GENERATOR_METHODS:
                    return "generator", f".{value.func.attr}()"
                if value.func.attr in _SELF_RETURNING and isinstance(value.func.value, ast.Call):
                    return self._resource(value.func.value, init_scope, attr)
                return None
            if name.startswith("itertools."):
                return "itertools", name
            if name in ("importlib.import_module", "__import__"):
                return "module", name
            if name == "numpy.load":
                text = ast.unparse(value.args[0]) if value.args else ""
                if "npz" not in text.lower() and "npz" not in attr.lower():
                    return None
            label = RESOURCE_CALLS.get(name)
            if label:
                return label, name
            if isinstance(value.func, ast.Name):
                for binding in init_scope.lookup(value.func.id):
                    if binding.node in self.generators:
                        return "generator", value.func.id
        return None

    def _dataset_attributes(self) -> None:
        for cls in self._dataset_classes:
            if any(isinstance(n, _FUNCTIONS) and n.name in _PICKLING_HOOKS for n in cls.body):
                continue
            init = next((n for n in cls.body if isinstance(n, _FUNCTIONS) and n.name == "__init__"), None)
            if init is None:
                continue
            params = _params(init.args)
            if not params:
                continue
            me = params[0]
            init_scope = self.scope_of[init]
            for node in _own_nodes(init.body):
                if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                    continue
                for target in _targets(node):
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == me):
                        continue
                    reaches = f"dataset.{target.attr}"
                    found = self._resource(node.value, init_scope, target.attr)
                    if found:
                        label, call = found
                        rule = "HL202" if label == "itertools" else "HL201"
                        what = {"open-file": "an open file", "sqlite": "a sqlite3 connection",
                                "lock": "a lock", "generator": "a generator", "module": "a module object",
                                "torch-generator": "a torch.Generator", "itertools": "an itertools iterator"
                                }.get(label, f"a {call} handle")
                        when = ("pickled up to Python 3.13 only (3.14 removed itertools pickling)"
                                if rule == "HL202" else "which cannot be pickled into a spawn or forkserver worker")
                        self._hit(Hit(rule, label, "init", reaches, (), call, f"{cls.name}.{target.attr}",
                                      node.lineno, node.col_offset + 1, "unknown",
                                      f"{cls.name}.__init__ stores {what} ({call}) as self.{target.attr}, {when}"))
                    else:
                        self.chase(node.value, init_scope, reaches, "unknown")

    # -- main guard ----------------------------------------------------------------------------

    def _starts_workers(self, node: ast.AST, scope: _Scope, funcs: dict[ast.AST, bool]) -> bool:
        if isinstance(node, ast.Call):
            name = self.dotted(node.func)
            last = name.rsplit(".", 1)[-1]
            if self._is_loader_call(node, scope):
                return self.workers_of(node, scope) != "zero" and not self.forks(node)
            if name in _WORKER_STARTS:
                return True
            if last in _WORKER_CLASSES and not name.startswith("multiprocessing.dummy"):
                head = name.rpartition(".")[0]
                resolved = head.split(".")[0] in self.aliases.values() or head in self.aliases.values()
                if (head.startswith(_PROCESS_MODULES) or name == last and self.aliases.get(last, "").startswith(_PROCESS_MODULES)
                        or (isinstance(node.func, ast.Attribute) and not resolved)):
                    return True
            for binding in self._callee_bindings(node, scope):
                if binding.kind == "def" and binding.node is not None and funcs.get(binding.node):
                    return True
        return False

    def _main_guard(self) -> None:
        funcs: dict[ast.AST, bool] = {}
        calls_of: dict[ast.AST, list[ast.Call]] = {}
        for call, scope in self._calls_with_scope():
            if isinstance(scope.node, _FUNCTIONS):
                calls_of.setdefault(scope.node, []).append(call)
        changed = True
        while changed:
            changed = False
            for func, calls in calls_of.items():
                if funcs.get(func):
                    continue
                scope = self.scope_of[func]
                if any(self._starts_workers(c, scope, funcs) for c in calls):
                    funcs[func] = True
                    changed = True
        for stmt in self.tree.body:
            if is_main_guard(stmt) or isinstance(stmt, (*_FUNCTIONS, ast.ClassDef, ast.Import, ast.ImportFrom)):
                continue
            for node in _own_nodes([stmt]):
                if self._starts_workers(node, self.module, funcs):
                    assert isinstance(node, ast.Call)
                    what = self.dotted(node.func) or ast.unparse(node.func)
                    self._hit(Hit("HL301", "main-guard", "module", "", (), what, what, node.lineno,
                                  node.col_offset + 1, "yes",
                                  f"{what}(...) starts worker processes at import time, outside "
                                  "'if __name__ == \"__main__\":': a spawn or forkserver worker "
                                  "imports the script again and runs it"))
                    return

    @property
    def hits(self) -> list[Hit]:
        """Every hit, sorted by line, column and rule."""
        return sorted(self._hits.values(), key=lambda h: (h.line, h.column, h.rule, h.name))
