"""What ``harness lint`` reads: Python files and notebooks, found under the paths it is given.

A notebook (``.ipynb``, nbformat 4 JSON) becomes one Python module: its code cells joined in
order, each IPython line (``%magic``, ``!shell``, ``?help``) blanked so that line numbers stay
those of the cell. A line of that module maps back to ``(cell, line)``: the cell's 1-based index
among all the notebook's cells, markdown included, as Jupyter numbers them, and the line in
that cell. Nothing here imports IPython or nbformat: the hook runs without them.

Folders are walked in sorted order, skipping what is not a project's own source (``.git``,
virtual environments, ``site-packages``, build and cache folders).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SKIPPED_DIRS", "Source", "SourceError", "iter_files", "read_source"]

#: Folder names never walked into.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".nox", ".tox", ".venv", "venv", "env", ".env", "__pycache__",
    "site-packages", "node_modules", "build", "dist", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".ipynb_checkpoints", ".eggs",
})
#: Largest file read, in bytes: a bigger one is reported, not parsed.
MAX_FILE_BYTES = 16 << 20


class SourceError(Exception):
    """A file that cannot be read or parsed: ``str(exc)`` is one line naming it."""


@dataclass(frozen=True)
class Source:
    """One file as Python text.

    Attributes:
        path: the file, as given or found.
        text: Python source (a notebook's code cells joined, one line per cell line).
        cells: for a notebook, ``(cell, first_line)`` per code cell: the cell's 1-based index
            among all cells and the line of ``text`` where it starts; ``()`` for a ``.py`` file.
    """

    path: Path
    text: str
    cells: tuple[tuple[int, int], ...] = field(default=())

    @property
    def notebook(self) -> bool:
        """Whether the file is a notebook."""
        return self.path.suffix == ".ipynb"

    def locate(self, line: int) -> tuple[int | None, int]:
        """``(cell, line in that cell)`` of a line of :attr:`text`; ``(None, line)`` for a ``.py`` file."""
        if not self.cells:
            return None, line
        cell, start = self.cells[0]
        for index, first in self.cells:
            if first > line:
                break
            cell, start = index, first
        return cell, line - start + 1


def _is_ipython_line(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(("%", "!", "?")) or (stripped.endswith("?") and not stripped.startswith("#"))


def _cell_text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source or "")


def _notebook_text(path: Path, raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SourceError(f"{path}: not a notebook (not JSON: {exc})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise SourceError(f"{path}: not a notebook (no 'cells' list)")
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        starts.append((index, len(lines) + 1))
        cell_lines = _cell_text(cell.get("source")).splitlines() or [""]
        # A cell magic (%%bash) makes the whole cell something else than Python.
        if cell_lines[0].lstrip().startswith("%%"):
            cell_lines = [""] * len(cell_lines)
        lines.extend("" if _is_ipython_line(line) else line for line in cell_lines)
    return "\n".join(lines) + "\n", tuple(starts)


def read_source(path: Path) -> Source:
    """Read ``path`` (``.py`` or ``.ipynb``) as Python text.

    Raises:
        SourceError: it cannot be read, is too large, is not UTF-8, or is not a notebook.
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SourceError(f"{path}: too large to lint ({size} bytes; at most {MAX_FILE_BYTES})")
        raw = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix == ".ipynb":
        text, cells = _notebook_text(path, raw)
        return Source(path, text, cells)
    return Source(path, raw)


def _lintable(path: Path) -> bool:
    return path.suffix in (".py", ".ipynb")


def iter_files(paths: Iterable[Path], exclude: Iterable[str] = ()) -> Iterator[Path]:
    """Every ``.py`` and ``.ipynb`` file under ``paths`` (a file is taken as given, whatever its
    suffix), each once, folders walked in sorted order.

    Args:
        paths: files and folders.
        exclude: :mod:`fnmatch` globs matched against each path found in a folder (as a POSIX
            path relative to that folder, and its name): ``tests/fixtures/*``, ``*_pb2.py``.

    Raises:
        SourceError: a path that does not exist.
    """
    import fnmatch

    patterns = tuple(exclude)
    seen: set[Path] = set()
    for given in paths:
        if given.is_file():
            if given not in seen:
                seen.add(given)
                yield given
            continue
        if not given.is_dir():
            raise SourceError(f"{given}: no such file or folder")
        for root, dirs, files in os.walk(given):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
            for name in sorted(files):
                path = Path(root) / name
                if not _lintable(path) or path in seen:
                    continue
                rel = path.relative_to(given).as_posix()
                if any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(name, p) for p in patterns):
                    continue
                seen.add(path)
                yield path
