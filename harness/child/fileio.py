"""Writing a file whole or not at all, and a replace that survives Windows' transient sharing
violations (standard library only, so the cell process can use it too). Every file the harness
writes for others to read (a cell's result, a shard, the report's files) goes through
:func:`write_atomic`."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable

__all__ = ["REPLACE_RETRY_S", "replace_file", "write_atomic"]

#: Seconds between tries of :func:`replace_file`, doubling; about 3 s in all.
REPLACE_RETRY_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.5)


def replace_file(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """``os.replace(src, dst)``, retried while it fails with a transient ``PermissionError``.

    On Windows, renaming over a file that another process has open without
    ``FILE_SHARE_DELETE`` (a reader such as a report being rendered, an indexer or a virus
    scanner) fails with ``PermissionError`` (``ERROR_ACCESS_DENIED`` / sharing violation)
    until that handle is closed, usually within milliseconds (CPython docs, ``os.replace``;
    ``MoveFileEx``). POSIX renames never fail that way, so there the first error is final.

    Raises:
        PermissionError: still refused after about 3 s of retries (Windows), or at once (POSIX).
        OSError: any other failure, at once.
    """
    for delay in (*REPLACE_RETRY_S, None):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if delay is None or os.name != "nt":
                raise
            time.sleep(delay)


def write_atomic(path: str | os.PathLike[str], data: bytes | Callable[[str], None]) -> None:
    """Write ``path`` whole or not at all: into a temporary file in the same folder, then
    :func:`replace_file` over ``path``. A reader never sees a half-written file, and a failure
    leaves the old file as it was and no temporary file behind.

    Args:
        path: the file; its folder is created if missing.
        data: the bytes, or a function that writes the temporary file given its path (a
            library that writes files itself, such as matplotlib's ``savefig``).

    The file gets the permissions a new file gets under the umask (``0o666 & ~umask``), not
    the ``0o600`` of :func:`tempfile.mkstemp`: shards and reports are meant to be read.

    Raises:
        OSError: the folder, the temporary file or the rename failed.
    """
    folder, name = os.path.split(os.fspath(path))
    os.makedirs(folder or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        replace_file(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
