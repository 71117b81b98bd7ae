"""The files side of ``harness lint --fix`` and ``--diff``: read each ``.py`` file, fix its text
(:func:`harness.lint.fix.fix_text`), and show the change or write it back safely.

Safety, for a tool that rewrites a user's source:

* a file that does not parse is never rewritten (it is one line naming it, as for ``lint``);
* a file whose bytes changed between reading and writing (an editor saved it meanwhile) is not
  overwritten: one line names it;
* a file that cannot be written (read-only, or its folder is) is one line naming it;
* the write is atomic: a temporary file in the same folder, flushed, given the original's
  permission bits, then :func:`os.replace` (POSIX ``rename``), so a reader sees the old or the
  new file, never half of one. A symbolic link is followed: the file it points at is replaced.

The encoding (PEP 263 declaration or BOM, :func:`tokenize.detect_encoding`) and the line
endings of each file are kept.
"""

from __future__ import annotations

import difflib
import io
import os
import stat
import tempfile
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.lint.fix import fix_text
from harness.lint.sources import SourceError, iter_files

__all__ = ["RewriteReport", "rewrite_paths"]


@dataclass
class RewriteReport:
    """What ``--fix`` or ``--diff`` did.

    Attributes:
        diff: the unified diff of every fixed file (``a/PATH`` and ``b/PATH``), or ``""``.
        fixed: how many findings were fixed (or, with ``--diff``, would be).
        files: how many files were (or would be) rewritten.
        notes: one line per fixed finding and per fixable finding left as it was, with why.
        errors: one line per file that could not be read, parsed or written.
    """

    diff: str = ""
    fixed: int = 0
    files: int = 0
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _decode(raw: bytes, path: Path) -> tuple[str, str]:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot be decoded ({exc}); not fixed") from None


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path``'s content by ``data`` in one rename.

    Raises:
        OSError: the folder or the file cannot be written.
    """
    target = path.resolve()
    mode = stat.S_IMODE(target.stat().st_mode)
    folder = stat.S_IMODE(target.parent.stat().st_mode)
    # the permission bits, not only access(2): root may write anything, but a file or folder
    # its owner made read-only is not this tool's to rewrite
    if not os.access(target, os.W_OK) or not mode & 0o222 or not folder & 0o222:
        raise PermissionError(f"{path} is read-only")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".harness-fix", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def rewrite_paths(paths: Iterable[Path], *, write: bool, select: Sequence[str] = (), ignore: Sequence[str] = (),
                  exclude: Sequence[str] = ()) -> RewriteReport:
    """Fix every ``.py`` file under ``paths``.

    Args:
        paths: files and folders (:func:`harness.lint.sources.iter_files`); notebooks are
            left as they are (their findings stay findings).
        write: rewrite the files (``--fix``); ``False`` only builds the diff (``--diff``).
        select, ignore: rule codes or prefixes.
        exclude: globs of files to leave out of folders.

    Returns:
        The :class:`RewriteReport`.

    Raises:
        SourceError: a given path does not exist (before anything is read or written).
    """
    from harness.inspect.hints import catalogue_hints

    report = RewriteReport()
    diffs: list[str] = []
    hints = catalogue_hints()
    for path in iter_files(list(paths), exclude):
        if path.suffix != ".py":
            continue
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or device would block or never end
                report.errors.append(f"{path}: not a regular file; not fixed")
                continue
            raw = path.read_bytes()
            text, encoding = _decode(raw, path)
            result = fix_text(text, path, select=select, ignore=ignore, hints=hints)
        except SourceError as exc:
            report.errors.append(str(exc).replace("; not checked", "; not fixed"))
            continue
        except OSError as exc:
            report.errors.append(f"{path}: cannot be read ({exc.strerror or exc}); not fixed")
            continue
        for finding, why in result.refused:
            suggestion = f"; the catalogue's fix: harness explain {finding.fix}" if finding.fix else ""
            spot = result.places.get(id(finding), f"{finding.line}:{finding.column}")
            report.notes.append(f"{path}:{spot}: {finding.rule} not fixed: {why}{suggestion}")
        if result.text == text:
            continue
        for line in result.fixed:
            report.notes.append(f"{path}:{line}")
        diffs.extend(difflib.unified_diff(text.splitlines(keepends=True), result.text.splitlines(keepends=True),
                                          f"a/{path.as_posix().lstrip('/')}", f"b/{path.as_posix().lstrip('/')}"))
        if diffs and not diffs[-1].endswith(("\n", "\r")):
            diffs[-1] += "\n\\ No newline at end of file\n"
        if write:
            try:
                if path.read_bytes() != raw:
                    report.errors.append(f"{path}: changed while harness lint --fix ran; not rewritten")
                    continue
                _write_atomically(path, result.text.encode(encoding))
            except PermissionError:
                report.errors.append(f"{path}: is read-only; not fixed")
                continue
            except OSError as exc:
                report.errors.append(f"{path}: cannot be written ({exc.strerror or exc}); not fixed")
                continue
        report.fixed += len(result.fixed)
        report.files += 1
    report.diff = "".join(diffs)
    return report
