"""Benchmark: the cost of ``harness diagnose`` on a dataset holding one large numpy array.

Targets (not a timed test; run with ``python -m benchmarks.bench_diagnose`` or the ``bench``
nox session):

* diagnosing raises peak RSS by no more than 5% of the array;
* it takes at most 1.5x the time of a plain ``ForkingPickler`` dump of the same worker
  arguments into a sink that discards the bytes.

Each measurement runs in its own fresh interpreter, because peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``, kibibytes on Linux, bytes on macOS; ``peak_wset`` from
psutil on Windows) only ever grows. The child builds the array (touching every page), warms up
the imports on a tiny dataset, records its peak RSS, runs the measured operation once, and
records the new peak; the time is the median of ``repeat`` batches (a batch repeats an
operation that takes under a millisecond until it lasts about 0.2 s).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from torch.utils.data import Dataset

__all__ = ["run_benchmark", "ArrayDataset"]

RSS_TARGET = 0.05
TIME_TARGET = 1.5


class ArrayDataset(Dataset):
    """A map-style dataset over the rows of one float32 array of ``size_bytes`` bytes."""

    def __init__(self, size_bytes: int) -> None:
        self.data = np.ones(size_bytes // 4, dtype=np.float32)  # np.ones writes every page

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        return self.data[i]


def _peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes."""
    try:
        import resource
    except ImportError:  # Windows
        import psutil

        return int(psutil.Process().memory_info().peak_wset)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class _Discard:
    """A file that drops what it is given."""

    def write(self, data) -> None:
        pass


def _child(mode: str, size_bytes: int, repeat: int) -> dict:
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401 - torch's reducers, as in a real start

    from harness.inspect.diagnose import diagnose
    from harness.inspect.worker_start import worker_start

    if mode == "diagnose":
        def op(ds):
            return diagnose(ds, method="spawn")
    elif mode == "plain":
        def op(ds):
            ForkingPickler(_Discard()).dump(worker_start(ds).args)
    else:  # "plain-p5": protocol 5 without a buffer_callback, buffers written in band
        def op(ds):
            ForkingPickler(_Discard(), 5).dump(worker_start(ds).args)

    op(ArrayDataset(4096))  # warm up imports and lazy state outside the measurement
    ds = ArrayDataset(size_bytes)
    before = _peak_rss()
    t0 = time.perf_counter()
    result = op(ds)
    first = time.perf_counter() - t0
    after = _peak_rss()
    # Sub-millisecond operations are timed in batches of ``per_batch`` calls (about 0.2 s).
    per_batch = max(1, int(0.2 / max(first, 1e-9)))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            op(ds)
        times.append((time.perf_counter() - t0) / per_batch)
    out = {"rss_rise_bytes": after - before, "seconds": statistics.median(times), "times": times,
           "first_s": first, "calls_per_batch": per_batch}
    if mode == "diagnose":
        out["safe"] = result.safe
        out["payload_bytes"] = result.payload.total_bytes if result.payload else None
    return out


def _run_child(mode: str, size_bytes: int, repeat: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_diagnose", "--child", mode, str(size_bytes), str(repeat)],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_benchmark(size_bytes: int = 1 << 30, repeat: int = 3) -> dict:
    """Measure diagnose against a plain ForkingPickler dump, each in a fresh interpreter.

    Args:
        size_bytes: size of the dataset's numpy array, in bytes (default 1 GiB).
        repeat: timed runs per mode; the median is reported (seconds).

    Returns:
        ``{"name", "array_bytes", "payload_bytes", "diagnose_s", "plain_dump_s", "time_ratio",
        "diagnose_rss_rise_bytes", "rss_rise_ratio", "plain_dump_rss_rise_bytes",
        "plain_dump_protocol5_s", "plain_dump_protocol5_rss_rise_bytes", "time_ratio_protocol5",
        "targets", "ok"}``.
        The plain dump uses ForkingPickler's default protocol, as a real start does
        (``pickle.DEFAULT_PROTOCOL``); the protocol-5 dump is given for comparison. Ratios are
        diagnose/plain time and diagnose's RSS rise/array size.

    Raises:
        subprocess.CalledProcessError: a measuring child failed.
    """
    diag = _run_child("diagnose", size_bytes, repeat)
    plain = _run_child("plain", size_bytes, repeat)
    plain5 = _run_child("plain-p5", size_bytes, repeat)
    time_ratio = diag["seconds"] / plain["seconds"] if plain["seconds"] else float("inf")
    rss_ratio = max(0, diag["rss_rise_bytes"]) / size_bytes
    return {
        "name": "diagnose",
        "array_bytes": size_bytes,
        "payload_bytes": diag["payload_bytes"],
        "diagnose_s": round(diag["seconds"], 6),
        "plain_dump_s": round(plain["seconds"], 6),
        "time_ratio": round(time_ratio, 6),
        "diagnose_rss_rise_bytes": diag["rss_rise_bytes"],
        "rss_rise_ratio": round(rss_ratio, 5),
        "plain_dump_rss_rise_bytes": plain["rss_rise_bytes"],
        "plain_dump_protocol5_s": round(plain5["seconds"], 6),
        "plain_dump_protocol5_rss_rise_bytes": plain5["rss_rise_bytes"],
        "time_ratio_protocol5": round(diag["seconds"] / plain5["seconds"], 4) if plain5["seconds"] else None,
        "targets": {"rss_rise_ratio": RSS_TARGET, "time_ratio": TIME_TARGET},
        "ok": bool(diag["safe"] and rss_ratio <= RSS_TARGET and time_ratio <= TIME_TARGET),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_diagnose [SIZE_BYTES]``: print the result as JSON; 1 if off target."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(_child(argv[1], int(argv[2]), int(argv[3]))))
        return 0
    result = run_benchmark(int(argv[0]) if argv else 1 << 30)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
