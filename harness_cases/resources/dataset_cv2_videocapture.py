"""A dataset that opens a video with ``cv2.VideoCapture`` in ``__init__`` and keeps it."""

import cv2
import torch
from torch.utils.data import DataLoader, Dataset

from harness.case import squares
from harness_cases.resources._libraries import make_video, read_frame

CASE = {
    "id": "dataset-cv2-videocapture",
    "family": "resources",
    "title": "Dataset holds a cv2.VideoCapture opened in __init__",
    "why": "cv2.VideoCapture is an OpenCV object without pickle support ('cannot pickle "
    "'cv2.VideoCapture' object'), so spawn and forkserver fail while sending the dataset. Fork "
    "copies the decoder state into each worker; this tiny video fits in the reader's buffer, "
    "so every worker seeks in its own copy and the frames came out right here.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"},
    "expect_kind": {"spawn": "pickle", "forkserver": "pickle"},
    "fix": "dataset-cv2-lazy",
    "requires": ["module:cv2"],
    "matches": {
        "static": [{"rule": "HL201", "call": "cv2.VideoCapture"}],
        "objects": [{"type": "cv2.*"}],
        "errors": [{"kind": "pickle", "text": r"cannot pickle 'cv2\.\w+' object"}],
    },
    "sources": ["https://github.com/MVIG-SJTU/AlphaPose/issues/128", "https://github.com/Project-MONAI/MONAI/issues/8322"],
}


class VideoFrames(Dataset):
    def __init__(self, source):
        self.cap = cv2.VideoCapture(source)
        self.n = int(self.cap.get(cv2.CAP_PROP_FRAME_COUNT))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(read_frame(self.cap, i))


def run(cell):
    ds = VideoFrames(make_video(16))
    try:
        cell.check(DataLoader(ds, batch_size=4, num_workers=cell.num_workers), squares(len(ds)))
    finally:
        ds.cap.release()
