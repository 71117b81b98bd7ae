"""Helpers for the library-handle cases: small h5py, lmdb, video and ``.npz`` files of squares.

Each ``make_*`` writes into the cell's own temp folder (``TMPDIR``, removed with the cell) and
returns the path; the matching reader gives item ``i`` as ``(i, i*i)``, the reference items of
:func:`harness.case.squares`. Each library is imported where it is used, so this module imports
with none of them installed.
"""

from __future__ import annotations

import os
import struct
import tempfile

RECORD = struct.Struct("<qq")

#: Rows of the ``.npz`` array (int64, 800 KB), so that reading it takes many reads of the archive,
#: and how many times an item of the ``NpzFile`` case reads it, so that two workers' reads overlap.
NPZ_ROWS = 100_000
NPZ_PASSES = 20


def make_h5(n: int) -> str:
    """An HDF5 file whose dataset ``sq`` holds rows ``(i, i*i)`` (int64, shape ``(n, 2)``)."""
    import h5py
    import numpy as np

    fd, path = tempfile.mkstemp(prefix="harness-case-", suffix=".h5")
    os.close(fd)
    i = np.arange(n, dtype=np.int64)
    with h5py.File(path, "w") as f:
        f.create_dataset("sq", data=np.stack([i, i * i], axis=1))
    return path


def make_lmdb(n: int) -> str:
    """An LMDB environment (a folder) mapping ``b"<i>"`` to the packed pair ``(i, i*i)``."""
    import lmdb

    path = tempfile.mkdtemp(prefix="harness-case-")
    env = lmdb.open(path, map_size=1 << 20)
    with env.begin(write=True) as txn:
        for i in range(n):
            txn.put(str(i).encode("ascii"), RECORD.pack(i, i * i))
    env.close()
    return path


def read_lmdb(txn, i: int) -> tuple[int, int]:
    """Item ``i`` from an LMDB read transaction."""
    return RECORD.unpack(txn.get(str(i).encode("ascii")))


#: Grey level of frame ``k`` is ``LEVEL0 + k * LEVEL_STEP``: far enough apart that lossy
#: (MJPEG) compression cannot move a frame to its neighbour's level.
LEVEL0, LEVEL_STEP = 8, 15
FRAME_SIDE = 16


def make_video(n: int) -> str:
    """A video of ``n`` flat grey frames, frame ``k`` at level ``LEVEL0 + k*LEVEL_STEP``.

    An MJPEG ``.avi`` written by ``cv2.VideoWriter`` (OpenCV's own encoder, in every wheel);
    where the build cannot write one, a numbered PNG sequence, which ``cv2.VideoCapture`` opens
    as a video from its ``%03d`` pattern. Returns what ``cv2.VideoCapture`` is given.
    """
    import cv2
    import numpy as np

    if n * LEVEL_STEP + LEVEL0 > 255:
        raise ValueError(f"at most {(255 - LEVEL0) // LEVEL_STEP} frames")
    folder = tempfile.mkdtemp(prefix="harness-case-")
    frames = [np.full((FRAME_SIDE, FRAME_SIDE, 3), LEVEL0 + k * LEVEL_STEP, np.uint8) for k in range(n)]
    path = os.path.join(folder, "squares.avi")
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (FRAME_SIDE, FRAME_SIDE))
    if writer.isOpened():
        for frame in frames:
            writer.write(frame)
        writer.release()
        if _frame_count(path) == n:
            return path
    writer.release()
    for k, frame in enumerate(frames):
        cv2.imwrite(os.path.join(folder, f"frame-{k:03d}.png"), frame)
    return os.path.join(folder, "frame-%03d.png")


def _frame_count(source: str) -> int:
    """Frames ``cv2.VideoCapture`` reads from ``source``, read to the end."""
    import cv2

    cap = cv2.VideoCapture(source)
    count = 0
    while cap.isOpened():
        ok, _ = cap.read()
        if not ok:
            break
        count += 1
    cap.release()
    return count


def read_frame(cap, i: int) -> tuple[int, int]:
    """Item ``i``: seek ``cap`` (a ``cv2.VideoCapture``) to frame ``i``, decode its level.

    Raises:
        RuntimeError: the frame cannot be read.
    """
    import cv2

    cap.set(cv2.CAP_PROP_POS_FRAMES, i)
    ok, frame = cap.read()
    if not ok:
        raise RuntimeError(f"cv2.VideoCapture could not read frame {i}")
    k = round((float(frame.mean()) - LEVEL0) / LEVEL_STEP)
    return k, k * k


def make_npz() -> str:
    """An ``.npz`` archive (``np.savez``) whose array ``sq`` holds ``i*i`` for ``NPZ_ROWS`` rows."""
    import numpy as np

    fd, path = tempfile.mkstemp(prefix="harness-case-", suffix=".npz")
    os.close(fd)
    i = np.arange(NPZ_ROWS, dtype=np.int64)
    np.savez(path, sq=i * i)
    return path
