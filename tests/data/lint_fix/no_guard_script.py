"""A script with no main guard: the loop runs at import time."""
import torch
from torch.utils.data import DataLoader, Dataset

SIZE = 10


class Range(Dataset):
    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.tensor([i, -i])


dataset = Range()
loader = DataLoader(dataset, batch_size=5, num_workers=2)
total = 0
for batch in loader:
    total += int(batch.sum(dim=0)[0])
print("total", total)
