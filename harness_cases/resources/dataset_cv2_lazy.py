"""Good: keep the video's path; each worker opens its own ``cv2.VideoCapture`` on first use."""

import cv2
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import make_video, read_frame

CASE = {
    "id": "dataset-cv2-lazy",
    "family": "resources",
    "title": "Dataset keeps the video path and opens cv2.VideoCapture lazily in the worker (fix)",
    "why": "Only the path and the frame count are pickled; each worker opens its own capture in "
    "its own process on first use.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "requires": ["module:cv2"],
    "sources": ["https://github.com/Project-MONAI/MONAI/issues/8322"],
}


class LazyVideoFrames(Dataset):
    def __init__(self, source):
        self.source = source
        probe = cv2.VideoCapture(source)  # opened and released: only the frame count is kept
        self.n = int(probe.get(cv2.CAP_PROP_FRAME_COUNT))
        probe.release()
        self.cap = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.cap is None:
            self.cap = cv2.VideoCapture(self.source)
        return torch.tensor(read_frame(self.cap, i))


def run(cell):
    ds = LazyVideoFrames(make_video(16))
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(len(ds)))
    finally:
        if ds.cap is not None:  # opened here only by the in-process control
            ds.cap.release()
