"""Good, perhaps surprisingly: a sampler and a batch sampler defined inside the function."""

from torch.utils.data import DataLoader, Sampler

from harness.case import Squares, squares

CASE = {
    "id": "sampler-local-class",
    "family": "loader-callables",
    "title": "Local sampler and batch_sampler classes (never pickled)",
    "why": "Samplers and batch samplers run in the main process; only the indices they yield "
    "cross to the workers. So unlike the dataset, collate_fn and worker_init_fn, a sampler may be "
    "local, hold a lambda, or hold an open file, under every start method.",
    "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"},
    "sources": [
        "https://docs.pytorch.org/docs/stable/data.html#data-loading-order-and-sampler",
        "https://github.com/torchgeo/torchgeo/issues/89",
    ],
}


def run(cell):
    order = lambda n: range(n)  # a lambda held by the sampler: fine, it stays in this process

    class InOrder(Sampler):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __iter__(self):
            return iter(order(self.n))

    class Fours(Sampler):
        def __init__(self, sampler):
            self.sampler = sampler

        def __len__(self):
            return (len(self.sampler) + 3) // 4

        def __iter__(self):
            batch = []
            for i in self.sampler:
                batch.append(i)
                if len(batch) == 4:
                    yield batch
                    batch = []
            if batch:
                yield batch

    loader = DataLoader(Squares(16), batch_sampler=Fours(InOrder(16)), num_workers=cell.num_workers)
    cell.check(loader, squares(16))
