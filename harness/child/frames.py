"""Length-prefixed frames over a byte stream: how the pytest guard talks to its checker process.

A frame is an 8-byte big-endian length followed by that many bytes. A message is one JSON
frame (an object) followed by the ``"blobs"`` raw frames it announces (pickled objects and
their out-of-band buffers). Works on any binary pipe, the standard streams of a child process
on Windows included.

A module of :mod:`harness.child`: it imports nothing of the harness outside that package.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

__all__ = ["FrameError", "read_message", "write_message"]

_LENGTH = struct.Struct(">Q")
#: The largest frame read (bytes): a longer length prefix is a corrupt stream, not a request.
MAX_FRAME = 1 << 34


class FrameError(Exception):
    """The stream ended inside a frame, or a frame is not what the protocol expects."""


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    """``n`` bytes, or ``None`` at a clean end of stream before the first byte.

    Raises:
        FrameError: the stream ended after some but not all of the bytes.
    """
    chunks = []
    left = n
    while left:
        chunk = stream.read(left)
        if not chunk:
            if left == n:
                return None
            raise FrameError(f"the stream ended {left} bytes before the end of a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: BinaryIO) -> bytes | None:
    head = _read_exact(stream, _LENGTH.size)
    if head is None:
        return None
    (n,) = _LENGTH.unpack(head)
    if n > MAX_FRAME:
        raise FrameError(f"a frame of {n} bytes announced: not this protocol")
    data = _read_exact(stream, n) if n else b""
    if data is None:
        raise FrameError("the stream ended after a frame's length")
    return data


def write_message(stream: BinaryIO, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
    """Write ``header`` (JSON) and its ``blobs`` as one message, then flush.

    Raises:
        OSError: the other end is gone (``BrokenPipeError``).
    """
    blobs = blobs or []
    data = json.dumps({**header, "blobs": len(blobs)}).encode("utf-8")
    parts = [_LENGTH.pack(len(data)), data]
    for blob in blobs:
        parts += [_LENGTH.pack(len(blob)), blob]
    for part in parts:
        stream.write(part)
    stream.flush()


def read_message(stream: BinaryIO) -> tuple[dict[str, Any], list[bytes]] | None:
    """The next message, ``(header, blobs)``, or ``None`` at a clean end of stream.

    Raises:
        FrameError: a truncated or malformed message.
    """
    data = _read_frame(stream)
    if data is None:
        return None
    try:
        header = json.loads(data)
    except ValueError as exc:
        raise FrameError(f"a message header is not JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("blobs"), int):
        raise FrameError("a message header is not an object with a blob count")
    blobs = []
    for _ in range(header["blobs"]):
        blob = _read_frame(stream)
        if blob is None:
            raise FrameError("the stream ended before a message's blobs")
        blobs.append(blob)
    return header, blobs
