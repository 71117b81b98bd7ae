"""harness.child.frames: messages survive the trip; truncated or foreign streams are errors."""

from __future__ import annotations

import io

import pytest

from harness.child.frames import FrameError, read_message, write_message


def test_a_message_and_its_blobs_round_trip():
    stream = io.BytesIO()
    write_message(stream, {"id": 3, "x": "é"}, [b"abc", b""])
    write_message(stream, {"id": 4})
    stream.seek(0)
    assert read_message(stream) == ({"id": 3, "x": "é", "blobs": 2}, [b"abc", b""])
    assert read_message(stream) == ({"id": 4, "blobs": 0}, [])
    assert read_message(stream) is None


@pytest.mark.parametrize("cut", [3, 10, 20])
def test_a_truncated_message_is_an_error(cut):
    stream = io.BytesIO()
    write_message(stream, {"id": 1}, [b"payload"])
    with pytest.raises(FrameError):
        read_message(io.BytesIO(stream.getvalue()[:cut]))


def test_a_foreign_stream_is_an_error():
    with pytest.raises(FrameError, match="not this protocol"):
        read_message(io.BytesIO(b"\xff" * 16))
    with pytest.raises(FrameError, match="not JSON"):
        read_message(io.BytesIO(b"\x00" * 7 + b"\x02" + b"{x"))
