"""The rule of :mod:`harness.child`: code that runs in another process imports nothing of the
harness outside that package, except the public case API :mod:`harness.case`, and one module
loaded after the case has ended: :mod:`harness.inspect.post_mortem`, which names the culprits of
a failed ``harness reproduce`` run (``harness.child.cell._culprits``).

Checked on the source (every ``import``/``from`` statement, at any depth, with ``ast``), and
on a real interpreter: importing each module must not load any other ``harness`` module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import harness.child

CHILD = Path(harness.child.__file__).parent
ALLOWED = ("harness.child", "harness.case")
MODULES = sorted(p for p in CHILD.rglob("*.py"))


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(CHILD)))
def test_a_child_module_imports_nothing_else_of_the_harness(path):
    bad = [n for n in _imports(path)
           if (n == "harness" or n.startswith("harness.")) and not n.startswith(ALLOWED)
           and n != "harness"]  # ``import harness.child`` imports the package only
    assert not bad, f"{path} imports {bad}"


def test_importing_the_child_modules_loads_no_other_harness_module():
    code = (
        "import sys, importlib\n"
        "for m in ('harness.child.cell', 'harness.child.warm_server', 'harness.child.watchdog',"
        " 'harness.child.fileio', 'harness.child.request', 'harness.child.status',"
        " 'harness.child.warm_protocol', 'harness.child.jsonfields'):\n"
        "    importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = eval(out.stdout)  # noqa: S307 - our own printed list of module names
    assert [m for m in loaded if m != "harness" and not m.startswith(ALLOWED)] == []


def test_every_child_module_a_cell_runs_is_an_input_of_changed():
    """``harness run --changed`` reruns a cell when code that runs inside it changed: every
    module of :mod:`harness.child` that the cell or the warm template loads is hashed."""
    from harness.run.inputs import HARNESS_CELL_FILES

    # Paths relative to the package, so an installed harness (a nox session) and a checkout on
    # sys.path (``python -c`` puts the working directory first) compare alike.
    code = (
        "import os, sys, harness, harness.child.cell, harness.child.warm_server\n"
        "root = os.path.dirname(os.path.realpath(harness.__file__))\n"
        "print([os.path.relpath(os.path.realpath(m.__file__), root) for n, m in list(sys.modules.items())"
        " if n.startswith('harness.child')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = {Path(f) for f in eval(out.stdout)}  # noqa: S307 - our own printed list of paths
    package = Path(harness.child.__file__).resolve().parent.parent
    hashed = {p.resolve().relative_to(package) for p in HARNESS_CELL_FILES}
    assert sorted(str(p) for p in loaded - hashed if p.name != "__init__.py") == []


def test_the_one_late_import_is_made_after_the_case_ended_only():
    """``harness.inspect.post_mortem`` is named once in the cell's source, inside ``_culprits``,
    which only the failure branch of ``_run_case`` calls, and only for a request with ``locate``."""
    source = (CHILD / "cell.py").read_text(encoding="utf-8")
    assert source.count('"harness.inspect.post_mortem"') == 1
    tree = ast.parse(source)
    culprits = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_culprits")
    assert '"harness.inspect.post_mortem"' in ast.get_source_segment(source, culprits)
    callers = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
               and any(isinstance(c, ast.Call) and getattr(c.func, "id", "") == "_culprits" for c in ast.walk(n))]
    assert callers == ["_run_case"]
