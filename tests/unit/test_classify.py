"""Classification from real captured worker stderr (Python 3.11) and CPython 3.13/3.14 wordings.

The ``tests/data/stderr/*.txt`` files are stderr captured from real cells on Python 3.11.7 with
torch 2.13.0 (machine paths replaced). The 3.13 and 3.14 messages are the exact format strings
of CPython: 3.13 ``Modules/_pickle.c`` "Can't get local object %R"; 3.14 raises
``PicklingError("Can't pickle local object %R")`` and adds ``__notes__`` such as
"when serializing dict item 'transform'" (gh-122213).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.classify.classifier import Observation, classify, decisive_stderr_line

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


DATA = TESTS / "data" / "stderr"
WORKER_EXITED_1 = "DataLoader worker (pid(s) 2876) exited unexpectedly"
WORKER_EXITED_2 = "DataLoader worker (pid(s) 3404, 3405) exited unexpectedly"


def raised(exc_type: str, message: str, notes: list[str] | None = None, stderr: str = "") -> Observation:
    return Observation(0, False, {"status": "raised", "exc_type": exc_type, "message": message,
                                  "notes": notes or [], "warnings": []}, stderr)


def test_bootstrap_root_cause_comes_from_worker_stderr():
    stderr = (DATA / "py311-bootstrap-spawn.txt").read_text()
    v = classify(raised("RuntimeError", WORKER_EXITED_1, stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "bootstrap")
    assert v.message == f"RuntimeError: {WORKER_EXITED_1}"
    assert v.root_cause.startswith("RuntimeError: An attempt has been made to start a new process")
    assert "bootstrapping phase" in v.root_cause


def test_main_attribute_root_cause_names_mp_main():
    stderr = (DATA / "py311-main-attribute-forkserver.txt").read_text()
    v = classify(raised("RuntimeError", WORKER_EXITED_2, stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "main-attribute")
    assert v.root_cause.startswith("AttributeError: Can't get attribute 'add_one' on <module '__mp_main__'")


@pytest.mark.parametrize(
    ("exc_type", "message", "notes"),
    [
        # 3.10-3.12
        ("AttributeError", "Can't pickle local object 'run.<locals>.<lambda>'", []),
        # 3.13
        ("AttributeError", "Can't get local object 'train.<locals>.<lambda>'", []),
        # 3.14: PicklingError with notes giving the path
        ("_pickle.PicklingError", "Can't pickle local object <function run.<locals>.<lambda> at 0x7f3a2c1b9d00>",
         ["when serializing dict item 'transform'", "when serializing cases._support.Squares state"]),
        # module-level lambda, every version
        ("_pickle.PicklingError", "Can't pickle <function <lambda> at 0x7f5e04d77be0>: attribute lookup "
         "<lambda> on cases.unpicklable_callables.transform_lambda_module_level failed", []),
        # resources
        ("TypeError", "cannot pickle '_io.BufferedReader' object", []),
        ("TypeError", "cannot pickle 'sqlite3.Connection' object", []),
        ("TypeError", "cannot pickle 'module' object", []),
        ("TypeError", "cannot pickle '_thread.lock' object", []),
    ],
)
def test_parent_side_pickling_errors_are_kind_pickle(exc_type, message, notes):
    v = classify(raised(exc_type, message, notes))
    assert (v.outcome, v.kind) == ("error", "pickle")
    assert message.splitlines()[0] in v.root_cause


def test_worker_segfault_seen_by_parent_is_worker_died():
    v = classify(raised("RuntimeError", "DataLoader worker (pid 4242) is killed by signal: Segmentation fault. "))
    assert (v.outcome, v.kind) == ("error", "worker-died")
    assert "Segmentation fault" in v.root_cause


def test_worker_exception_root_cause_is_the_original_exception():
    msg = ("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback (most recent call last):\n"
           '  File "/x/worker.py", line 349, in _worker_loop\n    data = fetcher.fetch(index)\n'
           "ValueError: item 3 is corrupt\n")
    v = classify(raised("ValueError", msg))
    assert (v.outcome, v.kind) == ("error", "worker-exception")
    assert v.message == "ValueError: Caught ValueError in DataLoader worker process 1."
    assert v.root_cause == "ValueError: item 3 is corrupt"


def test_context_mix_semlock():
    msg = ("A SemLock created in a fork context is being shared with a process in a spawn context. "
           "This is not supported. Please use the same context to create multiprocessing objects and Process.")
    v = classify(raised("RuntimeError", msg))
    assert (v.outcome, v.kind) == ("error", "context-mix")


def test_timeout_is_hang_and_signal_death_is_crash():
    assert classify(Observation(-9, True, None, "")).outcome == "hang"
    v = classify(Observation(-11, False, None, "Fatal Python error: Segmentation fault\n"))
    assert (v.outcome, v.root_cause) == ("crash", "killed by SIGSEGV")


def test_wrong_and_skipped_keep_their_reason():
    wrong = classify(Observation(0, False, {"status": "wrong", "message": "item 3 appears 2 times"}, ""))
    assert (wrong.outcome, wrong.message) == ("wrong", "item 3 appears 2 times")
    skip = classify(Observation(0, False, {"status": "skipped", "message": "CUDA is not available"}, ""))
    assert skip.outcome == "skipped"


def test_no_result_and_clean_exit_is_other_error():
    v = classify(Observation(3, False, None, "Traceback (most recent call last):\nKeyError: 'x'\n"))
    assert (v.outcome, v.kind, v.root_cause) == ("error", "other", "KeyError: 'x'")


def test_decisive_line_is_empty_without_errors():
    assert decisive_stderr_line("just some output\n") == (None, "")


# -- Python 3.14, observed: stderr captured from real cells on CPython 3.14.10 (Debian sid), torch
# 2.13.0, paths replaced. The expected kinds are the catalogue's (the case's expect_kind).

def test_py314_forkserver_parent_connection_reset_defers_to_bootstrap_in_stderr():
    # 3.14's forkserver imports __main__ itself; the unguarded DataLoader start kills it, and
    # the parent only sees its connection to the forkserver reset.
    stderr = (DATA / "py314-bootstrap-forkserver-connreset.txt").read_text()
    v = classify(raised("ConnectionResetError", "[Errno 104] Connection reset by peer", stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "bootstrap")
    assert v.root_cause.startswith("RuntimeError: An attempt has been made to start a new process")
    assert v.message == "ConnectionResetError: [Errno 104] Connection reset by peer"


def test_py314_main_attribute_wording():
    stderr = (DATA / "py314-main-attribute-spawn.txt").read_text()
    v = classify(raised("RuntimeError", WORKER_EXITED_1, stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "main-attribute")
    assert v.root_cause == "AttributeError: module '__mp_main__' has no attribute 'add_one'"


def test_py314_forkserver_that_cannot_import_main_is_worker_died_with_its_error():
    stderr = (DATA / "py314-preload-main-stdin-forkserver.txt").read_text()
    v = classify(raised("ConnectionResetError", "[Errno 104] Connection reset by peer", stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "worker-died")
    assert v.root_cause.startswith("FileNotFoundError: [Errno 2] No such file or directory") and "<stdin>" in v.root_cause


@pytest.mark.parametrize(("message", "notes"), [
    ("cannot pickle 'BufferedReader' instances",
     ["when serializing dict item 'f'", "when serializing cases.resources.dataset_open_file.RecordFile state"]),
    ("cannot pickle 'itertools.cycle' object", []),
])
def test_py314_pickle_wordings_keep_their_notes(message, notes):
    v = classify(raised("TypeError", message, notes))
    assert (v.outcome, v.kind) == ("error", "pickle")
    assert v.root_cause.startswith(f"TypeError: {message}")
    assert all(n in v.root_cause for n in notes)


def test_a_secondary_parent_error_without_any_child_error_stays_other():
    v = classify(raised("BrokenPipeError", "[Errno 32] Broken pipe", stderr=""))
    assert (v.outcome, v.kind, v.root_cause) == ("error", "other", "BrokenPipeError: [Errno 32] Broken pipe")


@pytest.mark.parametrize(("code", "name"), [
    (3221225477, "STATUS_ACCESS_VIOLATION (0xC0000005)"),   # Windows GetExitCodeProcess, unsigned
    (-1073741819, "STATUS_ACCESS_VIOLATION (0xC0000005)"),  # the same code read as a signed int
    (3221225725, "STATUS_STACK_OVERFLOW (0xC00000FD)"),
])
def test_windows_ntstatus_exit_is_a_crash(code, name):
    v = classify(Observation(code, False, None, ""))
    assert (v.outcome, v.root_cause) == ("crash", f"killed by {name}")


def test_windows_worker_exit_code_names_the_ntstatus():
    v = classify(raised("RuntimeError", "DataLoader worker (pid(s) 11892) exited unexpectedly with exit code 3221225477"))
    assert (v.outcome, v.kind) == ("error", "worker-died")
    assert "STATUS_ACCESS_VIOLATION" in v.root_cause


def test_worker_killed_by_signal_is_read_from_stderr_too():
    stderr = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
    v = classify(raised("RuntimeError", WORKER_EXITED_1, stderr=stderr))
    assert (v.outcome, v.kind) == ("error", "worker-died")
    assert v.root_cause.startswith("ERROR: Unexpected bus error encountered in worker.")


def test_source_lines_quoted_in_a_traceback_are_not_evidence():
    stderr = ('Traceback (most recent call last):\n  File "/x/reduction.py", line 51, in dumps\n'
              "    raise PicklingError(msg)\nKeyError: 'shard-3'\n")
    assert decisive_stderr_line(stderr) == (None, "KeyError: 'shard-3'")


def test_an_older_classifiers_verdict_is_re_derived_from_the_evidence():
    from harness.classify.classifier import CLASSIFIER_VERSION
    from harness.report.merge import refresh_verdict

    stderr = (DATA / "py314-main-attribute-spawn.txt").read_text()
    old = {"case": "entry-def-inside-main-guard", "method": "spawn", "outcome": "error", "kind": "worker-died",
           "message": f"RuntimeError: {WORKER_EXITED_1}", "root_cause": f"RuntimeError: {WORKER_EXITED_1}",
           "expected": "error", "expected_kind": "main-attribute", "matches": False, "classifier": 1,
           "evidence": {"returncode": 0, "timed_out": False, "status": "raised", "exc_type": "RuntimeError",
                        "message": WORKER_EXITED_1, "notes": []},
           "stderr_tail": stderr}
    new = refresh_verdict(old)
    assert (new["outcome"], new["kind"], new["matches"]) == ("error", "main-attribute", True)
    assert new["classifier"] == CLASSIFIER_VERSION and old["kind"] == "worker-died"  # the input is not changed
    assert refresh_verdict({k: v for k, v in old.items() if k != "evidence"}) ["kind"] == "worker-died"
