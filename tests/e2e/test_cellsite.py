"""The start-up hook every new interpreter in a cell imports (``harness/child/cellsite``).

Windows creates spawn children without inherited handles; with the parent's standard streams
redirected to files, as in a cell, a child's ``sys.stderr`` can be ``None`` and its traceback
(the bootstrapping ``RuntimeError``, ``Can't get attribute``) would be lost.
``HARNESS_SIMULATE_LOST_STDERR=1`` starts a spawn child that way on Linux: ``sys.stderr`` is
``None`` and descriptor 2 is closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from harness.run.plan import CELL_SITE_DIR

# A script whose spawn child dies unpickling its target: the function only exists in the
# parent's __main__ (defined inside the main guard), the catalogue's main-attribute pattern.
SCRIPT = textwrap.dedent("""
    import multiprocessing as mp
    if __name__ == "__main__":
        def work():
            pass
        mp.set_start_method("spawn")
        p = mp.Process(target=work)
        p.start()
        p.join()
        print("child exit code", p.exitcode)
""")


def _run(tmp_path, **env_extra) -> tuple[str, str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CELL_SITE_DIR), os.environ.get("PYTHONPATH", "")]),
               **env_extra)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=60, cwd=tmp_path)
    return out.stdout, out.stderr


def test_the_simulation_really_loses_a_spawn_childs_traceback(tmp_path):
    stdout, stderr = _run(tmp_path, HARNESS_SIMULATE_LOST_STDERR="1")
    assert "child exit code 1" in stdout
    assert "Can't get attribute" not in stderr and "has no attribute" not in stderr


def test_a_spawn_child_without_stderr_writes_to_the_cells_stderr_file(tmp_path):
    cell_stderr = tmp_path / "stderr.txt"
    stdout, stderr = _run(tmp_path, HARNESS_SIMULATE_LOST_STDERR="1", HARNESS_CELL_STDERR=str(cell_stderr))
    assert "child exit code 1" in stdout
    text = cell_stderr.read_text(encoding="utf-8")
    assert "Can't get attribute 'work'" in text or "has no attribute 'work'" in text


def test_a_usable_stderr_is_left_alone(tmp_path):
    cell_stderr = tmp_path / "stderr.txt"
    _, stderr = _run(tmp_path, HARNESS_CELL_STDERR=str(cell_stderr))
    assert "Can't get attribute 'work'" in stderr or "has no attribute 'work'" in stderr
    assert not cell_stderr.exists()


def test_the_profile_sharing_strategy_reaches_a_spawn_worker(tmp_path):
    script = tmp_path / "strategy.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        def report(q):
            import torch.multiprocessing
            q.put(torch.multiprocessing.get_sharing_strategy())
        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=report, args=(q,))
            p.start()
            print(q.get(timeout=60))
            p.join()
    """), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CELL_SITE_DIR), os.environ.get("PYTHONPATH", "")]),
               HARNESS_SHARING_STRATEGY="file_system")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "file_system", out.stderr


def test_a_shadowed_sitecustomize_still_runs(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['OTHER_SITECUSTOMIZE'] = 'ran'\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CELL_SITE_DIR), str(other)]))
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OTHER_SITECUSTOMIZE'))"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "ran", out.stderr
