"""The command line as a user meets it: both entry points, and one-line usage errors (exit 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest


def test_console_script_and_module_agree(cli):
    exe = shutil.which("harness", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert exe, "the 'harness' console script is installed next to the interpreter"
    a = subprocess.run([exe, "--version"], capture_output=True, text=True)
    b = cli("--version")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and a.stdout.startswith("harness ")


def test_list_json_has_the_seed_cases(cli):
    proc = cli("list", "--json")
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


def test_usage_errors_are_one_line_and_exit_2(tmp_path, cli):
    for args, needle in [
        (["run", "--start-method", "threads"], "--start-method: unknown start method 'threads'"),
        (["run", "--methods", "threads"], "--methods: unknown start method 'threads'"),
        (["run", "--cases", "no-such-case"], "--cases: 'no-such-case' matches no case"),
        (["run", "--families", "nope"], "--families: unknown family 'nope'"),
        (["run", "--timeout", "-3"], "--timeout"),
        (["run", "--timeout", "nan"], "--timeout"),
        (["report", "--shards", str(tmp_path / "none")], "shard directory does not exist"),
    ]:
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], (args, proc.stderr)


def test_broken_case_module_is_named_and_others_still_list(tmp_path, cli):
    cat = tmp_path / "mycases"
    cat.mkdir()
    (cat / "__init__.py").write_text("")
    (cat / "broken.py").write_text("CASE = {'id': 'x',\n")
    proc = cli("list", "--json", "--catalogue", str(cat))
    assert proc.returncode == 2
    assert json.loads(proc.stdout) == []
    (line,) = proc.stderr.strip().splitlines()
    assert "broken.py" in line and "syntax error" in line


def test_a_reader_that_closes_early_gets_no_traceback(cli):
    proc = cli.start("list", "--json")  # as `harness list --json | head -c 10`
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_every_error_is_one_line_naming_the_command(cli, tmp_path):
    got = cli.main("explain", "no-such-case", "--catalogue", str(tmp_path))
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == "harness explain: CASE: unknown case 'no-such-case'; see 'harness list'\n"
    got = cli.main("run", "--jobs", "0")  # argparse's errors too, with no usage block
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr == "harness run: argument --jobs: must be > 0, got '0'\n"
    got = cli.main()
    assert got.returncode == 2
    assert got.stderr == "harness: the following arguments are required: command\n"


@pytest.mark.parametrize("old, new", [("--methods", "--start-method"), ("--method", "--start-method")])
def test_the_start_method_option_keeps_its_older_spelling_out_of_help(cli, old, new):
    command = "run" if old == "--methods" else "reproduce"
    proc = cli(command, "--help")
    assert proc.returncode == 0
    shown = " ".join(proc.stdout.split())
    assert f"{new} METHOD" in shown and f"also spelled {old}" in shown
    assert f"{old} METHOD" not in shown and f"[{old}" not in shown


@pytest.mark.parametrize("argv, dest, value", [
    (["run", "--start-method", "fork", "spawn"], "methods", ["fork", "spawn"]),
    (["run", "--methods", "fork", "spawn"], "methods", ["fork", "spawn"]),
    (["reproduce", "x.py", "--start-method", "windows"], "method", "windows"),
    (["reproduce", "x.py", "--method", "windows"], "method", "windows"),
    (["diagnose", "m:f", "--method", "forkserver"], "method", "forkserver"),
    (["diagnose", "m:f"], "method", "spawn"),
    (["run"], "methods", None),
])
def test_both_spellings_reach_the_same_argument(argv, dest, value):
    from harness._cli import build_parser

    assert getattr(build_parser().parse_args(argv), dest) == value


def test_an_empty_catalogue_is_named(tmp_path, cli):
    empty = tmp_path / "mycases"
    empty.mkdir()
    result = cli("run", "--catalogue", str(empty), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"harness run: {empty}: no case modules found (a module with a CASE dict and run(cell); "
        "see 'How to add a case' in the docs, docs/authoring.md)"
    ]
