"""The harness's own processes import nothing from the user's folder before the user's code does.

A user's ``queue.py`` or ``json.py`` beside their script, and a relative ``PYTHONPATH``, behave
in ``harness reproduce`` and ``harness diagnose`` as in a real run from the user's shell. The
expected behaviour is that real run's: each test runs the same script with ``python`` first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _shadowing(folder: Path) -> None:
    """Modules that raise when imported, named after standard-library modules torch imports."""
    for name in ("queue", "json"):
        (folder / f"{name}.py").write_text(f'raise ImportError("the folder\'s own {name}.py was imported")\n')


def _harness(args, cwd, env=None):
    """The CLI run from ``cwd`` through its installed entry point (``sys.path[0]`` is not cwd)."""
    program = "import sys; del sys.path[0]; from harness._cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", program, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def test_reproduce_a_script_beside_a_shadowing_module(tmp_path):
    _shadowing(tmp_path)
    (tmp_path / "exit3.py").write_text('print("bye")\nraise SystemExit(3)\n')
    real = subprocess.run([sys.executable, "exit3.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (real.returncode, real.stdout) == (3, "bye\n")
    proc = _harness(["reproduce", "exit3.py", "--start-method", "spawn", "--json"], tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert (result["outcome"], result["root_cause"]) == ("error", "SystemExit: 3")


def test_reproduce_with_a_relative_pythonpath(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("VALUE = 7\n")
    (tmp_path / "run.py").write_text("import pkg\nassert pkg.VALUE == 7\n")
    env = {"PYTHONPATH": "src"}
    real = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    assert real.returncode == 0, real.stderr
    proc = _harness(["reproduce", "run.py", "--start-method", "spawn", "--json"], tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "pass"


@pytest.mark.parametrize("target", ["loaders.py:make", "loaders:make"])
def test_diagnose_from_a_folder_with_shadowing_modules(tmp_path, target):
    _shadowing(tmp_path)
    (tmp_path / "loaders.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "def make():\n    return DataLoader(TensorDataset(torch.arange(4)), batch_size=2, num_workers=2)\n")
    proc = _harness(["diagnose", target, "--json"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["safe"] is True


def test_reproduce_shows_the_scripts_own_output_on_a_failure_and_on_request(tmp_path):
    (tmp_path / "talks.py").write_text("import sys\nfor i in range(30):\n    print('line', i)\nsys.exit(int(sys.argv[1]))\n")
    proc = _harness(["reproduce", "talks.py", "--json", "--", "4"], tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert result["output"] == [f"line {i}" for i in range(10, 30)]  # its last 20 lines
    proc = _harness(["reproduce", "talks.py", "--", "0"], tmp_path)
    assert proc.returncode == 0 and "line 29" not in proc.stdout
    proc = _harness(["reproduce", "talks.py", "--output", "--", "0"], tmp_path)
    assert proc.returncode == 0 and "script output (last lines):\n" in proc.stdout and "    line 29" in proc.stdout
