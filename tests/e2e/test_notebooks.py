"""Notebooks as input: ``harness reproduce`` and ``harness diagnose`` on ``.ipynb`` files.

Each notebook runs in a real Jupyter kernel (ipykernel, started by nbclient) inside a
contained cell, and its workers really start. What spawn and forkserver do to a class that a
notebook's ``__main__`` defines is documented (pytorch/pytorch#51344; CPython's
"programming guidelines" for spawn: the main module must be importable): the worker cannot
find it, ``Can't get attribute 'Squares' on <module '__main__' (built-in)>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "data" / "notebooks"


def _harness(*args, timeout=300):
    mark = uuid.uuid4().hex
    env = {**os.environ, "HARNESS_E2E_MARK": mark}
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=NOTEBOOKS, capture_output=True,
                          text=True, timeout=timeout, env=env)
    left = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("HARNESS_E2E_MARK") == mark:
                left.append(p)
        except (psutil.Error, OSError):
            pass
    assert not left, f"processes left behind: {left}"
    return proc


def _reproduce(notebook, method, *extra):
    proc = _harness("reproduce", notebook, "--start-method", method, "--json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_class_the_notebook_defines_fails_under_spawn_and_forkserver_at_its_cell(method):
    got = _reproduce("defined_here.ipynb", method)
    assert (got["outcome"], got["kind"]) == ("error", "main-attribute")
    assert got["cell"] == 5  # the cell that iterates the loader; markdown cells count
    assert "Can't get attribute 'Squares' on <module '__main__'" in got["root_cause"]
    assert got["case"] == "interactive-stdin-dataset-class" and got["fix"] == "interactive-stdin-import"
    assert "move Squares (cell 4, line 1) into a .py module beside the notebook" in got["hint"]


def test_the_same_notebook_passes_under_fork_and_its_fix_under_spawn():
    fork = _reproduce("defined_here.ipynb", "fork")
    assert (fork["outcome"], fork["cell"]) == ("pass", None)
    fixed = _reproduce("imported.ipynb", "windows")
    assert (fixed["outcome"], fixed["cell"]) == ("pass", None)


def test_a_lambda_collate_fn_is_a_pickling_error_at_its_cell():
    got = _reproduce("lambda_collate.ipynb", "spawn")
    assert (got["outcome"], got["kind"], got["cell"]) == ("error", "pickle", 3)


def test_a_hanging_cell_times_out_and_nothing_outlives_the_command():
    got = _reproduce("hangs.ipynb", "spawn", "--timeout", "15")
    assert (got["outcome"], got["cell"]) == ("hang", 3)


def test_diagnose_places_the_culprit_at_its_cell_and_line():
    proc = _harness("diagnose", "defined_here.ipynb:loader", "--json")
    assert proc.returncode == 1, proc.stderr
    got = json.loads(proc.stdout)
    assert got["target"] == "defined_here.ipynb:loader" and not got["safe"]
    (problem,) = got["problems"]
    assert (problem["path"], problem["file"], problem["cell"], problem["line"]) == ("dataset", "defined_here.ipynb", 4, 1)
    assert problem["case"] == "interactive-stdin-dataset-class"
    text = _harness("diagnose", "defined_here.ipynb")  # every DataLoader of the namespace
    assert text.returncode == 1
    assert "at:      defined_here.ipynb, cell 4, line 1" in text.stdout
    fixed = _harness("diagnose", "imported.ipynb:loader")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "SAFE under spawn" in fixed.stdout


def test_bad_notebooks_are_one_line_errors(tmp_path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{not json")
    proc = _harness("reproduce", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "broken.ipynb: not a notebook nbformat can read" in proc.stderr
    missing = _harness("diagnose", "nowhere.ipynb:loader")
    assert missing.returncode == 2 and "nowhere.ipynb: notebook not found" in missing.stderr
    name = _harness("diagnose", "imported.ipynb:nothing_here")
    assert name.returncode == 2 and "the notebook defines no 'nothing_here'" in name.stderr


def test_a_missing_extra_is_a_one_line_usage_error(monkeypatch):
    import importlib.util

    from harness.errors import UsageError
    from harness.notebook import require_notebook_extra

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbclient" else real(name, *a))
    with pytest.raises(UsageError, match=r"^x.ipynb: running a notebook needs nbclient; install it with "
                                         r"pip install 'dataloader-start-harness\[notebook\]'$"):
        require_notebook_extra("x.ipynb")


CATALOGUE = Path(__file__).resolve().parents[2] / "harness_cases" / "interactive_main"
SHARD = Path(__file__).resolve().parents[2] / "reports" / "shards" / "linux-x86_64-py3.11-torch2.13.0+cpu.json"


@pytest.mark.parametrize("case, method", [("notebook-dataset-class", "spawn"), ("notebook-import", "forkserver")])
def test_reproduce_agrees_with_the_committed_observation_of_the_catalogue_notebook(case, method):
    observed = next(r for r in json.loads(SHARD.read_text())["results"] if (r["case"], r["method"]) == (case, method))
    got = _reproduce(str(CATALOGUE / (case.replace("-", "_") + ".ipynb")), method)
    assert (got["outcome"], got["kind"]) == (observed["outcome"], observed["kind"])
