"""``harness reproduce`` on real user scripts (``tests/user_code``), each run in its own process tree.

Each spawn run costs a few seconds (a fresh interpreter plus worker start-up), so the fast suite
keeps two real runs; the rest are marked ``catalogue``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import psutil
import pytest

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


USER = TESTS / "user_code"



def test_missing_guard_replayed_as_windows(cli):
    rc, out, _ = cli.main("reproduce", str(USER / "no_guard.py"), "--start-method", "windows", "--json")
    result = json.loads(out)
    assert rc == 1
    assert list(result) == ["script", "method", "outcome", "kind", "root_cause", "duration_s", "hint", "case", "fix",
                            "note", "culprits", "output"]
    assert result["culprits"] == []  # nothing the loader holds fails: the script lacks its main guard
    assert result["method"] == "spawn"  # Windows' only start method
    assert result["note"] is None  # windows is no Python version
    assert (result["outcome"], result["kind"]) == ("error", "bootstrap")
    assert "bootstrapping phase" in result["root_cause"]
    assert "entry-no-main-guard" in result["hint"]
    assert "fix: entry-main-guard" in result["hint"]
    assert "harness explain entry-main-guard (" in result["hint"]
    shown = result["hint"].rsplit("harness explain entry-main-guard (", 1)[1].split(")", 1)[0]
    assert Path(shown).is_absolute() and Path(shown).is_file(), shown  # a file the user can open
    assert (result["case"], result["fix"]) == ("entry-no-main-guard", "entry-main-guard")
    assert result["duration_s"] > 0


def test_script_arguments_arrive_after_double_dash(cli):
    # clean.py parses --epochs as an int; a value it rejects proves the arguments reached it.
    rc, out, _ = cli.main("reproduce", str(USER / "clean.py"), "--start-method", "fork", "--json", "--", "--epochs", "two")
    result = json.loads(out)
    assert rc == 1
    assert result["outcome"] == "error"
    assert result["root_cause"] == "SystemExit: 2"


@pytest.mark.catalogue
def test_script_arguments_change_the_run(cli):
    rc, out, _ = cli.main("reproduce", str(USER / "clean.py"), "--start-method", "fork", "--", "--epochs", "2", "--num-workers", "1")
    assert rc == 0
    assert "under fork: pass" in out


@pytest.mark.parametrize("argv, words", [
    (["missing_script.py"], "missing_script.py: script not found"),
    (["clean.py", "--start-method", "plan9"], "--start-method: unknown start method or platform 'plan9'"),
    (["clean.py", "--method", "plan9"], "--method: unknown start method or platform 'plan9'"),  # the older spelling
])
def test_usage_errors_exit_2_with_one_line(cli, argv, words):
    argv = [str(USER / argv[0]), *argv[1:]]
    rc, out, err = cli.main("reproduce", *argv)
    assert rc == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err


@pytest.mark.catalogue
@pytest.mark.parametrize("script, method, outcome, kind, cause, case", [
    ("no_guard.py", "linux", "pass", None, "", None),
    ("no_guard.py", "linux-py3.14", "error", "bootstrap", "bootstrapping phase", "entry-no-main-guard"),
    ("class_in_guard.py", "macos", "error", "main-attribute",
     "Can't get attribute 'Points' on <module '__mp_main__'", "inside-main-guard"),
    ("lambda_collate.py", "spawn", "error", "pickle", "Can't pickle local object 'main.<locals>.<lambda>'",
     "lambda"),
    ("lambda_collate.py", "fork", "pass", None, "", None),
    ("clean.py", "spawn", "pass", None, "", None),
    ("clean.py", "forkserver", "pass", None, "", None),
])
def test_outcome_per_method(cli, script, method, outcome, kind, cause, case):
    rc, out, _ = cli.main("reproduce", str(USER / script), "--start-method", method, "--json")
    result = json.loads(out)
    assert (result["outcome"], result["kind"]) == (outcome, kind)
    assert cause in result["root_cause"]
    assert rc == (0 if outcome == "pass" else 1)
    if case:
        assert case in result["hint"]
        assert case in result["case"]
    else:
        assert result["hint"] is None
        assert (result["case"], result["fix"]) == (None, None)


def _live(script: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if any(script in part for part in proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.catalogue
def test_hang_is_killed_with_its_tree_at_the_timeout(cli):
    t0 = time.monotonic()
    rc, out, _ = cli.main("reproduce", str(USER / "stalls.py"), "--start-method", "fork", "--timeout", "4", "--json")
    result = json.loads(out)
    assert rc == 1
    assert result["outcome"] == "hang"
    assert 4 <= result["duration_s"] < 30
    assert time.monotonic() - t0 < 60
    assert "killed with its whole process tree" in result["hint"]
    assert _live(str(USER / "stalls.py")) == []


@pytest.mark.parametrize(("kind", "root_cause", "case"), [
    # Python 3.11 and 3.14 wordings of the same mechanisms (observed in cells on each).
    ("pickle", "TypeError: cannot pickle '_io.BufferedReader' object", "dataset-open-file"),
    ("pickle", "TypeError: cannot pickle 'BufferedReader' instances (when serializing dict item 'f')", "dataset-open-file"),
    ("main-attribute", "AttributeError: Can't get attribute 'add_one' on <module '__mp_main__' from '/x/train.py'>",
     "entry-def-inside-main-guard"),
    ("main-attribute", "AttributeError: module '__mp_main__' has no attribute 'add_one'", "entry-def-inside-main-guard"),
    ("main-attribute", "AttributeError: module '__mp_main__' has no attribute 'SquaresDataset'",
     "entry-class-inside-main-guard"),
    ("pickle", "AttributeError: Can't pickle local object 'run.<locals>.<lambda>'", "transform-lambda"),
    ("pickle", "_pickle.PicklingError: Can't pickle local object <function run.<locals>.<lambda> at 0x7f3a2c1b9d00>",
     "transform-lambda"),
    ("pickle", "_pickle.PicklingError: Can't pickle local object <function run.<locals>.add at 0x7f3a2c1b9d00>",
     "transform-local-def"),
    ("pickle", "TypeError: cannot pickle 'itertools.cycle' object", "dataset-itertools-cycle"),
    ("fd-limit", "RuntimeError: received 0 items of ancdata", "fd-limit-many-tensors"),
    ("bootstrap", "RuntimeError: An attempt has been made to start a new process before the current process has "
     "finished its bootstrapping phase.", "entry-no-main-guard"),
    # Root causes of the committed shards (Python 3.12 and 3.13 name the module a REPL's
    # __main__ lives in by its loader; 3.14 writes a local object's class or function whole).
    ("main-attribute", "AttributeError: Can't get attribute 'add_one' on <module '__main__' "
     "(<class '_frozen_importlib.BuiltinImporter'>)>", "interactive-stdin-def"),
    ("main-attribute", "AttributeError: Can't get attribute 'NotebookSquares' on <module '__main__' "
     "(<class '_frozen_importlib.BuiltinImporter'>)>", "interactive-stdin-dataset-class"),
    ("main-attribute", "AttributeError: module '__main__' has no attribute 'add_one'", "interactive-stdin-def"),
    ("pickle", "_pickle.PicklingError: Can't pickle local object <class 'cases.wrong_scope.dataset_class_in_function."
     "make_loader.<locals>.Local'> (when serializing cases.wrong_scope.dataset_class_in_function.make_loader."
     "<locals>.Local object)", "dataset-class-in-function"),
    ("pickle", "AttributeError: Can't get local object 'run.<locals>.Augment.shift'",
     "transform-staticmethod-local-class"),
    ("pickle", "AttributeError: Can't pickle local object 'LambdaSquares.__init__.<locals>.<lambda>'",
     "dataset-lambda-attribute"),
    ("worker-died", "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/hc-2jvoh2k7/<stdin>'",
     "interactive-python-dash-pipe"),
])
def test_hint_names_the_same_case_on_every_python(kind, root_cause, case):
    from harness.classify.classifier import Verdict
    from harness.inspect.reproduce import case_for, hint_for

    verdict = Verdict("error", kind, root_cause, root_cause)
    hint = hint_for(verdict)
    assert hint is not None and hint.startswith(f"matches catalogue case {case} ("), hint
    assert case_for(verdict).id == case


def test_classify_command_reads_a_pasted_traceback(tmp_path, cli):
    corpus = TESTS / "data" / "tracebacks" / "windows-bootstrap-brokenpipe.txt"
    rc, printed, _ = cli.main("classify", str(corpus), "--json")
    assert rc == 1
    out = json.loads(printed)
    assert (out["outcome"], out["kind"]) == ("error", "bootstrap")
    assert out["hint"].startswith("matches catalogue case entry-no-main-guard (")
    assert (out["case"], out["fix"]) == ("entry-no-main-guard", "entry-main-guard")
    empty = tmp_path / "empty.txt"
    empty.write_text("all good\n", encoding="utf-8")
    rc, printed, _ = cli.main("classify", str(empty), "--json")
    assert rc == 0
    assert json.loads(printed) == {"outcome": None, "kind": None, "root_cause": "", "hint": None,
                                   "case": None, "fix": None}
    assert cli.main("classify", str(empty)).returncode == 0
    rc, _, err = cli.main("classify", str(tmp_path / "missing.txt"))
    assert rc == 2
    assert err.strip() == f"harness classify: {tmp_path / 'missing.txt'}: cannot read: No such file or directory"


# What the queue feeder thread of a worker printed when collate_same_name.py's batch could not go
# back (harness reproduce under fork, Python 3.11, torch 2.13; the run hung until its timeout).
_FEEDER_STDERR = """Traceback (most recent call last):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/queues.py", line 244, in _feed
    obj = _ForkingPickler.dumps(obj)
          ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/reduction.py", line 51, in dumps
    cls(buf, protocol).dump(obj)
_pickle.PicklingError: Can't pickle <class '__main__.Batch'>: it's not the same object as __main__.Batch
"""
_BATCH_HINT = "a worker's batch could not be pickled on its way back to the main process"


def test_a_hang_after_a_feeder_pickling_error_says_the_batch_could_not_come_back():
    from harness.classify.classifier import Verdict
    from harness.inspect.reproduce import hint_for

    root = _FEEDER_STDERR.strip().splitlines()[-1]
    hint = hint_for(Verdict("hang", None, "timed out; process group killed", root), 10, _FEEDER_STDERR)
    assert hint.startswith(_BATCH_HINT)
    assert "under every start method, fork included" in hint
    assert "\n" not in hint
    # The root cause alone is enough for a hang; a hang with no pickling error keeps the generic hint.
    assert hint_for(Verdict("hang", None, "timed out", root), 10).startswith(_BATCH_HINT)
    assert hint_for(Verdict("hang", None, "timed out", ""), 10, "").startswith("the run did not finish after 10 s")
    # A start that fails on the same message in the parent is about what is sent, not the batch.
    start = "_pickle.PicklingError: Can't pickle <class 'x.Batch'>: it's not the same object as x.Batch"
    assert not hint_for(Verdict("error", "pickle", start, start)).startswith(_BATCH_HINT)


def test_classify_names_a_pasted_feeder_traceback_as_a_batch_that_could_not_come_back(tmp_path, cli):
    pasted = tmp_path / "feeder.txt"
    pasted.write_text(_FEEDER_STDERR, encoding="utf-8")
    rc, printed, _ = cli.main("classify", str(pasted), "--json")
    assert rc == 1
    out = json.loads(printed)
    assert out["kind"] == "pickle"
    assert out["hint"].startswith(_BATCH_HINT)
    assert (out["case"], out["fix"]) == (None, None)  # no catalogue case shows a batch that cannot come back


def test_a_platform_of_another_python_says_what_it_does_not_replay():
    from harness.inspect.reproduce import python_note

    assert python_note("linux-py3.14", (3, 11)) == (
        "--start-method linux-py3.14 on Python 3.11 applies Python 3.14's start method (forkserver), not Python 3.14's "
        "pickling rules; run on Python 3.14 for those (harness diagnose lists what it will no longer pickle as hazards)")
    assert python_note("linux", (3, 14)) == (
        "--start-method linux on Python 3.14 applies Python 3.13's start method (fork), not Python 3.13's pickling rules; "
        "run on Python 3.13 for those")
    for same in (("linux-py3.14", (3, 14)), ("linux", (3, 12)), ("spawn", (3, 11)), ("windows", (3, 11)),
                 ("macos", (3, 14))):
        assert python_note(*same) is None, same


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="3.14 replays itself")
def test_reproduce_as_linux_py314_on_an_older_python_prints_the_note(cli):
    rc, out, _ = cli.main("reproduce", str(USER / "clean.py"), "--start-method", "linux-py3.14", "--timeout", "60")
    lines = out.splitlines()
    assert rc == 0
    assert lines[0].startswith(f"{USER / 'clean.py'} under linux-py3.14 (forkserver): pass after ")
    assert lines[1].startswith("note: --start-method linux-py3.14 on Python 3.")
    assert "applies Python 3.14's start method (forkserver), not Python 3.14's pickling rules" in lines[1]
