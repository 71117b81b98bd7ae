"""``harness reproduce`` names the same catalogue case as ``harness diagnose`` for the same loader.

Each script builds its loader in a factory (``diagnose``'s target) and iterates it under the
main guard (what ``reproduce`` runs). Before Python 3.14 the error text alone does not say
whether a lambda was the ``collate_fn`` or a dataset's attribute; the failed run's loader does.
The expected case is ``diagnose``'s, which walks the live objects.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_SCRIPTS = {
    "collate_lambda": '''
import torch
from torch.utils.data import DataLoader, TensorDataset


def make():
    return DataLoader(TensorDataset(torch.arange(8)), batch_size=2, num_workers=2, collate_fn=lambda b: b)
''',
    "attribute_lambda": '''
from torch.utils.data import DataLoader, Dataset


class Doubled(Dataset):
    def __init__(self):
        self.fn = lambda x: x * 2

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.fn(i)


def make():
    return DataLoader(Doubled(), batch_size=2, num_workers=2)
''',
    "local_worker_init": '''
import torch
from torch.utils.data import DataLoader, TensorDataset


def make():
    def seed(worker_id):
        torch.manual_seed(worker_id)

    return DataLoader(TensorDataset(torch.arange(8)), batch_size=2, num_workers=2, worker_init_fn=seed)
''',
}
_MAIN = '''

if __name__ == "__main__":
    for _ in make():
        pass
'''


def _harness(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "harness", *args, "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(_SCRIPTS))
def test_reproduce_and_diagnose_name_the_same_case(tmp_path, name):
    (tmp_path / f"{name}.py").write_text(_SCRIPTS[name] + _MAIN)
    rc, diagnosed = _harness("diagnose", f"{name}.py:make", cwd=tmp_path)
    assert rc == 1
    [problem] = diagnosed["problems"]
    rc, reproduced = _harness("reproduce", f"{name}.py", "--start-method", "spawn", cwd=tmp_path)
    assert rc == 1 and reproduced["outcome"] == "error"
    assert reproduced["case"] == problem["case"] is not None
    assert reproduced["fix"] == problem["fix"]
