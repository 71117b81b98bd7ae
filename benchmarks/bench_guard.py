"""Benchmark: the cost of ``pytest --check-loaders`` on a suite of 50 small loaders.

Target (not a timed test; run with ``python -m benchmarks.bench_guard`` or the ``bench`` nox
session): a session of 50 tests, each building a distinct small ``DataLoader`` with
``num_workers=0`` (50 construction sites) and iterating it, takes at most
:data:`RATIO_TARGET` times the same session without the guard. Both are real ``pytest``
processes, measured from start to exit, alternated ``repeat`` times in one run; the medians
are compared. The ratio of the sample downstream project's suite (``tests/data/guarded``,
whose tests build unsafe loaders too) is reported beside it.

The same reuse for ``harness diagnose``: four small targets in one command against one
(:data:`DIAGNOSE_TARGET`: at most 1.3 times), both real ``harness`` processes, medians.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["DIAGNOSE_TARGET", "RATIO_TARGET", "diagnose_targets", "run_benchmark", "write_factories", "write_suite"]

RATIO_TARGET = 1.25
DIAGNOSE_TARGET = 1.3
GUARDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "guarded"

_FACTORY = '''

def make_{i}():
    return DataLoader(TensorDataset(torch.arange({n})), batch_size=2, num_workers=2)
'''


def write_factories(folder: Path, count: int = 4) -> Path:
    """``loaders.py`` with ``count`` small loader factories, ``make_0`` ... (each a target)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n" + "".join(
        _FACTORY.format(i=i, n=4 + i) for i in range(count))
    path = folder / "loaders.py"
    path.write_text(body, encoding="utf-8")
    return path


_HEADER = '''\
import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __init__(self, n, scale):
        self.n = n
        self.scale = scale

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i * self.scale, i])


def collate(batch):
    return torch.stack(batch)

'''

_TEST = '''
def test_loader_{i}():
    loader = DataLoader(Items({n}, {i}), batch_size=4, num_workers=0, collate_fn=collate)
    assert sum(b.shape[0] for b in loader) == {n}
'''


def write_suite(folder: Path, tests: int = 50) -> Path:
    """A test file of ``tests`` tests, each building its own loader (a construction site each)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = _HEADER + "".join(_TEST.format(i=i, n=8 + i % 5) for i in range(tests))
    (folder / "test_loaders.py").write_text(body, encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return folder


def _session(folder: Path, guard: bool) -> tuple[float, int]:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)]
    if guard:
        args.append("--check-loaders")
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return time.perf_counter() - t0, proc.returncode


def _compare(folder: Path, repeat: int) -> dict:
    plain, guarded, codes = [], [], set()
    for _ in range(repeat):
        for guard, into in ((False, plain), (True, guarded)):
            seconds, code = _session(folder, guard)
            into.append(round(seconds, 3))
            codes.add((guard, code))
    plain_s, guarded_s = statistics.median(plain), statistics.median(guarded)
    return {"plain_s": plain_s, "guarded_s": guarded_s, "ratio": round(guarded_s / plain_s, 3),
            "runs": {"plain_s": plain, "guarded_s": guarded},
            "exit_codes": sorted({f"{'guarded' if g else 'plain'}={c}" for g, c in codes})}


def _diagnose(folder: Path, targets: int) -> float:
    args = [sys.executable, "-m", "harness", "diagnose", *(f"loaders.py:make_{i}" for i in range(targets))]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"harness diagnose failed: {proc.stderr[-500:]}")
    return time.perf_counter() - t0


def diagnose_targets(folder: Path, repeat: int) -> dict:
    """``harness diagnose`` with one target against four, alternated ``repeat`` times."""
    write_factories(folder)
    one, four = [], []
    for _ in range(repeat):
        one.append(round(_diagnose(folder, 1), 3))
        four.append(round(_diagnose(folder, 4), 3))
    return {"one_s": statistics.median(one), "four_s": statistics.median(four),
            "ratio": round(statistics.median(four) / statistics.median(one), 3), "runs": {"one_s": one, "four_s": four}}


def run_benchmark(repeat: int = 5) -> dict:
    """Both comparisons; ``ok`` when the 50-loader ratio is at most :data:`RATIO_TARGET`."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-guard-") as tmp:
        suite = write_suite(Path(tmp) / "suite")
        fifty = _compare(suite, repeat)
        downstream = _compare(GUARDED, max(3, repeat // 2)) if GUARDED.is_dir() else None
        targets = diagnose_targets(Path(tmp) / "diagnose", max(3, repeat // 2))
    return {"loaders": 50, "suite": fifty, "downstream": downstream, "target_ratio": RATIO_TARGET,
            "diagnose": targets, "diagnose_target_ratio": DIAGNOSE_TARGET,
            "ok": fifty["ratio"] <= RATIO_TARGET and targets["ratio"] <= DIAGNOSE_TARGET}


if __name__ == "__main__":
    result = run_benchmark(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)
