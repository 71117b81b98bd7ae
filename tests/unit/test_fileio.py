"""The one atomic write (:func:`harness.child.fileio.write_atomic`) every shard, report file and
cell result goes through: whole or not at all, readable permissions, no temp file left."""

from __future__ import annotations

import os
import sys

import pytest

from harness.child.fileio import write_atomic


def test_the_file_is_replaced_whole(tmp_path):
    path = tmp_path / "sub" / "shard.json"
    write_atomic(path, b"first")
    write_atomic(path, b"second")
    assert path.read_bytes() == b"second"
    assert sorted(p.name for p in path.parent.iterdir()) == ["shard.json"]


def test_a_writer_function_gets_the_temporary_path(tmp_path):
    path = tmp_path / "matrix.png"
    seen = []

    def draw(tmp: str) -> None:
        seen.append(tmp)
        with open(tmp, "wb") as f:
            f.write(b"png")

    write_atomic(path, draw)
    assert path.read_bytes() == b"png"
    assert os.path.dirname(seen[0]) == str(tmp_path) and not os.path.exists(seen[0])


def test_a_failing_writer_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "matrix.png"
    path.write_bytes(b"old")

    def broken(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomic(path, broken)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["matrix.png"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_file_gets_the_permissions_of_a_new_file_under_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o640  # not mkstemp's 0o600
