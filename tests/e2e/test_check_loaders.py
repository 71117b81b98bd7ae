"""``pytest --check-loaders`` on a src-layout project installed with ``pip install .`` (not editable).

The project (``tests/data/guarded``) builds its loaders with ``num_workers=0`` only. It is
copied, installed into a fresh virtual environment's site-packages, and its suite is run in
a real ``pytest`` process with the guard on, the way its CI would. What a spawn worker really
does with each of its loaders is observed separately, with real spawn workers
(:func:`test_the_guard_agrees_with_real_spawn_workers`), so the expected verdicts are not
taken from the guard.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import textwrap
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

GUARDED = Path(__file__).resolve().parents[1] / "data" / "guarded"

#: The tests whose loaders or datasets hold something a spawn worker cannot receive: a lambda
#: collate_fn (3 parametrized tests, one site), a local worker_init_fn, a dataset holding an
#: open file (no loader), a dataset class defined inside the test.
UNSAFE = {"test_lambda_collate[1]", "test_lambda_collate[2]", "test_lambda_collate[3]", "test_seeded",
          "test_lines", "test_local_dataset_class", "test_scaled[lambda]"}
SAFE = {"test_squares", "test_lazy_lines_after_a_pass", "test_counter", "test_the_check_changes_nothing_the_test_observes",
        "test_scaled[function]", "test_the_check_does_not_read_items_while_the_test_runs", "test_sharded_stream"}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project copied, and installed (not editable) into a new environment's site-packages."""
    root = tmp_path_factory.mktemp("guarded")
    work = root / "project"
    shutil.copytree(GUARDED, work, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    # This environment's packages (torch, pytest, the harness) are visible from the new one.
    outer = [p for p in site.getsitepackages() if os.path.isdir(p)]
    (target / "outer.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in outer))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(work)], check=True, timeout=300)
    assert (target / "loaderkit" / "data.py").is_file()
    shutil.rmtree(work / "build", ignore_errors=True)
    return work, python


def _guard_section(out: str) -> str:
    """The guard's own terminal section: from its header to the next section or annotation.

    pytest's "short test summary info" repeats each failure's first line after it, and in full
    when ``CI`` is set (it is not cut to the terminal width then), so it is left out.
    """
    body = out.split("harness --check-loaders) =", 1)[1].split("\n", 1)[1]
    return re.split(r"^(?:=+ .* =+|::\w+ .*)$", body, maxsplit=1, flags=re.M)[0]


def _pytest(project, *args, env=None):
    work, python = project
    mark = uuid.uuid4().hex
    full_env = {**os.environ, "HARNESS_E2E_MARK": mark, **(env or {})}
    full_env.pop("GITHUB_ACTIONS", None) if "GITHUB_ACTIONS" not in (env or {}) else None
    junit = work / f"junit-{mark}.xml"
    proc = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}", *args],
                          cwd=work, capture_output=True, text=True, timeout=600, env=full_env)
    left = [p for p in psutil.process_iter(["pid"]) if _marked(p, mark)]
    assert not left, f"processes left behind: {left}"
    cases = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure = case.find("failure")
        # the message is the finding's first lines; the element's text has them all
        cases[case.get("name")] = (failure.get("message") + "\n" + (failure.text or "")) if failure is not None else None
    return proc, cases


def _marked(proc, mark):
    try:
        return proc.environ().get("HARNESS_E2E_MARK") == mark
    except (psutil.Error, OSError):
        return False


def test_it_fails_exactly_the_unsafe_tests_at_the_culprits_definition_lines(project):
    work, _ = project
    proc, cases = _pytest(project, "--check-loaders", env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert {n for n, failure in cases.items() if failure} == UNSAFE
    assert {n for n, failure in cases.items() if not failure} == SAFE
    data = work / "src" / "loaderkit" / "data.py"
    tests = work / "tests" / "test_data.py"
    lambda_line = _line_of(data, "collate_fn=lambda")
    out = proc.stdout
    # Paths are the project's own files, not site-packages copies.
    assert f"defined at src/loaderkit/data.py:{lambda_line}" in out
    assert f"defined at src/loaderkit/data.py:{_line_of(data, 'def seed_worker')}" in out
    assert f"stored at src/loaderkit/data.py:{_line_of(data, 'self.fh = open(path')}" in out  # where the file is kept
    assert f"defined at tests/test_data.py:{_line_of(tests, 'class Local(')}" in out
    assert "site-packages" not in out
    # The parametrized site is listed once, with its three tests.
    site = f"constructed at src/loaderkit/data.py:{_line_of(data, 'return DataLoader(Squares(8), batch_size=4')}"
    summary = _guard_section(out)
    assert summary.count(site) == 1
    assert "built by 3 tests: tests/test_data.py::test_lambda_collate[1]" in out
    # num_workers=0 loaders and bare datasets are reported in words of their own.
    assert "would fail once workers are used (num_workers=0 here; spawn start)" in cases["test_seeded"]
    assert "would fail once in a DataLoader with workers" in cases["test_lines"]
    assert "case collate-fn-lambda; fix: collate-fn-toplevel" in cases["test_lambda_collate[2]"]
    assert "breaks by default on: Linux, Python 3.14+ (forkserver: error/pickle, observed)" in cases["test_seeded"]
    # GitHub annotations at repository-relative paths; the itertools hazard only warns.
    errors = re.findall(r"^::error file=([^,]+),line=(\d+),", out, re.M)
    assert ("src/loaderkit/data.py", str(lambda_line)) in errors
    assert len(errors) == 5  # one per unsafe site and verdict
    warnings = re.findall(r"^::warning file=([^,]+),line=(\d+),title=Breaks on Python 3.14", out, re.M)
    assert warnings == [("src/loaderkit/data.py", str(_line_of(data, "self.ids = itertools.count()")))]


def test_xdist_gives_the_same_findings_once_each(project):
    serial, serial_cases = _pytest(project, "--check-loaders")
    parallel, parallel_cases = _pytest(project, "--check-loaders", "-n", "2")

    def same(cases):  # a lambda's address differs from process to process
        return {n: re.sub(r" at 0x[0-9a-f]+", "", f) if f else f for n, f in cases.items()}

    assert same(parallel_cases) == same(serial_cases)

    def summary(out):
        return sorted(line for line in _guard_section(out).splitlines() if " constructed at " in line)

    assert summary(parallel.stdout) == summary(serial.stdout)
    assert len(summary(serial.stdout)) == len(set(summary(serial.stdout))) == 6  # 5 unsafe verdicts and 1 hazard


def test_warn_mode_fails_nothing_and_reports_everything(project):
    proc, cases = _pytest(project, "--check-loaders=warn", env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert not any(cases.values())
    assert "5 unsafe, 1 with hazards (warn mode: no test failed for them)" in proc.stdout
    assert not re.search(r"^::error ", proc.stdout, re.M)
    assert len(re.findall(r"^::warning ", proc.stdout, re.M)) == 6


def test_the_ini_option_turns_it_on_and_forkserver_comes_from_the_profile(project):
    proc, cases = _pytest(project, "-o", "check_loaders=error", "--start-method=linux-py3.14", "-k", "seeded or squares")
    assert proc.returncode == 1
    assert "forkserver start" in cases["test_seeded"]
    assert cases["test_squares"] is None


def test_a_bad_ini_value_is_a_usage_error(project):
    work, python = project
    proc = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-o", "check_loaders=sometimes"],
                          cwd=work, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4
    assert "check_loaders: 'sometimes' is not one of error, warn, off (ini option)" in proc.stderr


REAL = textwrap.dedent('''
    import json, sys, tempfile, os
    from torch.utils.data import DataLoader
    from loaderkit import data

    def outcome(make):
        try:
            list(make())
            return "pass"
        except Exception as exc:
            return type(exc).__name__

    path = os.path.join(tempfile.mkdtemp(), "a.txt")
    open(path, "wb").write(b"x\\n")

    def lazy_after_a_pass():
        ds = data.LazyLines(path)
        list(DataLoader(ds, num_workers=0))  # the test's own pass opens the file in this process
        return DataLoader(data.LazyLines(path), num_workers=1, multiprocessing_context="spawn")

    if __name__ == "__main__":
        spawn = dict(num_workers=1, multiprocessing_context="spawn")
        print(json.dumps({
            "squares": outcome(lambda: DataLoader(data.Squares(4, data.negate), **spawn)),
            "lambda": outcome(lambda: DataLoader(data.Squares(4), collate_fn=data.make_lambda_loader(2).collate_fn, **spawn)),
            "seeded": outcome(lambda: DataLoader(data.Squares(4), worker_init_fn=data.make_seeded_loader().worker_init_fn, **spawn)),
            "lines": outcome(lambda: DataLoader(data.Lines(path), **spawn)),
            "lazy": outcome(lazy_after_a_pass),
            "scaled_function": outcome(lambda: DataLoader(data.Squares(8, transform=data.negate), **spawn)),
            "scaled_lambda": outcome(lambda: DataLoader(data.Squares(8, transform=lambda x: x * 10), **spawn)),
            "sharded": outcome(lambda: DataLoader(data.Sharded(), num_workers=2, multiprocessing_context="spawn")),
        }))
''')


def test_the_guard_agrees_with_real_spawn_workers(project, tmp_path):
    """The verdicts above, observed: the unsafe loaders really fail under spawn, the safe ones work."""
    _, python = project
    script = tmp_path / "real.py"
    script.write_text(REAL)
    proc = subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    import json

    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["squares"] == seen["lazy"] == seen["scaled_function"] == seen["sharded"] == "pass"
    assert "pass" not in (seen["lambda"], seen["seeded"], seen["lines"], seen["scaled_lambda"])
