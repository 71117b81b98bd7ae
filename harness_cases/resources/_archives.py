"""Helpers for resource cases: a zip archive of fixed members and a folder of small files."""

from __future__ import annotations

import os
import tempfile
import zipfile

#: Members in the archive, and bytes per member. Members are larger than a BufferedReader's
#: 8 KiB buffer, so reading one takes several ``read`` calls from the shared file offset.
MEMBERS = 32
MEMBER_BYTES = 20_000


def member_name(k: int) -> str:
    """Name of member ``k``."""
    return f"part-{k:03d}.bin"


def make_zip() -> str:
    """Write a stored (uncompressed) zip whose member ``k`` is ``MEMBER_BYTES`` bytes of ``k``."""
    fd, path = tempfile.mkstemp(prefix="harness-case-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for k in range(MEMBERS):
            zf.writestr(member_name(k), bytes([k]) * MEMBER_BYTES)
    return path


def member_checksum(data: bytes) -> int:
    """A cheap checksum of one member: first byte plus length."""
    return data[0] + len(data) if data else -1


def expected_checksum(passes: int) -> int:
    """What an item that reads every member ``passes`` times sums to."""
    return passes * sum(k + MEMBER_BYTES for k in range(MEMBERS))


def make_square_files(n: int) -> str:
    """A folder of ``n`` files ``item-XXX.txt`` holding ``"i i*i"``; returns its path."""
    folder = tempfile.mkdtemp(prefix="harness-case-")
    for i in range(n):
        with open(os.path.join(folder, f"item-{i:03d}.txt"), "w", encoding="ascii") as f:
            f.write(f"{i} {i * i}")
    return folder
