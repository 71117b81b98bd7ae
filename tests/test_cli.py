"""The command line as a user meets it: both entry points, and one-line usage errors (exit 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120)


def test_console_script_and_module_agree():
    exe = shutil.which("harness", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert exe, "the 'harness' console script is installed next to the interpreter"
    a = subprocess.run([exe, "--version"], capture_output=True, text=True)
    b = run("--version")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and a.stdout.startswith("harness ")


def test_list_json_has_the_seed_cases():
    proc = run("list", "--json")
    assert proc.returncode == 0, proc.stderr
    cases = {c["id"]: c for c in json.loads(proc.stdout)}
    seeds = ["transform-local-def", "transform-lambda", "transform-lambda-module-level",
             "transform-closure-captures-local", "transform-toplevel-def", "transform-toplevel-class",
             "dataset-lambda-attribute", "dataset-open-file", "dataset-open-file-lazy",
             "dataset-sqlite-connection", "dataset-class-in-function", "dataset-module-object",
             "entry-no-main-guard", "entry-def-inside-main-guard"]
    assert set(seeds) <= set(cases)
    assert cases["entry-no-main-guard"]["script"] is True
    assert set(cases["transform-lambda"]["expect"]) == {"in-process", "fork", "spawn", "forkserver"}


def test_usage_errors_are_one_line_and_exit_2(tmp_path):
    for args, needle in [
        (["run", "--methods", "threads"], "--methods: unknown start method 'threads'"),
        (["run", "--cases", "no-such-case"], "--cases: 'no-such-case' matches no case"),
        (["run", "--families", "nope"], "--families: unknown family 'nope'"),
        (["run", "--timeout", "-3"], "--timeout"),
        (["run", "--timeout", "nan"], "--timeout"),
        (["report", "--shards", str(tmp_path / "none")], "shard directory does not exist"),
    ]:
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], (args, proc.stderr)


def test_broken_case_module_is_named_and_others_still_list(tmp_path):
    cat = tmp_path / "mycases"
    cat.mkdir()
    (cat / "__init__.py").write_text("")
    (cat / "broken.py").write_text("CASE = {'id': 'x',\n")
    proc = run("list", "--json", "--catalogue", str(cat))
    assert proc.returncode == 2
    assert json.loads(proc.stdout) == []
    (line,) = proc.stderr.strip().splitlines()
    assert "broken.py" in line and "syntax error" in line


def test_a_reader_that_closes_early_gets_no_traceback():
    proc = subprocess.run(f"{sys.executable} -m harness list --json | head -c 10", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert len(proc.stdout) == 10
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr
