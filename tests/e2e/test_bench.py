"""``python -m benchmarks`` end to end on a tiny selection: the figures it writes hang together."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_writes_consistent_figures(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--repeat", "1", "--skip-diagnose", "--skip-guard", "--skip-lint", "--out", str(out), "--",
         "--catalogue", str(ROOT / "tests" / "fixture_cases"), "--cases", "fixture-good",
         "--start-method", "in-process", "fork"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: a 2-cell run cannot reach the ratio target
    got = json.loads(out.read_text())
    assert got["cells"] == 2 and got["isolation"] == "warm"
    assert got["outcomes_identical"] is True
    assert got["floor_s"] == round(got["work_s"] / got["cores"], 3)
    assert got["ratio"] == round(got["wall_s"] / (got["work_s"] / got["cores"]), 4)
    assert got["speedup"] == round(got["naive_s"] / got["wall_s"], 4)
    assert 0 < got["work_s"] < got["wall_s"]
    assert "ratio" in proc.stdout and "speedup" in proc.stdout
