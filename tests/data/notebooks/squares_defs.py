"""The dataset the notebooks here import: defined in a module, so spawn workers can import it."""

import torch
from torch.utils.data import Dataset


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor(i * i)
