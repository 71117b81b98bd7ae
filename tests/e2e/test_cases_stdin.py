"""Script cases with ``"stdin"`` run in a ``__main__`` without a file of its own.

Real cells, cross-checked against the real interpreter fed the same code on stdin: the
interactive interpreter (``python -i``, as a REPL or notebook kernel runs code) and
``python -`` with the code piped in.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.catalogue.discover import discover, select
from harness.run.plan import plan
from harness.run.records import run_one

CASES = discover().cases
SPAWN_PRELUDE = "import multiprocessing\nmultiprocessing.set_start_method('spawn')\n"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork does not exist on Windows")


def _real_interpreter(case_id: str, *flags: str) -> subprocess.CompletedProcess:
    case = select(CASES, [case_id])[0]
    env = {**os.environ, "HARNESS_CELL_METHOD": "spawn", "HARNESS_CELL_WORKERS": "2", "PYTHONPATH": str(case.root)}
    return subprocess.run([sys.executable, *flags], input=SPAWN_PRELUDE + case.path.read_text() + "\n",
                          capture_output=True, text=True, timeout=120, env=env)


def test_interactive_definition_passes_under_fork_and_is_missing_under_spawn():
    specs = {s.method: s for s in plan(select(CASES, ["interactive-stdin-def"]), ["fork", "spawn"], 60)}
    fork = run_one(specs["fork"], "pytest")
    assert fork["outcome"] == "pass", fork
    spawn = run_one(specs["spawn"], "pytest")
    assert (spawn["outcome"], spawn["kind"]) == ("error", "main-attribute"), spawn
    needle = "Can't get attribute 'add_one' on <module '__main__' (built-in)>"
    assert needle in spawn["root_cause"]
    # The interactive interpreter itself, fed the same code, says the same.
    assert needle in _real_interpreter("interactive-stdin-def", "-q", "-i").stderr


def test_code_piped_to_python_dash_sends_spawn_workers_looking_for_stdin():
    (spec,) = plan(select(CASES, ["interactive-python-dash-pipe"]), ["spawn"], 60)
    rec = run_one(spec, "pytest")
    assert (rec["outcome"], rec["kind"]) == ("error", "worker-died"), rec
    assert "FileNotFoundError" in rec["root_cause"] and "<stdin>" in rec["root_cause"]
    real = _real_interpreter("interactive-python-dash-pipe", "-")
    assert real.returncode != 0
    assert "FileNotFoundError: [Errno 2] No such file or directory:" in real.stderr and "<stdin>'" in real.stderr
