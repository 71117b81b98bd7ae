"""What a cell's result depends on, as one content hash: the key of ``harness run --changed``.

A cell's inputs are

* the case's own file, and every file of the catalogue or of the project that it imports,
  transitively (found by reading ``import`` statements with :mod:`ast`, never by importing:
  ``from harness_cases.resources._files import ...``, ``from . import quick_a``, ``import mypkg.data``);
* the harness code that runs inside the cell (the case API :mod:`harness.case`, the cell entry,
  the warm template, the start-up hook), the harness version and the classifier version;
* the runner: Python (version and implementation), torch, OS, architecture, the emulated
  platform profile;
* the cell itself: start method, worker count and timeout.

Files are hashed by content (SHA-256), so a touched but unchanged file changes nothing. A
module that resolves outside the catalogue's and the project's directories (the standard
library, site-packages) is not followed: torch and Python are covered by their versions.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import __version__
from harness.catalogue.discover import Case
from harness.classify.classifier import CLASSIFIER_VERSION

__all__ = ["HARNESS_CELL_FILES", "InputHasher"]

_HARNESS = Path(__file__).resolve().parent.parent
#: The harness files whose code runs inside a cell process: the case API and everything in
#: :mod:`harness.child` that a cell runs (the cell, the warm template it is forked from, the
#: start-up hook and its peak reporter).
HARNESS_CELL_FILES = tuple(_HARNESS / name for name in
                           ("case.py", "child/cell.py", "child/warm_server.py", "child/fileio.py",
                            "child/request.py", "child/status.py", "child/jsonfields.py", "child/warm_protocol.py",
                            "child/cellsite/sitecustomize.py", "child/cellsite/_harness_cell_peaks.py"))
#: Largest file hashed, in bytes (a bigger one counts by its size and modification time).
MAX_HASHED_BYTES = 64 << 20


def _imported_names(tree: ast.AST, package: str) -> set[str]:
    """Absolute dotted names a module imports (``from . import x`` resolved against ``package``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                if node.level - 1 > len(parts):
                    continue
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            if not base:
                continue
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


#: What runs a notebook case in its cell (an input of every notebook case).
NOTEBOOK_DRIVER = _HARNESS / "notebook" / "kernel" / "driver.py"


def _python_source(path: Path) -> str:
    """A module's source; a notebook's code cells joined, IPython's ``%`` and ``!`` lines left out."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text).get("cells", [])
    sources = ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source", ""))
               for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    return "\n".join(line for src in sources for line in src.splitlines()
                     if not line.lstrip().startswith(("%", "!")))


class InputHasher:
    """Computes the input hash of cells, caching file hashes and import closures for one run.

    Args:
        runner: the shard's ``runner`` object (``python``, ``python_implementation``,
            ``torch``, ``os``, ``arch``, ``profile``).
    """

    def __init__(self, runner: Mapping[str, Any]) -> None:
        self._files: dict[Path, str] = {}
        self._closure: dict[Path, tuple[Path, ...]] = {}
        self._case_hashes: dict[Path, dict[str, str]] = {}  # case file -> its files' hashes
        keep = ("python", "python_implementation", "torch", "os", "arch", "profile")
        self._base = {
            "harness": __version__,
            "classifier": CLASSIFIER_VERSION,
            "cell_code": [self._file_hash(p) for p in HARNESS_CELL_FILES],
            "runner": {k: runner.get(k) for k in keep},
        }

    def _file_hash(self, path: Path) -> str:
        path = Path(path)
        known = self._files.get(path)
        if known is not None:
            return known
        digest = hashlib.sha256()
        try:
            if path.stat().st_size > MAX_HASHED_BYTES:
                st = path.stat()
                digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
            else:
                digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
        self._files[path] = digest.hexdigest()
        return self._files[path]

    @staticmethod
    def _resolve(name: str, roots: list[Path]) -> Path | None:
        """The file of module ``name`` under one of ``roots`` (a module or a package), or ``None``."""
        parts = name.split(".")
        for root in roots:
            base = root.joinpath(*parts)
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None

    def case_files(self, case: Case) -> tuple[Path, ...]:
        """The case's file and every catalogue or project file it imports, transitively, sorted."""
        known = self._closure.get(case.path)
        if known is not None:
            return known
        package_name = case.module.split(".")[0]
        seen: set[Path] = set()
        todo = [(case.path, case.module)]
        while todo:
            path, module = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            try:
                tree = ast.parse(_python_source(path))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
                continue
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for name in _imported_names(tree, package):
                # The catalogue's own package under its root (it may be site-packages: nothing
                # else is followed there); anything under the project's directory; for a
                # notebook, what its kernel imports from the notebook's own folder.
                roots = [case.root] if name.split(".")[0] == package_name else []
                if case.import_root:
                    roots.append(case.import_root)
                if path.suffix == ".ipynb":
                    roots.append(path.parent)
                found = self._resolve(name, roots)
                if found is not None and found not in seen:
                    todo.append((found, name))
        if case.path.suffix == ".ipynb":
            seen.add(NOTEBOOK_DRIVER)  # the notebook runs through it, in the cell
        out = tuple(sorted(seen))
        self._closure[case.path] = out
        return out

    def cell(self, case: Case, method: str, num_workers: int, timeout_s: float) -> str:
        """The input hash (64 hex digits) of one cell of ``case``."""
        files = self._case_hashes.get(case.path)
        if files is None:
            files = self._case_hashes[case.path] = {
                str(p.relative_to(case.root)) if p.is_relative_to(case.root) else str(p): self._file_hash(p)
                for p in self.case_files(case)}
        doc = {**self._base, "files": files, "method": method, "num_workers": num_workers,
               "timeout_s": timeout_s, "case": case.id}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
