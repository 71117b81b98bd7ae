"""Coloured output, errors a framework caught, chained tracebacks and ``torch.multiprocessing.spawn``.

Real outputs come from the captured files of ``tests/data/tracebacks/`` (``source: captured``;
each header names the interpreter and the command) and from the stderr of real cells in
``tests/data/stderr/``:

* ``py311-unittest-pickle-lambda-spawn.txt``: CPython 3.11.7, torch 2.13.0+cpu, ``harness
  reproduce`` of a script ending in ``unittest.main()`` whose test iterates a spawn
  ``DataLoader`` over a dataset holding a lambda; the cell's result was ``raised``,
  ``SystemExit``, message ``True``.
* ``py314-color-unittest-pickle-lambda-spawn.txt`` and ``py314-color-unittest-worker-keyerror-spawn.txt``:
  CPython 3.14.10 (Debian sid), torch 2.13.0, the same script and one whose dataset raises
  ``KeyError`` in the worker, run by ``harness reproduce --method forkserver`` (the scripts
  ask for spawn themselves) with ``FORCE_COLOR=1 PYTHON_COLORS=1``; the result was ``raised``,
  ``SystemExit``, message ``1``.

Escape sequences other than the colours CPython prints are written from ECMA-48 (5th edition,
sections 5.3-5.6 and 8.3): CSI, OSC terminated by BEL or ST, DCS, character set designation.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from harness.classify.classifier import (
    Observation,
    classify,
    classify_traceback,
    decisive_stderr_line,
    strip_escapes,
)

TESTS = Path(__file__).resolve().parents[1]
CORPUS = TESTS / "data" / "tracebacks"
STDERR = TESTS / "data" / "stderr"
WORKER_EXITED = "DataLoader worker (pid(s) 4242) exited unexpectedly"


def corpus_text(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8").partition("\n---\n")[2]


def raised(exc_type: str, message: str, stderr: str = "", notes: list[str] | None = None) -> Observation:
    return Observation(0, False, {"status": "raised", "exc_type": exc_type, "message": message,
                                  "notes": notes or [], "warnings": []}, stderr)


COLOURED = sorted(p.name for p in CORPUS.glob("*-color-*.txt"))


def test_the_coloured_corpus_is_really_coloured():
    assert len(COLOURED) >= 10
    for name in COLOURED:
        assert "\x1b[" in corpus_text(name), name


# -- escapes -------------------------------------------------------------------------------

@pytest.mark.parametrize("wrapped", [
    "\x1b[1;35mKeyError\x1b[0m: \x1b[35m'x'\x1b[0m",                 # SGR, as CPython 3.13 prints
    "\x1b[38;2;255;0;0mKeyError\x1b[39;49;00m: 'x'",                  # 24-bit colour, pygments' reset
    "\x1b]8;;file:///a.py\x07KeyError\x1b]8;;\x07: 'x'",              # OSC 8 hyperlink, BEL-terminated
    "\x1b]0;title\x1b\\KeyError: 'x'",                                 # OSC terminated by ST
    "\x1bP1$r0m\x1b\\KeyError: 'x'",                                   # DCS
    "\x1b(B\x1b)0KeyError: 'x'",                                       # nF: character set designation
    "\x1b7\x1b[2K\x1b[1GKeyError: 'x'\x1b8",                          # save cursor, erase line, restore
    "\x9b1;31mKeyError\x9b0m: 'x'",                                    # 8-bit CSI
    "\x1b[?25lKeyError: 'x'\x1b[?25h",                                 # private parameters (cursor)
    "\x1b[1 qKeyError: 'x'",                                           # CSI with an intermediate byte
])
def test_every_ecma48_sequence_is_stripped(wrapped):
    assert strip_escapes(wrapped) == "KeyError: 'x'"
    assert decisive_stderr_line(f"Traceback (most recent call last):\n{wrapped}\n") == (None, "KeyError: 'x'")


def test_an_unterminated_command_string_does_not_swallow_the_lines_below():
    assert strip_escapes("\x1b]0;half a title\nKeyError: 'x'\n") == "\nKeyError: 'x'\n"


@pytest.mark.parametrize("name", COLOURED)
def test_coloured_output_reads_as_its_plain_text(name):
    coloured = corpus_text(name)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured)  # CPython, pytest and unittest print only SGR
    assert classify_traceback(coloured) == classify_traceback(plain)


@pytest.mark.parametrize("prefix", ["\x1b[2K", "\x1b]0;job\x07", "\x1b(B", "\x1b[0m\x1b[K"])
def test_an_escape_before_each_line_hides_nothing(prefix):
    plain = strip_escapes(corpus_text("linux-py3.13-color-main-attribute-forkserver.txt"))
    prefixed = "\n".join(prefix + line for line in plain.splitlines())
    v = classify_traceback(prefixed)
    assert (v.kind, v.root_cause) == ("main-attribute", classify_traceback(plain).root_cause)
    assert v.root_cause.startswith("AttributeError: Can't get attribute 'Squares' on <module '__mp_main__'")


def test_a_coloured_cell_stderr_gives_a_plain_root_cause():
    stderr = corpus_text("linux-py3.14-color-no-main-guard-forkserver.txt")
    v = classify(raised("ConnectionResetError", "[Errno 104] Connection reset by peer", stderr))
    assert (v.outcome, v.kind) == ("error", "bootstrap")
    assert v.root_cause == ("RuntimeError: An attempt has been made to start a new process before the "
                            "current process has finished its bootstrapping phase.")


def test_a_coloured_message_in_the_result_is_kept_plain():
    v = classify(raised("RuntimeError", f"\x1b[31m{WORKER_EXITED}\x1b[0m",
                        corpus_text("linux-py3.14-color-main-attribute-spawn.txt")))
    assert (v.kind, v.message) == ("main-attribute", f"RuntimeError: {WORKER_EXITED}")
    assert v.root_cause == "AttributeError: module '__mp_main__' has no attribute 'Squares'"


# -- an error a framework caught, then SystemExit --------------------------------------------

@pytest.mark.parametrize(("file", "code", "kind", "root"), [
    ("py311-unittest-pickle-lambda-spawn.txt", "True", "pickle",
     "AttributeError: Can't pickle local object 'LoaderTest.test_batches.<locals>.<lambda>'"),
    ("py314-color-unittest-pickle-lambda-spawn.txt", "1", "pickle",
     "_pickle.PicklingError: Can't pickle local object <function LoaderTest.test_batches.<locals>.<lambda>"),
    ("py314-color-unittest-worker-keyerror-spawn.txt", "1", "worker-exception", "KeyError: 6"),
])
def test_a_cell_that_unittest_ended_is_judged_by_the_error_it_printed(file, code, kind, root):
    v = classify(raised("SystemExit", code, (STDERR / file).read_text(encoding="utf-8")))
    assert (v.outcome, v.kind) == ("error", kind)
    assert v.root_cause.startswith(root) and "\x1b" not in v.root_cause
    assert "SystemExit" not in v.message


def test_a_cell_that_printed_no_error_before_exiting_stays_other():
    v = classify(raised("SystemExit", "2", "usage: train.py [-h]\n"))
    assert (v.outcome, v.kind, v.root_cause) == ("error", "other", "SystemExit: 2")


def test_a_pasted_systemexit_after_the_printed_error_is_not_the_final_one():
    # IPython prints the SystemExit that unittest.main() raises in a notebook below its report.
    text = ((STDERR / "py311-unittest-pickle-lambda-spawn.txt").read_text(encoding="utf-8")
            + "An exception has occurred, use %tb to see the full traceback.\n\nSystemExit: True\n")
    v = classify_traceback(text)
    assert v.kind == "pickle"
    assert v.root_cause == "AttributeError: Can't pickle local object 'LoaderTest.test_batches.<locals>.<lambda>'"


def test_typers_rich_boxes_are_source_not_evidence():
    v = classify_traceback(corpus_text("linux-typer-rich-local-lambda.txt"))
    assert (v.kind, v.root_cause) == ("pickle", "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'")


def test_pytests_e_prefix_is_taken_off_the_root_cause():
    v = classify_traceback(corpus_text("linux-py3.14-color-pytest-module-lambda.txt"))
    assert v.kind == "pickle"
    assert v.root_cause.startswith("_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f7a7c457110>")


# -- chained tracebacks ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["linux-py3.14-color-module-lambda-collate-spawn.txt",
                                  "linux-py3.14-color-module-lambda-collate-forkserver.txt"])
def test_the_final_exception_of_a_chain_decides_not_its_cause(name):
    text = strip_escapes(corpus_text(name))
    cause = "AttributeError: module '__main__' has no attribute '<lambda>'"
    assert text.index(cause) < text.index("During handling of the above exception")
    v = classify_traceback(text)
    assert v.kind == "pickle" and "it's not found as __main__.<lambda>" in v.root_cause
    # The same chain with "raise ... from": the other marker CPython prints.
    direct = text.replace("During handling of the above exception, another exception occurred:",
                          "The above exception was the direct cause of the following exception:")
    assert classify_traceback(direct).kind == "pickle"


def test_a_generic_final_exception_leaves_the_decision_to_the_workers():
    # The parent's chain ends in "exited unexpectedly" (from _queue.Empty): the workers decide.
    v = classify_traceback(corpus_text("linux-py3.14-color-main-attribute-spawn.txt"))
    assert (v.kind, v.message) == ("main-attribute", "RuntimeError: DataLoader worker (pid(s) 14895) exited unexpectedly")


# -- torch.multiprocessing.spawn ---------------------------------------------------------------

@pytest.mark.parametrize("signal", ["SIGABRT", "SIGSEGV", "SIGKILL", "SIGBUS", "SIGTRAP", "SIGILL"])
def test_a_spawned_process_killed_by_a_signal_is_worker_died(signal):
    # torch/multiprocessing/spawn.py: "process %d terminated with signal %s"
    line = f"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal {signal}"
    v = classify(raised("torch.multiprocessing.spawn.ProcessExitedException", line.partition(": ")[2]))
    assert (v.outcome, v.kind, v.root_cause) == ("error", "worker-died", line)
    real = strip_escapes(corpus_text("linux-py3.13-color-mp-spawn-sigabrt.txt"))
    pasted = classify_traceback(real.replace("signal SIGABRT", f"signal {signal}"))
    assert (pasted.kind, pasted.root_cause) == ("worker-died", line)


def test_a_spawned_process_that_exited_with_a_code_defers_to_its_stderr():
    # A spawned child that re-ran an unguarded __main__ dies in bootstrap and exits with 1.
    stderr = corpus_text("linux-py3.14-color-no-main-guard-forkserver.txt")
    msg = "process 0 terminated with exit code 1"
    assert classify(raised("torch.multiprocessing.spawn.ProcessExitedException", msg, stderr)).kind == "bootstrap"
    v = classify(raised("torch.multiprocessing.spawn.ProcessExitedException", msg, ""))
    assert (v.kind, v.root_cause) == ("worker-died", f"torch.multiprocessing.spawn.ProcessExitedException: {msg}")


def test_a_spawned_process_that_raised_is_worker_exception_with_its_own_error():
    text = corpus_text("linux-py3.13-color-mp-spawn-raised.txt")
    v = classify_traceback(text)
    assert (v.kind, v.root_cause) == ("worker-exception", "ValueError: shard 3 is corrupt")
    message = strip_escapes(text).split("ProcessRaisedException: ", 1)[1]
    cell = classify(raised("torch.multiprocessing.spawn.ProcessRaisedException", message))
    assert (cell.kind, cell.root_cause) == ("worker-exception", "ValueError: shard 3 is corrupt")
    assert "-- Process 1 terminated with the following error:" in cell.message


# -- tracebacks of several workers interleaved line by line (a Windows console) -----------------

def _tracebacks(text: str) -> list[list[str]]:
    parts = re.split(r"(?m)^(?=Traceback \(most recent call last\):)", strip_escapes(text))
    return [p.splitlines() for p in parts if p.strip()]


def _interleave(blocks: list[list[str]], lag: int) -> str:
    shifted = [[None] * (lag * i) + b for i, b in enumerate(blocks)]
    return "\n".join(x for row in itertools.zip_longest(*shifted) for x in row if x is not None)


@pytest.mark.parametrize(("name", "kind", "root"), [
    ("linux-py3.13-color-no-main-guard-spawn.txt", "bootstrap",
     "RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase."),
    ("linux-py3.13-color-main-attribute-forkserver.txt", "main-attribute",
     "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from '/home/user/proj/main_attr.py'>"),
    ("linux-py3.14-color-main-attribute-spawn.txt", "main-attribute",
     "AttributeError: module '__mp_main__' has no attribute 'Squares'"),
])
@pytest.mark.parametrize("lag", [0, 1, 2, 3, 5])
def test_interleaved_worker_tracebacks_keep_kind_and_a_whole_decisive_line(name, kind, root, lag):
    *workers, parent = _tracebacks(corpus_text(name))
    assert len(workers) >= 2  # the real run's two workers each printed their traceback
    v = classify_traceback(_interleave(workers, lag) + "\n" + "\n".join(parent))
    assert (v.kind, v.root_cause) == (kind, root)


# -- what log tools put before each line ----------------------------------------------------------

#: A spawn worker's decisive lines and the parent's, worded as CPython 3.11 and torch print them.
_WORKER_LINES = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 132, in _main',
    "    self = reduction.pickle.load(from_parent)",
    "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from '/home/user/t.py'>",
    "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly",
]


@pytest.mark.parametrize("prefix", [
    "2024-05-01T10:00:00.1234567Z ",  # a GitHub Actions log line (downloaded logs keep the timestamp)
    "[rank0]: ",                       # torchrun's per-rank prefix
    "trainer-1  | ",                   # docker compose's service prefix
    "  | ",                            # the frame of an exception inside an ExceptionGroup (PEP 654)
])
def test_a_log_tool_s_line_prefix_is_not_part_of_the_decisive_line(prefix):
    verdict = classify_traceback("\n".join(prefix + line for line in _WORKER_LINES))
    assert verdict.kind == "main-attribute"
    assert verdict.root_cause.startswith("AttributeError: Can't get attribute 'Squares'"), verdict.root_cause


def test_the_parent_s_exited_unexpectedly_never_hides_the_worker_s_own_error():
    """The worker prints its traceback and dies before the parent raises (the real order): its
    line decides, as it does when the parent's block comes first."""
    worker = ["Traceback (most recent call last):",
              '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 132, in _main',
              "    self = reduction.pickle.load(from_parent)",
              "ModuleNotFoundError: No module named 'mydata'"]
    parent = ["Traceback (most recent call last):", '  File "train.py", line 30, in <module>',
              "RuntimeError: DataLoader worker (pid(s) 999) exited unexpectedly"]
    for text in ("\n".join(worker + parent), "\n".join(parent + worker)):
        verdict = classify_traceback(text)
        assert verdict.kind == "worker-died"
        assert verdict.root_cause == "ModuleNotFoundError: No module named 'mydata'"
