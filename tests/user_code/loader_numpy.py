"""A dataset holding one large numpy array (64 MiB of float64): safe, with a large payload."""

import numpy as np
import torch
from torch.utils.data import Dataset

N_ROWS = 1 << 20  # x 8 float64 = 64 MiB


class Features(Dataset):
    def __init__(self):
        self.features = np.ones((N_ROWS, 8), dtype=np.float64)

    def __len__(self):
        return N_ROWS

    def __getitem__(self, i):
        return torch.from_numpy(self.features[i])


dataset = Features()
