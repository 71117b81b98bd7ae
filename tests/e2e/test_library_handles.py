"""``harness diagnose`` names the catalogue case of a library handle held by a Dataset.

Each test writes a small user module whose Dataset opens a real file with the library in
``__init__`` and keeps the handle (an h5py ``File``, an lmdb ``Environment``, a cv2
``VideoCapture``, the ``NpzFile`` of ``np.load``), runs ``harness diagnose --json`` on its loader
factory as a user would, and checks that the culprit is found at the attribute that holds it and
is matched to the library's case and its lazy-open fix. A library that is not installed skips
its test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEADER = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
"""

# library → (the module's source after HEADER, the attribute that holds the handle, the case, its fix)
LOADERS = {
    "h5py": (
        """
        import h5py

        class Frames(Dataset):
            def __init__(self, path):
                self.handle = h5py.File(path, "r")

            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.from_numpy(self.handle["x"][i])

        def make_loader():
            with h5py.File("data.h5", "w") as f:
                f["x"] = np.arange(8).reshape(4, 2)
            return DataLoader(Frames("data.h5"), num_workers=2)
        """,
        "dataset.handle",
        "dataset-h5py-file",
        "dataset-h5py-lazy",
    ),
    "lmdb": (
        """
        import lmdb

        class Records(Dataset):
            def __init__(self, path):
                self.handle = lmdb.open(path, readonly=True, lock=False)

            def __len__(self):
                return 4

            def __getitem__(self, i):
                with self.handle.begin() as txn:
                    return torch.tensor(int(txn.get(str(i).encode())))

        def make_loader():
            env = lmdb.open("data.lmdb", map_size=1 << 20)
            with env.begin(write=True) as txn:
                for i in range(4):
                    txn.put(str(i).encode(), str(i * i).encode())
            env.close()
            return DataLoader(Records("data.lmdb"), num_workers=2)
        """,
        "dataset.handle",
        "dataset-lmdb-environment",
        "dataset-lmdb-lazy",
    ),
    "cv2": (
        """
        import cv2

        class Video(Dataset):
            def __init__(self, path):
                self.handle = cv2.VideoCapture(path)

            def __len__(self):
                return 4

            def __getitem__(self, i):
                self.handle.set(cv2.CAP_PROP_POS_FRAMES, i)
                return torch.from_numpy(self.handle.read()[1])

        def make_loader():
            writer = cv2.VideoWriter("clip.avi", cv2.VideoWriter_fourcc(*"MJPG"), 10, (16, 16))
            for k in range(4):
                writer.write(np.full((16, 16, 3), 40 * k, np.uint8))
            writer.release()
            return DataLoader(Video("clip.avi"), num_workers=2)
        """,
        "dataset.handle",
        "dataset-cv2-videocapture",
        "dataset-cv2-lazy",
    ),
    "numpy": (
        """
        class Arrays(Dataset):
            def __init__(self, path):
                self.handle = np.load(path)

            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.tensor(self.handle["x"][i])

        def make_loader():
            np.savez("data.npz", x=np.arange(4))
            return DataLoader(Arrays("data.npz"), num_workers=2)
        """,
        "dataset.handle",
        "dataset-npz-file",
        "dataset-npz-lazy",
    ),
}


def _diagnose(tmp_path: Path, source: str) -> dict:
    """``harness diagnose --json`` of ``loaders.py:make_loader`` written from ``source``."""
    (tmp_path / "loaders.py").write_text(HEADER + textwrap.dedent(source), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "diagnose", "--json", "loaders.py:make_loader"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("library", sorted(LOADERS))
def test_diagnose_names_the_library_handle_case(library: str, tmp_path: Path) -> None:
    pytest.importorskip(library)
    source, holder, case, fix = LOADERS[library]
    report = _diagnose(tmp_path, source)
    assert report["safe"] is False
    findings = report["problems"]
    assert findings, report
    for finding in findings:  # every culprit is the handle, or an object inside it
        assert finding["path"] == holder or finding["path"].startswith(holder + "."), finding
        assert finding["case"] == case, finding
        assert finding["fix"] == fix, finding
