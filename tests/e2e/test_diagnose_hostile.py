"""``harness diagnose`` and ``assert_spawn_safe`` on hostile user code (``tests/user_code/hostile_*``).

The user's code may raise any BaseException, sleep forever, end its process or hand over a
100,000-node reference cycle. The command runs it in a child process with a timeout and a
memory bound; the in-process API contains what it raises. Expected outcomes were taken from
running each target (the command's exit status, the one line it prints).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

USER = TESTS / "user_code"
ROOT = USER.parent.parent
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and RLIMIT_AS")



# -- user code that raises BaseExceptions --------------------------------------------------------

@pytest.mark.parametrize("factory, exc_type, message", [
    ("exit_0", "SystemExit", "0"),
    ("exit_5", "SystemExit", "5"),
    ("keyboard_interrupt", "KeyboardInterrupt", "(raised with no message)"),
    ("generator_exit", "GeneratorExit", "(raised with no message)"),
])
def test_reduce_raising_a_base_exception_is_a_finding(cli, factory, exc_type, message):
    rc, out, err = cli.main("diagnose", str(USER / f"hostile_raises.py:{factory}"))
    assert rc == 1, err
    assert "UNSAFE under spawn: 1 object cannot be sent to a worker" in out
    assert "1. dataset.bomb" in out
    assert "type:    hostile_raises.Raises" in out
    assert f"message: {exc_type}: {message}" in out
    assert "Traceback" not in out + err


def test_reduce_raising_a_base_exception_in_json(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, _ = cli.main("diagnose", str(USER / "hostile_raises.py:exit_0"), "--json")
    assert rc == 1
    result = json.loads(out)
    assert result["safe"] is False
    assert result["problems"] == [{"path": "dataset.bomb", "type": "hostile_raises.Raises", "message": "0",
                                   "case": None, "fix": None,
                                   "file": "tests/user_code/hostile_raises.py", "line": 20}]  # class Raises


def test_escape_sequences_from_user_code_do_not_reach_the_terminal(cli):
    rc, out, _ = cli.main("diagnose", str(USER / "hostile_raises.py:escapes"))
    assert rc == 1
    assert "\x1b" not in out
    assert "message: ValueError: \\x1b[2J\\x1b[31mall clear" in out


@pytest.mark.parametrize("factory, expected", [
    # __setstate__ raises SystemExit(7) when the worker unpickles the index: at class Unpicklable
    ("setstate_exits", {"path": "indices", "type": "hostile_raises.Unpicklable", "message":
                        "pickles, but unpickling in the worker fails: SystemExit: 7",
                        "case": "sampler-index-unpicklable", "fix": "sampler-index-getnewargs",
                        "file": "tests/user_code/hostile_raises.py", "line": 63}),
    # the dataset's __len__ raises KeyboardInterrupt while the sampler draws: not a Ctrl-C; torch's
    # samplers have no site in user code, so it is placed at the dataset, class LenInterrupts
    ("len_interrupts", {"path": "indices", "type": "torch.utils.data.sampler.BatchSampler", "message":
                        "drawing the first indices raised KeyboardInterrupt", "case": None, "fix": None,
                        "file": "tests/user_code/hostile_raises.py", "line": 96}),
])
def test_indices_that_exit_or_interrupt_are_a_finding(cli, monkeypatch, factory, expected):
    monkeypatch.chdir(ROOT)
    rc, out, err = cli.main("diagnose", str(USER / f"hostile_raises.py:{factory}"), "--json")
    assert rc == 1, err
    assert json.loads(out)["problems"] == [expected]


@pytest.mark.parametrize("target, words", [
    ("hostile_import.py:anything", "hostile_import.py: import failed: SystemExit: 4"),
    ("hostile_raises.py:factory_exits", "calling factory_exits() raised SystemExit: 3"),
    ("hostile_raises.py:factory_interrupts", "calling factory_interrupts() raised KeyboardInterrupt"),
])
def test_import_or_factory_raising_a_base_exception_is_one_line_exit_2(cli, target, words):
    rc, out, err = cli.main("diagnose", str(USER / target))
    assert rc == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err


def test_what_the_user_code_prints_stays_off_the_json(cli, capfd):
    rc, out, _ = cli.main("diagnose", str(USER / "hostile_raises.py:prints"), "--json")
    leaked, err = capfd.readouterr()  # what the child wrote to the file descriptors it inherited
    assert leaked == ""
    assert rc == 0
    assert json.loads(out)["safe"] is True
    assert "hello from the factory" in err


# -- user code that never returns, or ends its process -------------------------------------------

def test_a_factory_that_sleeps_is_killed_after_the_timeout(cli):
    t0 = time.monotonic()
    # Long enough for the child to import torch and reach the factory on a loaded machine.
    rc, out, err = cli.main("diagnose", str(USER / "hostile_raises.py:factory_sleeps"), "--timeout", "12")
    assert time.monotonic() - t0 < 60
    assert rc == 2
    assert out == ""
    assert err.strip() == (f"harness diagnose: error: {USER / 'hostile_raises.py:factory_sleeps'}: timed out "
                           "after 12 s while calling factory_sleeps(); the process tree running it was "
                           "killed (a longer --timeout gives it more time)")


def _wait_for(path: Path, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_the_timeout_kills_what_the_factory_started_too(cli, monkeypatch, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    rc, _, err = cli.main("diagnose", str(USER / "hostile_raises.py:factory_sleeps_with_child"), "--timeout", "8")
    assert rc == 2
    assert "timed out after 8 s while calling factory_sleeps_with_child()" in err
    assert _gone(_wait_for(pid_file, 1))


@POSIX
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_in_the_parent_kills_the_child_tree_and_exits_130(tmp_path, sig, cli):
    pid_file = tmp_path / "grandchild.pid"
    proc = cli.start("diagnose", "tests/user_code/hostile_raises.py:factory_sleeps_with_child", cwd=ROOT,
                     env={"HOSTILE_PID_FILE": str(pid_file)})
    try:
        grandchild = _wait_for(pid_file)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert out == ""
    assert err.strip().endswith("harness diagnose: interrupted; the process diagnosing "
                                "tests/user_code/hostile_raises.py:factory_sleeps_with_child was stopped")
    assert _gone(grandchild)


def test_a_factory_that_calls_os_exit_is_unsafe_in_one_line(cli):
    target = str(USER / "hostile_raises.py:factory_os_exit")
    rc, out, err = cli.main("diagnose", target, "--json")
    assert rc == 1
    assert out == ""
    assert err.strip() == (f"harness diagnose: {target}: UNSAFE: the process running it exited with status 3 "
                           "while calling factory_os_exit(), before it could report: the target's own code ended it")


@POSIX
def test_a_factory_that_kills_its_process_is_unsafe_in_one_line(cli):
    rc, out, err = cli.main("diagnose", str(USER / "hostile_raises.py:factory_kills_itself"))
    assert rc == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "UNSAFE: the process running it was killed by signal SIGKILL while calling factory_kills_itself()" in err


# -- the memory bound ----------------------------------------------------------------------------

@POSIX
def test_a_factory_past_the_memory_bound_is_one_line_exit_2(cli, monkeypatch):
    monkeypatch.setenv("HARNESS_DIAGNOSE_MEMORY_GIB", "1")
    rc, out, err = cli.main("diagnose", str(USER / "hostile_raises.py:factory_allocates"))
    assert rc == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "ran out of memory while calling factory_allocates() (limit: 1 GiB more than at start; " \
           "set HARNESS_DIAGNOSE_MEMORY_GIB to change it, 0 lifts it)" in err


@POSIX
def test_a_reducer_past_the_memory_bound_is_a_finding(cli, monkeypatch):
    monkeypatch.setenv("HARNESS_DIAGNOSE_MEMORY_GIB", "1")
    rc, out, _ = cli.main("diagnose", str(USER / "hostile_raises.py:reduce_allocates"), "--json")
    assert rc == 1
    (problem,) = json.loads(out)["problems"]
    assert problem["path"] == "dataset.bomb"
    assert problem["type"] == "hostile_raises.Allocates"


@pytest.mark.parametrize("value", ["lots", "-1", "nan"])
def test_a_bad_memory_bound_is_a_usage_error(cli, monkeypatch, value):
    monkeypatch.setenv("HARNESS_DIAGNOSE_MEMORY_GIB", value)
    rc, out, err = cli.main("diagnose", str(USER / "loader_safe.py:make_loader"))
    assert rc == 2
    assert out == ""
    assert err.startswith(f"harness diagnose: error: HARNESS_DIAGNOSE_MEMORY_GIB={value!r}")


def test_timeout_must_be_a_positive_number(cli):
    rc, out, err = cli.main("diagnose", str(USER / "loader_safe.py:make_loader"), "--timeout", "0")
    assert (rc, out) == (2, "")
    assert err == "harness diagnose: argument --timeout: must be a finite number > 0, got '0'\n"


# -- a 100,000-node reference cycle --------------------------------------------------------------

_MEASURED = r"""
import json, resource, subprocess, sys, time

t0 = time.monotonic()
proc = subprocess.run([sys.executable, "-m", "harness", "diagnose", *sys.argv[1:]], capture_output=True, text=True)
print(json.dumps({"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr, "wall_s": time.monotonic() - t0,
                  "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


@POSIX
def test_a_100000_node_cycle_names_the_lock_once_within_the_default_timeout():
    # Before: 82 s, 5 GiB peak, 100,000 identical RecursionError findings and no lock.
    proc = subprocess.run([sys.executable, "-c", _MEASURED, "tests/user_code/hostile_cycle.py:make_dataset", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    run = json.loads(proc.stdout)
    assert run["rc"] == 1, run["err"]
    assert run["wall_s"] < 60
    if sys.platform.startswith("linux"):  # KiB there; the largest process of the tree
        assert run["peak_kib"] < 2 * 2**20
    problems = json.loads(run["out"])["problems"]
    assert [(p["path"], p["type"]) for p in problems] == [
        ("dataset.nodes[4321].lock", "_thread.lock"),
        ("dataset.nodes[0]", "hostile_cycle.Node"),
    ]
    assert problems[0]["case"] == "dataset-lock"
    assert problems[1]["message"] == ("maximum recursion depth exceeded while pickling an object (a chain of "
                                      "100,000 nested objects starts here; it is a reference cycle back to this object)")


# -- the in-process API --------------------------------------------------------------------------

def _bomb(exc: BaseException):
    from user_code.hostile_raises import Holds, Raises

    return Holds(Raises(exc))


@pytest.mark.parametrize("exc", [SystemExit(0), SystemExit(5), KeyboardInterrupt(), GeneratorExit()],
                         ids=["SystemExit(0)", "SystemExit(5)", "KeyboardInterrupt", "GeneratorExit"])
def test_assert_spawn_safe_reports_a_base_exception_from_a_reducer(exc):
    from harness import assert_spawn_safe

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(AssertionError) as info:
        assert_spawn_safe(_bomb(exc))
    assert str(info.value).splitlines()[1].startswith("  dataset.bomb: user_code.hostile_raises.Raises: ")
    assert signal.getsignal(signal.SIGINT) is before


class SendsSigint:
    """A real Ctrl-C arrives while it is pickled."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler raises here
        return (int, (0,))


class SwallowsSigint:
    """A real Ctrl-C arrives while it is pickled, and its own code swallows it."""

    def __reduce__(self):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            pass
        return (int, (0,))


@POSIX
@pytest.mark.parametrize("cls", [SendsSigint, SwallowsSigint])
def test_a_real_ctrl_c_still_interrupts_the_in_process_api(cls):
    from user_code.hostile_raises import Holds

    from harness import assert_spawn_safe

    before = signal.getsignal(signal.SIGINT)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        assert_spawn_safe(Holds(cls()))
    assert time.monotonic() - t0 < 5
    assert signal.getsignal(signal.SIGINT) is before


def test_drawing_indices_that_interrupt_in_process_is_a_finding():
    from user_code.hostile_raises import len_interrupts

    from harness.inspect.diagnose import diagnose

    result = diagnose(len_interrupts())
    assert [(f.problem.path, f.problem.exc_type) for f in result.findings] == [("indices", "KeyboardInterrupt")]


_NO_FIRST_BATCH = [
    ("len_raises", "indices", "TypeError: length unknown until the index is built"),
    ("huge_shuffle", "indices", "RuntimeError"),
    ("batch_sampler_raises", "indices", "RuntimeError: the bucket table is empty"),
    ("getitem_raises", "batch", "KeyError: 'missing record 0'"),
    ("collate_fails", "batch", "ValueError: ragged batch"),
]


@pytest.mark.parametrize("factory, path, words", _NO_FIRST_BATCH)
def test_a_first_batch_that_never_comes_is_a_problem(cli, monkeypatch, factory, path, words):
    """The truth: iterating the loader raises (here with ``num_workers=0``; the main process
    draws the indices and re-raises a worker's exception under every method)."""
    monkeypatch.syspath_prepend(str(USER))
    import first_batch_fails

    loader = getattr(first_batch_fails, factory)()
    loader.num_workers = 0
    with pytest.raises(Exception):  # noqa: B017 - any exception: no first batch comes
        next(iter(loader))
    monkeypatch.chdir(ROOT)
    rc, out, err = cli.main("diagnose", str(USER / f"first_batch_fails.py:{factory}"), "--json")
    assert rc == 1, err
    result = json.loads(out)
    assert result["safe"] is False
    [problem] = result["problems"]
    assert problem["path"] == path
    assert words in problem["message"]
    assert problem["file"] == "tests/user_code/first_batch_fails.py"


def test_an_empty_loader_is_safe_and_says_its_batch_was_not_checked(cli):
    rc, out, err = cli.main("diagnose", str(USER / "first_batch_fails.py:empty"))
    assert rc == 0, out + err
    assert "first batch: not checked: the sampler gave no indices" in out
