"""Every process of a cell reports its own memory peak at exit (``harness/child/cellsite/_harness_cell_peaks.py``).

Real interpreters, real multiprocessing children under each start method, started with the
start-up hook on ``PYTHONPATH`` and ``HARNESS_CELL_PEAKS`` set, as a cell starts them. What
counts as a worker, and which exit paths must report, come from CPython's
``multiprocessing`` (``process.py`` ``_bootstrap``, ``forkserver.py`` ``main``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time

import pytest

from harness.run.plan import CELL_SITE_DIR
from harness.run.sampler import TreeSampler, read_peak_reports

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reports read /proc/self")

# The parent prints its own pid and its children's; each child touches 32 MiB of private
# memory and keeps it, so its USS at exit is well above a bare interpreter's. In "fail" mode the target exists only
# in the parent's __main__ (defined under the main guard): spawn and forkserver children die
# unpickling it, before _bootstrap, the catalogue's main-attribute failure.
SCRIPT = textwrap.dedent("""
    import multiprocessing as mp, os, sys

    KEPT = []

    def touch():
        # Kept alive to the end, as a worker's copy of its dataset is: the report reads USS
        # when the worker ends (a block freed before then is gone from it).
        block = bytearray(32 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        KEPT.append(block)

    def touch_and_wait(ready):
        touch()
        ready.release()
        while True:  # until the parent kills it
            pass

    def touch_and_abort():
        touch()
        os.abort()  # SIGABRT: no finalizer, no atexit, no os.kill

    if __name__ == "__main__":
        method, mode = sys.argv[1], sys.argv[2]
        ctx = mp.get_context(method)
        target, args = touch, ()
        if mode == "fail":
            def only_in_main():
                pass
            target = only_in_main
        elif mode == "abort":
            target = touch_and_abort
        elif mode in ("terminate", "kill"):
            target, args = touch_and_wait, (ctx.Semaphore(0),)
        procs = [ctx.Process(target=target, args=args) for _ in range(2)]
        for p in procs:
            p.start()
        if mode in ("terminate", "kill"):
            for p in procs:  # each has touched its memory
                args[0].acquire(timeout=60)
            for p in procs:
                getattr(p, mode)()  # Process.terminate() / kill(): SIGTERM / SIGKILL through os.kill
        for p in procs:
            p.join()
        print(os.getpid(), *[p.pid for p in procs], *[p.exitcode for p in procs])
""")


def _cell_env(peaks) -> dict[str, str]:
    """The environment a cell's processes get: the start-up hook on PYTHONPATH, and the
    peaks folder (``None``: without it)."""
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_CELL_PEAKS"}
    env["PYTHONPATH"] = os.pathsep.join([str(CELL_SITE_DIR), os.environ.get("PYTHONPATH", "")])
    if peaks is not None:
        env["HARNESS_CELL_PEAKS"] = str(peaks)
    return env


def _run(tmp_path, method: str, mode: str) -> tuple[int, list[int], list[int], dict]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    peaks = tmp_path / "peaks"
    peaks.mkdir()
    env = _cell_env(peaks)
    out = subprocess.run([sys.executable, str(script), method, mode], capture_output=True, text=True,
                         env=env, timeout=120, cwd=tmp_path, check=True)
    parent, a, b, code_a, code_b = (int(x) for x in out.stdout.split())
    return parent, [a, b], [code_a, code_b], read_peak_reports(peaks)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_every_worker_reports_its_peak_rss_and_uss_at_a_clean_exit(tmp_path, method):
    parent, workers, codes, reports = _run(tmp_path, method, "ok")
    assert codes == [0, 0]
    for pid in workers:
        rep = reports[pid]
        assert not rep.helper
        assert rep.uss >= 32 << 20, f"{method} worker USS {rep.uss} below the 32 MiB it touched"
        assert rep.peak_rss >= rep.uss
        assert 0 < rep.cost_s < 1.0
    # The parent reports its peak too; multiprocessing's helpers say they are helpers.
    assert reports[parent].peak_rss > 0 and not reports[parent].helper
    helpers = [pid for pid, rep in reports.items() if rep.helper]
    if method == "forkserver":
        assert helpers, "the forkserver server did not mark itself a helper"
        assert all(reports[pid].ppid == parent for pid in helpers)
        assert {reports[pid].ppid for pid in workers} <= set(helpers), "forkserver workers are the server's children"


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_worker_that_dies_unpickling_its_target_still_reports(tmp_path, method):
    # forkserver ends such a child with sys.excepthook and os._exit, no finalizer; spawn with
    # an uncaught exception at interpreter exit.
    _, workers, codes, reports = _run(tmp_path, method, "fail")
    assert codes == [1, 1]
    for pid in workers:
        assert reports[pid].peak_rss > 0 and reports[pid].uss > 0


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("mode", ["terminate", "kill"])
def test_a_worker_its_parent_kills_is_measured_before_the_kill_and_as_it_is_reaped(tmp_path, method, mode):
    # No report of its own: its parent reads its USS just before the signal (uss-PID) and its
    # ru_maxrss as it reaps it (reaped-PID); the forkserver server reaps forkserver workers.
    _, workers, codes, reports = _run(tmp_path, method, mode)
    signum = 15 if mode == "terminate" else 9
    assert codes == [-signum, -signum]
    peaks = tmp_path / "peaks"
    for pid in workers:
        assert not (peaks / f"peak-{pid}").exists(), "a killed worker cannot report itself"
        assert (peaks / f"reaped-{pid}").exists() and (peaks / f"uss-{pid}").exists()
        assert reports[pid].uss >= 32 << 20, f"USS {reports[pid].uss} below the 32 MiB it touched"
        assert reports[pid].peak_rss >= 32 << 20


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_worker_that_aborts_has_its_peak_rss_from_its_reaping_parent(tmp_path, method):
    _, workers, codes, reports = _run(tmp_path, method, "abort")
    assert codes == [-6, -6]  # SIGABRT
    for pid in workers:
        assert (tmp_path / "peaks" / f"reaped-{pid}").exists()
        assert reports[pid].uss == 0, "nobody could read the USS of a process that killed itself"
        if method == "spawn":
            # exec keeps the old address space's high-water mark in ru_maxrss: the parent's
            # peak, not the worker's, so it is not used (0: unknown, not wrong).
            assert reports[pid].peak_rss == 0
        else:  # forked without an exec: fork workers, and forkserver workers of the server
            assert reports[pid].peak_rss >= 32 << 20, "ru_maxrss covers the 32 MiB it touched"


@contextlib.contextmanager
def _sampled_fork_child(peaks):
    """A real process with one forked child, sampled until the child is seen (it shows its
    parent's command line, as a child between fork and exec does); yields the sampler and
    the child's pid, then kills both."""
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\ntime.sleep(30)\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    sampler = TreeSampler(proc.pid, peaks=peaks)
    try:
        for _ in range(500):
            sampler.sample()
            if len(sampler.procs) > 1:
                break
            time.sleep(0.01)
        (child,) = (pid for pid in sampler.procs if pid != proc.pid)
        yield sampler, child
    finally:
        for pid in list(sampler.procs):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        proc.wait()


def test_a_child_seen_only_with_the_cells_command_line_counts_once_it_arms(tmp_path):
    # Every Python child of a cell arms at its start, so one seen only with the cell's command
    # line that never armed was a glimpse between fork and exec; a marker makes it a worker.
    peaks = tmp_path / "peaks"
    peaks.mkdir()
    with _sampled_fork_child(peaks) as (sampler, child):
        assert sampler.workers_seen == set()
        (peaks / f"armed-{child}").write_text(f"{sampler.pid} 0\n")
        sampler.absorb(read_peak_reports(peaks))
        assert sampler.workers_seen == {child}
        assert sampler.worker_peak_rss > 0, "sampled while it lived"


def test_a_direct_child_that_arms_as_a_helper_is_no_worker_though_sampled_before(tmp_path):
    peaks = tmp_path / "peaks"
    peaks.mkdir()
    with _sampled_fork_child(peaks) as (sampler, child):
        (peaks / f"armed-{child}").write_text(f"{sampler.pid} 1\n")  # the resource tracker, say
        sampler.absorb(read_peak_reports(peaks))
        assert sampler.workers_seen == set()


def _run_in_cell(tmp_path, code: str) -> tuple[str, dict]:
    """Run ``code`` as a cell's process would run (start-up hook, peaks folder); its stdout
    and the reports."""
    peaks = tmp_path / "peaks"
    peaks.mkdir(exist_ok=True)
    env = _cell_env(peaks)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         env=env, timeout=60, cwd=tmp_path, check=True)
    return out.stdout, read_peak_reports(peaks, count_cost=False)


def test_a_handled_sigterm_to_itself_does_not_freeze_the_peak(tmp_path):
    # The report written before the signal is replaced by the one at the end.
    stdout, reports = _run_in_cell(tmp_path, """
        import os, signal
        signal.signal(signal.SIGTERM, lambda *_: None)
        os.kill(os.getpid(), signal.SIGTERM)
        block = bytearray(64 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        print(os.getpid())
    """)
    assert reports[int(stdout)].peak_rss >= 64 << 20


def test_an_exception_raised_meanwhile_propagates_and_the_signal_is_still_sent(tmp_path):
    # As if a signal handler raised while the USS was being read: the caller gets the
    # exception, as it would from its next line, and the child got its SIGTERM.
    stdout, _ = _run_in_cell(tmp_path, """
        import os, sys, time
        child = os.fork()
        if child == 0:
            time.sleep(30)
            os._exit(0)
        time.sleep(0.2)  # it has armed
        def interrupted(*_):
            raise KeyboardInterrupt
        sys.modules["_harness_cell_peaks"]._uss_bytes = interrupted
        try:
            os.kill(child, 15)
        except KeyboardInterrupt:
            print("propagated", end=" ")
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    """)
    assert stdout.split() == ["propagated", "-15"]


def test_a_non_python_child_is_not_a_worker_and_lends_it_no_peak(tmp_path):
    # Its ru_maxrss is its parent's peak (carried across exec); it never arms.
    stdout, reports = _run_in_cell(tmp_path, """
        import os, subprocess
        block = bytearray(64 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        proc = subprocess.Popen(["true"])
        proc.wait()
        print(proc.pid)
    """)
    assert (tmp_path / "peaks" / f"reaped-{int(stdout)}").exists()
    assert int(stdout) not in reports


def test_the_replaced_calls_pickle_as_os_kill_and_os_waitpid(tmp_path):
    import pickle

    stdout, _ = _run_in_cell(tmp_path, """
        import os, pickle
        print(pickle.dumps((os.kill, os.waitpid)).hex())
    """)
    assert pickle.loads(bytes.fromhex(stdout)) == (os.kill, os.waitpid)


def test_workers_orphaned_before_any_sample_are_read_before_the_kill(tmp_path):
    # The cell ends at once, leaving a forked worker alive: never sampled, found by its marker.
    peaks = tmp_path / "peaks"
    peaks.mkdir()
    env = _cell_env(peaks)
    code = textwrap.dedent("""
        import os, sys, time
        if os.fork() == 0:
            block = bytearray(32 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            print("ready", flush=True)
            time.sleep(30)
            os._exit(0)
        sys.stdin.readline()
        os._exit(0)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    sampler = TreeSampler(proc.pid, peaks=peaks, launcher=False)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(30)
        sampler.stop()
        (orphan,) = [pid for pid in sampler.procs if pid != proc.pid]
        sampler.absorb(read_peak_reports(peaks))
        assert sampler.workers_seen == {orphan}
        assert sampler.worker_peak_rss >= 32 << 20 and sampler.worker_peak_uss >= 32 << 20
    finally:
        for pid in sampler.procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def test_without_the_variable_nothing_is_written(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = _cell_env(None)
    subprocess.run([sys.executable, str(script), "fork", "ok"], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.py"]


def test_reports_from_outside_the_cells_tree_are_ignored(tmp_path):
    # A process that inherited the cell's environment without being one of its descendants
    # (the warm template's sys.path probe did) must not count as a worker.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = TreeSampler(proc.pid)
        peaks = tmp_path / "peaks"
        peaks.mkdir()
        stranger, child = 999_999_001, 999_999_002
        (peaks / f"peak-{stranger}").write_text(f"{stranger} {os.getpid()} 100000000 50000000 0.001 0\n")
        (peaks / f"armed-{child}").write_text(f"{proc.pid} 0\n")
        (peaks / f"peak-{child}").write_text(f"{child} 1 70000000 30000000 0.002 0\n")
        (peaks / "peak-garbage").write_text("not a report")
        sampler.absorb(read_peak_reports(peaks))
        assert sampler.workers_seen == {child}, "the birth parent (the cell) counts, not the parent at exit (init)"
        assert sampler.worker_peak_uss == 30000000
    finally:
        proc.kill()
        proc.wait()
