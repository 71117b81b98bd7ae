"""End-to-end: ``harness run`` never loses an observed result and never counts an unchecked
case as a pass (hostile inputs from tests/data/hostile_cases)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness.run.pipeline import run_catalogue
from harness.shard.format import read_shard

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


HOSTILE = TESTS / "data" / "hostile_cases"
ROOT = Path(__file__).parents[2]


def _shard(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return read_shard(path)


def _by_cell(shard: dict) -> dict[tuple[str, str], dict]:
    return {(r["case"], r["method"]): r for r in shard["results"]}


def test_an_undecodable_message_and_a_huge_one_are_saved(tmp_path, cli):
    out = tmp_path / "shards"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--cases", "hostile-surrogate", "hostile-huge-message",
                     "--start-method", "in-process", "fork", "--out", str(out),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    (path,) = out.glob("*.json")
    assert path.stat().st_size < 200_000  # a 50 MB message does not make a 50 MB shard
    cells = _by_cell(read_shard(path))
    assert len(cells) == 4
    surrogate = cells[("hostile-surrogate", "fork")]
    assert "img\udcfe.png" in surrogate["message"]  # round-trips exactly
    assert "\x1b" not in stderr + stdout  # escape sequences are never printed raw
    huge = cells[("hostile-huge-message", "fork")]
    assert len(huge["message"]) < 2100
    assert huge["message"].endswith("characters cut]")
    assert int(huge["message"].rsplit("[… ", 1)[1].split()[0]) > 49_000_000  # the real amount cut


def test_a_case_that_checks_nothing_is_never_a_pass(tmp_path, cli):
    out = tmp_path / "shards"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--cases", "hostile-unchecked", "hostile-exits-early",
                     "hostile-lies", "--start-method", "in-process", "spawn", "--out", str(out),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1
    cells = _by_cell(_shard(out))
    for key, rec in cells.items():
        assert (rec["outcome"], rec["kind"]) == ("error", "unchecked"), key
        assert rec["broken"] and not rec["matches"]
    assert "sys.exit()" in cells[("hostile-exits-early", "spawn")]["message"]
    assert "broken case 'hostile-unchecked'" in stderr


def test_an_empty_loader_and_an_unprintable_exception_are_reported(tmp_path, cli):
    out = tmp_path / "shards"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--cases", "hostile-empty-loader", "hostile-evil-exception",
                     "--start-method", "in-process", "fork", "--out", str(out),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1  # the empty loader is a broken case
    cells = _by_cell(_shard(out))
    assert cells[("hostile-empty-loader", "in-process")]["outcome"] == "wrong"
    assert "delivered no batch" in cells[("hostile-empty-loader", "in-process")]["message"]
    evil = cells[("hostile-evil-exception", "fork")]
    assert (evil["outcome"], evil["matches"]) == ("error", True)
    assert evil["message"].endswith("Evil: <str() failed: SystemExit>")
    assert len(evil["stderr_tail"]) < 8100


def test_a_narrower_run_keeps_the_other_cells_and_says_complete_only_when_all_are_there(tmp_path, cli):
    out = tmp_path / "shards"
    for args in (["--cases", "hostile-quick-*"], ["--cases", "hostile-quick-a", "--start-method", "fork"]):
        proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), *args,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.wait(180) == 0
        shard = _shard(out)
        assert len(shard["results"]) == 8 and shard["complete"] is True
    # A first, narrow run into an empty directory is not a complete shard.
    other = tmp_path / "other"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(other), "--cases", "hostile-quick-a",
                     "--start-method", "fork", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(120) == 0
    assert _shard(other)["complete"] is False


def test_concurrent_runs_into_the_same_out_keep_both_results(tmp_path, cli):
    out = tmp_path / "shards"
    runs = [cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), "--cases", case,
                      "--start-method", "in-process", "fork", "--jobs", "1",
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for case in ("hostile-quick-a", "hostile-quick-b")]
    assert [p.wait(180) for p in runs] == [0, 0]
    assert set(_by_cell(_shard(out))) == {(c, m) for c in ("hostile-quick-a", "hostile-quick-b")
                                          for m in ("in-process", "fork")}


def test_a_closed_stderr_pipe_does_not_stop_the_run(tmp_path, cli):
    """``harness run ... 2>&1 >log | head -1``: the progress lines hit a closed pipe."""
    out = tmp_path / "shards"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), "--cases", "hostile-quick-*",
                     "--start-method", "in-process", "fork", "--jobs", "1",
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc.stderr.close()  # the reader went away before the first line
    assert proc.wait(180) == 0
    assert len(_shard(out)["results"]) == 4


def test_an_unwritable_shard_is_one_line_and_the_results_are_saved_elsewhere(tmp_path, monkeypatch, capsys,
                                                                               fixture_catalogue):
    def refuse(path, data, **_options):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("harness.shard.save.write_json_atomic", refuse)
    code = run_catalogue(patterns=["fixture-good"], families=None, methods=["in-process"], out_dir=tmp_path,
                         timeout_s=60, jobs=1, catalogue_dir=fixture_catalogue, isolation="fresh")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "cannot write the shard (Permission denied)" in err[0], err
    assert "Traceback" not in err[0]


def test_an_unreadable_shard_is_set_aside_not_overwritten(tmp_path, cli):
    out = tmp_path / "shards"
    out.mkdir()
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), "--cases", "hostile-quick-a",
                     "--start-method", "in-process", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(120) == 0
    (path,) = out.glob("*.json")
    path.write_text('{"schema_version": 99, "runner": {}}')  # a newer harness's shard
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), "--cases", "hostile-quick-a",
                     "--start-method", "in-process", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0
    (aside,) = out.glob("*.unreadable-*")
    assert json.loads(aside.read_text())["schema_version"] == 99
    assert "not overwritten" in stderr


BAD_CASES = {
    "script-string": ('"script": "false",', "CASE['script']: 'false' is not of type 'boolean'"),
    "timeout-bool": ('"timeout_s": True,', "CASE['timeout_s']: True is not of type 'number'"),
    "timeout-inf": ('"timeout_s": 1e999,', "CASE['timeout_s']: inf is greater than the maximum of 86400"),
    "stdin-typo": ('"script": True, "stdin": "piped",', "CASE['stdin']: 'piped' is not one of"),
    "unknown-key": ('"expct": {},', "CASE['expct']: unknown key (known: id, family,"),
}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_a_bad_case_selected_by_its_own_id_shows_its_error(tmp_path, name, cli):
    extra, expected = BAD_CASES[name]
    cat = tmp_path / "cat"
    cat.mkdir()
    (cat / "bad.py").write_text(textwrap.dedent(f"""\
        CASE = {{
            "id": "bad", "family": "f", "title": "t", "why": "w", "sources": ["s"],
            "expect": {{"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"}},
            {extra}
        }}


        def run(cell):
            pass
        """))
    proc = cli.start("run", "--catalogue", str(cat), "--out", str(tmp_path / "o"), "--cases", "bad",
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    lines = stderr.strip().splitlines()
    assert f"{cat / 'bad.py'}: {expected}" in lines[0], lines
    assert "'bad' matches no case" in lines[1] and "could not be read" in lines[1]
    assert "Traceback" not in stderr


def test_a_case_id_with_a_slash_is_one_line(tmp_path, cli):
    cat = tmp_path / "cat"
    cat.mkdir()
    (cat / "slash.py").write_text(
        'CASE = {"id": "a/b", "family": "f", "title": "t", "why": "w", "sources": ["s"],\n'
        '        "expect": {"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"}}\n'
        "def run(cell):\n    pass\n")
    proc = cli.start("list", "--catalogue", str(cat), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=60)
    assert "CASE['id']: 'a/b' must be lowercase letters" in stderr and "no '/'" in stderr
    assert "Traceback" not in stderr


def test_a_closed_stdout_pipe_keeps_the_exit_code(tmp_path, cli):
    """``harness run ... | true``: the summary hits a closed pipe after the shard is saved."""
    out = tmp_path / "shards"
    proc = cli.start("run", "--catalogue", str(HOSTILE), "--out", str(out), "--cases", "hostile-quick-a",
                     "--start-method", "in-process", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert len(_shard(out)["results"]) == 1
