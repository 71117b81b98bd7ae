"""Train: options parsed at import time (the Dataset reads them), the run below, no main guard."""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=6)
args = parser.parse_args()

torch.manual_seed(0)


class Data(Dataset):
    def __len__(self):
        return args.n

    def __getitem__(self, i):
        return torch.tensor(i)


def collate(b):
    return torch.stack(b)


# the run
loader = DataLoader(Data(), batch_size=2, num_workers=2, collate_fn=collate)
for b in loader:
    print(b.tolist())
