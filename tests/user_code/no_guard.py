"""A training script with no ``if __name__ == "__main__":`` guard.

Under spawn and forkserver each worker re-imports this file as ``__mp_main__``, reaches the
loop below, and tries to start workers of its own during its bootstrapping phase.
"""

import torch
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        x = torch.tensor([float(i)])
        return x, 3 * x + 1


model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for x, y in DataLoader(Points(), batch_size=8, num_workers=2):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
