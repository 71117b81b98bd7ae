"""File replacement that survives Windows' transient sharing violations (standard library only,
so the cell process can use it too)."""

from __future__ import annotations

import os
import time

__all__ = ["REPLACE_RETRY_S", "replace_file"]

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
