"""How a child process of the harness ends: streams flushed, then ``os._exit``.

``os._exit`` skips ``atexit`` hooks and the wait for non-daemon threads, so nothing the
user's code left behind keeps the process alive; standard output and error are flushed first
(each may be closed or replaced by the user's code, which is not an error here).

A module of :mod:`harness.child`: it imports nothing of the harness outside that package.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

__all__ = ["flush_and_exit"]


def flush_and_exit(status: int) -> NoReturn:
    """Flush ``sys.stdout`` and ``sys.stderr`` where they still can be, then ``os._exit(status)``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed or replaced stream
            pass
    os._exit(status)
