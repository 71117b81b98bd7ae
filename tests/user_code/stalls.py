"""A guarded script whose workers wait for a "data ready" event that is never set."""

import multiprocessing

import torch
from torch.utils.data import DataLoader, Dataset


class WaitsForData(Dataset):
    def __init__(self, ready):
        self.ready = ready

    def __len__(self):
        return 8

    def __getitem__(self, i):
        self.ready.wait()
        return torch.tensor(i)


if __name__ == "__main__":
    ready = multiprocessing.get_context().Event()
    for batch in DataLoader(WaitsForData(ready), batch_size=4, num_workers=2):
        print(batch)
