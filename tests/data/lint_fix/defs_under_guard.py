import torch
from torch.utils.data import DataLoader, Dataset

if __name__ == "__main__":
    # both live under the guard, where a spawned worker never looks
    class Cubes(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return torch.tensor(i ** 3)

    def halve(batch):
        return torch.stack(batch) / 2

    loader = DataLoader(Cubes(), batch_size=2, num_workers=2, collate_fn=halve)
    print([b.tolist() for b in loader])
