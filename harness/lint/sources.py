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

import ast
import errno
import json
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SKIPPED_DIRS", "Source", "SourceError", "iter_files", "read_source", "split_lines"]

#: Folder names never walked into.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".nox", ".tox", ".venv", "venv", "env", ".env", "__pycache__",
    "site-packages", "node_modules", "build", "dist", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".ipynb_checkpoints", ".eggs",
})
#: Largest file read, in bytes: a bigger one is reported, not parsed.
MAX_FILE_BYTES = 16 << 20


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: IPython lines that are not Python: a line magic, a shell escape, help (``?x``, ``x?``).
_IPYTHON_LINE = re.compile(r"^\s*(?:%|!(?!=)|\?+[\w.]|[\w.]+\?\??\s*$)")
#: ``files = !ls``, ``x = %pwd``: an assignment from IPython (the name stays bound).
_IPYTHON_ASSIGN = re.compile(r"^(\s*[\w.,\s]+?=\s*)[!%].*$")
#: Cell magics whose body is Python (``%%time``); any other ``%%`` cell is not Python.
_PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun", "debug")


def split_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer counts them (``\\n``, ``\\r\\n``, ``\\r``), never at
    U+2028, form feeds or other characters :meth:`str.splitlines` breaks at."""
    return _LINE_BREAK.split(text)


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
        problems: one line per notebook cell that is not Python even without its IPython lines
            (left out; the other cells are still checked, as Jupyter still runs them).
    """

    path: Path
    text: str
    cells: tuple[tuple[int, int], ...] = field(default=())
    problems: tuple[str, ...] = field(default=())

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


def _cell_text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source or "")


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _python_lines(cell_lines: list[str]) -> list[str] | None:
    """The cell as Python, one line per cell line; ``None`` when it is not Python at all.

    A cell that parses as it is stays as it is. Otherwise each IPython line (``%magic``,
    ``!shell``, ``?help``) is blanked and each ``x = !cmd`` becomes ``x = None``; a ``%%time``
    cell loses its first line only, and any other cell magic (``%%bash``) the whole cell.
    """
    first = cell_lines[0].lstrip()
    if first.startswith("%%"):
        magic = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return [""] * len(cell_lines)
        cell_lines = ["", *cell_lines[1:]]
    if _parses(cell_lines):
        return cell_lines
    out = []
    for line in cell_lines:
        assign = _IPYTHON_ASSIGN.match(line)
        if assign:
            out.append(assign.group(1) + "None")
        elif _IPYTHON_LINE.match(line):
            out.append("")
        else:
            out.append(line)
    return out if _parses(out) else None


def _notebook_text(path: Path, raw: str) -> tuple[str, tuple[tuple[int, int], ...], tuple[str, ...]]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SourceError(f"{path}: not a notebook (not JSON: {exc})") from None
    if isinstance(data, dict) and "worksheets" in data and "cells" not in data:
        raise SourceError(f"{path}: an nbformat 3 notebook, not supported (convert it: "
                          "jupyter nbconvert --to notebook --nbformat 4)")
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise SourceError(f"{path}: not a notebook (no 'cells' list)")
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    problems: list[str] = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        starts.append((index, len(lines) + 1))
        cell_lines = split_lines(_cell_text(cell.get("source")).rstrip("\r\n")) or [""]
        python = _python_lines(cell_lines)
        if python is None:
            problems.append(f"{path}: cell {index} does not parse, even without its IPython lines; "
                            "left out, the other cells checked")
            python = [""] * len(cell_lines)
        lines.extend(python)
    return "\n".join(lines) + "\n", tuple(starts), tuple(problems)


def read_source(path: Path) -> Source:
    """Read ``path`` (``.py`` or ``.ipynb``) as Python text.

    Raises:
        SourceError: it cannot be read, is too large, is not UTF-8, or is not a notebook.
    """
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block, /dev/zero never ends
            raise SourceError(f"{path}: not a regular file; not read")
        if info.st_size > MAX_FILE_BYTES:
            raise SourceError(f"{path}: too large to lint ({info.st_size} bytes; at most {MAX_FILE_BYTES})")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        encoding = "utf-8-sig"
        if path.suffix != ".ipynb":  # PEP 263: a coding declaration, or UTF-8
            encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)[:2]).__next__)
        raw = data.decode(encoding)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        reason = f"{exc.reason} at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise SourceError(f"{path}: not text in its encoding ({reason})") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix == ".ipynb":
        text, cells, problems = _notebook_text(path, raw)
        return Source(path, text, cells, problems)
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

    def excluded(path: Path, *relative: str) -> bool:
        try:
            here = os.path.relpath(path)
        except ValueError:
            here = str(path)
        names = {path.name, Path(here).as_posix(), *relative}
        return any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns)

    seen: set[Path] = set()
    for given in paths:
        if str(given) == "":
            raise SourceError("an empty path was given")
        try:
            mode = given.stat().st_mode
        except FileNotFoundError:
            raise SourceError(f"{given}: no such file or folder") from None
        except ValueError as exc:  # a NUL in the name
            raise SourceError(f"{given}: cannot be read ({exc})") from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:  # no such name can exist: a bad argument, as a missing one
                raise SourceError(f"{given}: cannot be read ({exc.strerror or exc})") from None
            mode = stat.S_IFREG  # a symlink loop, no permission: reading it says so, as for a file in a folder
        if not stat.S_ISDIR(mode):  # a file (or a FIFO: read_source says so) given by name
            if given not in seen and not excluded(given):
                seen.add(given)
                yield given
            continue
        for root, dirs, files in os.walk(given):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
            for name in sorted(files):
                path = Path(root) / name
                if not _lintable(path) or path in seen:
                    continue
                if excluded(path, path.relative_to(given).as_posix()):
                    continue
                seen.add(path)
                yield path
