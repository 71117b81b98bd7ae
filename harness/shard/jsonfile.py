"""Read a JSON document from a file that nobody vouches for: bounded, strict, never blocking.

``harness report`` reads every ``*.json`` in a directory of shards gathered from CI artifacts,
and ``harness explain`` reads ``matrix.json``. Either may be a symlink to ``/dev/zero``, a FIFO,
a huge file, a deeply nested array, or JSON with ``NaN``. :func:`load_json_file` reads only a
regular file (after following symlinks; a FIFO or device is never opened for reading, and the
descriptor is opened non-blocking and checked again), at most :data:`MAX_JSON_BYTES` of it,
rejects ``NaN``, ``Infinity`` and numbers too large for a float, and refuses nesting deeper than
:data:`MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["MAX_JSON_BYTES", "MAX_JSON_DEPTH", "JSONFileError", "load_json_file"]

#: The largest JSON file read, in bytes. The largest real shard (every case on one runner, with
#: stderr tails) is under 2 MiB; 64 MiB leaves room for far bigger catalogues.
MAX_JSON_BYTES = 64 * 2**20

#: The deepest nesting of arrays and objects accepted. Shards and matrices nest about 6 deep.
MAX_JSON_DEPTH = 64


class JSONFileError(ValueError):
    """A file that is not a usable JSON document; ``str()`` is one line, without the path."""


def _not_regular(mode: int) -> JSONFileError:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return JSONFileError(f"{kind}, not a regular file; not read")


def _read_bounded(path: Path, max_bytes: int) -> bytes:
    try:
        st = os.stat(path)  # follows symlinks: what would be opened
    except OSError as exc:
        raise JSONFileError(f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(st.st_mode)
    if st.st_size > max_bytes:
        raise JSONFileError(f"{st.st_size} bytes, over the {max_bytes}-byte limit; not read")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise JSONFileError(f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between stat and open
            raise _not_regular(mode)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:  # st_size can lie (a growing file, /proc)
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise JSONFileError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise JSONFileError(f"over the {max_bytes}-byte limit; not read")
    return b"".join(chunks)


class _NotFinite(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotFinite(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"{text[:40]} does not fit a float")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def load_json_file(path: Path, max_bytes: int | None = None, max_depth: int | None = None) -> Any:
    """Parse the JSON document in ``path`` strictly, within the limits.

    Args:
        path: the file; a symlink is followed, but only to a regular file.
        max_bytes: the largest file read (default :data:`MAX_JSON_BYTES`).
        max_depth: the deepest nesting of arrays and objects accepted (default
            :data:`MAX_JSON_DEPTH`).

    Returns:
        The parsed document; every number in it is finite.

    Raises:
        JSONFileError: not a regular file, too large, unreadable, not UTF-8, not JSON (or
            truncated), ``NaN``/``Infinity`` or an out-of-range number, or nested too deeply.
    """
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    max_depth = MAX_JSON_DEPTH if max_depth is None else max_depth
    data = _read_bounded(Path(path), max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONFileError(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        # ``exc.msg`` may end with "at" ("Unterminated string starting at"): name the place once.
        raise JSONFileError(f"invalid or truncated JSON: {exc.msg.removesuffix(' at')} (line {exc.lineno}, "
                            f"column {exc.colno})") from None
    except _NotFinite as exc:
        raise JSONFileError(f"not strict JSON: {exc}") from None
    except RecursionError:
        raise JSONFileError(f"JSON nested too deeply (over {max_depth} levels)") from None
    except ValueError as exc:  # e.g. an integer of more digits than int() accepts
        raise JSONFileError(f"invalid JSON number ({str(exc).split(':')[0][:100]})") from None
    if _depth_exceeds(value, max_depth):
        raise JSONFileError(f"JSON nested too deeply (over {max_depth} levels)")
    return value
