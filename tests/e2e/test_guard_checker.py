"""The guard's clean checker process against datasets that kill it, hang in it or exit from it.

Each check is a real round trip: pickled here, loaded and run in the checker interpreter.
Whatever happens there is a finding, and the next check starts a fresh checker.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import psutil
import pytest
from torch.utils.data import DataLoader, Dataset

from harness.guard.check import resolve, snapshot
from harness.guard.checker import Checker

USER = Path(__file__).resolve().parents[1] / "user_code"


@pytest.fixture
def hostile(monkeypatch):
    monkeypatch.syspath_prepend(str(USER))
    return importlib.import_module("guard_hostile")


@pytest.fixture
def checker():
    c = Checker(timeout_s=5)
    yield c
    pids = []
    if c._proc is not None:
        pids.append(c._proc.pid)
    c.close()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def _check(obj, checker):
    return resolve(snapshot(obj, "loader", None, "spawn", checker, None), checker)


def test_a_worker_that_dies_loading_is_a_finding_and_the_next_check_works(hostile, checker):
    dead = _check(DataLoader(hostile.ExitsWhenLoaded(), num_workers=2), checker)
    assert dead.unsafe
    assert "exit status 3" in dead.findings[0].problem.message
    fine = _check(DataLoader(hostile.Plain(), batch_size=2, num_workers=2), checker)
    assert not fine.unsafe and fine.note == ""
    assert checker.started == 2


def test_a_first_batch_that_hangs_times_out(hostile, checker):
    hung = _check(DataLoader(hostile.HangsInGetitem(), num_workers=0), checker)
    assert hung.unsafe
    assert "no answer within 5 s" in hung.findings[0].problem.message


def test_system_exit_in_getitem_is_a_finding_at_the_batch(hostile, checker):
    v = _check(DataLoader(hostile.RaisesSystemExitInGetitem(), num_workers=2), checker)
    assert [f.problem.path for f in v.findings] == ["batch"]
    assert "building the first batch raised SystemExit: 5" in v.findings[0].problem.message
    assert v.findings[0].problem.file.endswith("guard_hostile.py")


_REGISTRY_PROJECT = {
    "registry.py": "SEEN = []\n",
    "stateful.py": '''\
from torch.utils.data import Dataset

import registry


class Registers(Dataset):
    """Its loading in a worker sets module state (a registry entry)."""

    def __init__(self):
        self.n = 2  # a state to load: pickle calls no __setstate__ for an empty one

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i

    def __setstate__(self, state):
        registry.SEEN.append(type(self).__name__)
        self.__dict__.update(state)


class NeedsRegistry(Registers):
    """Loads only where something registered first: never in a fresh worker."""

    def __setstate__(self, state):
        if not registry.SEEN:
            raise RuntimeError("nothing registered in this worker")
        self.__dict__.update(state)
''',
}


def test_module_state_an_earlier_check_set_does_not_reach_the_next(tmp_path, monkeypatch, checker):
    """A fresh spawn worker does not have what an earlier loader's code set in the project's
    modules; the checker, reused, must not have it either. The truth is a real spawn worker's."""
    from harness.inspect import sites

    for name, text in _REGISTRY_PROJECT.items():
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sites, "_PROJECT_ROOT", str(tmp_path))
    stateful = importlib.import_module("stateful")
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(stateful.NeedsRegistry(), num_workers=1, multiprocessing_context="spawn"))
    first = _check(DataLoader(stateful.Registers(), num_workers=2), checker)
    assert not first.unsafe and first.note == ""
    second = _check(DataLoader(stateful.NeedsRegistry(), num_workers=2), checker)
    assert second.unsafe
    assert "nothing registered in this worker" in second.findings[0].problem.message
    assert checker.started == 1


class _Tokenized(Dataset):
    def __init__(self, processor, transform=None):
        self.processor = processor
        self.transform = transform

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return self.processor.encode(i)


def test_a_mock_test_double_is_a_warning_and_real_culprits_stay_findings(checker):
    """``Mock`` never pickles (a real spawn worker start fails on it, checked here), but it
    stands for an object the test replaced: a warning, not a finding."""
    from unittest import mock

    processor = mock.Mock()
    processor.encode.side_effect = lambda i: i
    with pytest.raises(Exception, match="Mock"):
        next(iter(DataLoader(_Tokenized(processor), num_workers=1, multiprocessing_context="spawn")))
    doubled = resolve(snapshot(_Tokenized(processor), "dataset", None, "spawn", checker, None), checker)
    assert not doubled.unsafe
    assert doubled.warning.startswith("dataset.processor is or holds a unittest.mock test double")
    both = _check(DataLoader(_Tokenized(processor, transform=lambda x: x), num_workers=0), checker)
    assert [f.problem.path for f in both.findings] == ["dataset.transform"]
