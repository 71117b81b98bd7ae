"""A training script that defines its Dataset inside the main guard.

The dataset pickles by reference as ``__main__.Points``; a spawn worker re-imports the script
as ``__mp_main__`` without running the guarded block, so ``Points`` does not exist there.
"""

import torch
from torch.utils.data import DataLoader, Dataset

if __name__ == "__main__":

    class Points(Dataset):
        def __len__(self):
            return 32

        def __getitem__(self, i):
            return torch.tensor([float(i)])

    total = sum(batch.sum().item() for batch in DataLoader(Points(), batch_size=8, num_workers=2))
    print(f"total {total}")
