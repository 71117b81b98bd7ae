"""What the ``notebook-import`` case's notebook imports: a Dataset in a module beside it.

Not a case (no ``CASE``): spawn and forkserver workers import it by name.
"""

import torch
from torch.utils.data import Dataset


class CellSquares(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([i, i * i])
