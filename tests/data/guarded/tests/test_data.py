import multiprocessing
import os
import sys

import pytest
import torch
from loaderkit.data import (
    Counter,
    LazyLines,
    Lines,
    Squares,
    make_lambda_loader,
    make_loader,
    make_seeded_loader,
    negate,
)
from torch.utils.data import DataLoader, Dataset


def test_squares():
    batches = list(make_loader())
    assert torch.equal(batches[0], torch.tensor([0, -1, -4, -9]))


@pytest.mark.parametrize("scale", [1, 2, 3])
def test_lambda_collate(scale):
    batches = list(make_lambda_loader(scale))
    assert batches[0].tolist() == [0, scale, 4 * scale, 9 * scale]


def test_seeded():
    assert len(list(make_seeded_loader())) == 8


def test_lines(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello\n")
    assert Lines(path)[0] == b"hello\n"


def test_lazy_lines_after_a_pass(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello\n")
    loader = DataLoader(LazyLines(path), num_workers=0)
    assert [b for b in loader] == [[b"hello\n"]]


def test_counter():
    assert len(list(DataLoader(Counter(), num_workers=0))) == 3


def test_local_dataset_class():
    class Local(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i

    assert Local()[1] == 1


def test_the_check_changes_nothing_the_test_observes():
    import torch.multiprocessing as tmp

    method = multiprocessing.get_start_method(allow_none=True)
    strategy = tmp.get_sharing_strategy()
    modules = set(sys.modules)
    env = dict(os.environ)
    ds = Squares(4)
    loader = DataLoader(ds, num_workers=0, batch_size=2)
    assert ds.reads == 0
    assert multiprocessing.get_start_method(allow_none=True) == method
    assert tmp.get_sharing_strategy() == strategy
    assert set(sys.modules) == modules
    assert dict(os.environ) == env
    assert not loader.dataset.transform


@pytest.mark.parametrize("transform", [negate, lambda x: x * 10],
                         ids=["function", "lambda"])
def test_scaled(transform):
    from loaderkit.data import make_scaled_loader

    assert len(list(make_scaled_loader(transform))) == 2


def test_the_check_does_not_read_items_while_the_test_runs(tmp_path):
    from loaderkit.data import Logged

    log = tmp_path / "log.txt"
    loader = DataLoader(Logged(log), batch_size=2, num_workers=0)
    assert not log.exists()
    assert len(list(loader)) == 2
    assert log.read_text().splitlines() == ["0", "1", "2", "3"]


def test_sharded_stream():
    from loaderkit.data import Sharded

    assert sorted(int(x) for x in DataLoader(Sharded(), num_workers=0)) == list(range(8))
