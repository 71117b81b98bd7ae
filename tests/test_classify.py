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

from harness._classify import Observation, classify, decisive_stderr_line

DATA = Path(__file__).parent / "data" / "stderr"
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
