"""TreeSampler without self-reported peaks (as on macOS and Windows): what its samples see.

The caller drives the sampling (the cell's watcher does, every ``TreeSampler.interval()``);
here it samples every 10 ms, so workers that live well under 100 ms are seen, helpers are left
out, and a launcher stub is seen through."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from harness.run.sampler import TreeSampler

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc are Linux-only here")

# A cell stand-in without torch: two forked children that each touch 32 MiB of their own and
# live about 60 ms, then a forkserver child (the server is a helper, its child a worker).
SCRIPT = textwrap.dedent("""
    import multiprocessing as mp, os, sys, time

    def work(ms):
        block = bytearray(32 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(ms / 1000)

    if __name__ == "__main__":
        time.sleep(0.2)
        kids = [mp.get_context("fork").Process(target=work, args=(60,)) for _ in range(2)]
        for k in kids: k.start()
        for k in kids: k.join()
        if sys.argv[1] == "forkserver":
            p = mp.get_context("forkserver").Process(target=work, args=(300,))
            p.start(); p.join()
""")


EVERY_S = 0.01  # seconds between two samples in these tests


def _sample_until_exit(proc: subprocess.Popen, sampler: TreeSampler, timeout: float = 60.0) -> None:
    """Sample every :data:`EVERY_S` until ``proc`` exits, then take the last reading."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        sampler.sample()
        time.sleep(EVERY_S)
    proc.wait(timeout=1)
    sampler.stop()


def _sample_run(tmp_path, mode: str) -> TreeSampler:
    script = tmp_path / "cellish.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), mode])
    sampler = TreeSampler(proc.pid)
    _sample_until_exit(proc, sampler)
    return sampler


def test_short_lived_fork_workers_are_seen_with_their_memory(tmp_path):
    sampler = _sample_run(tmp_path, "fork")
    assert len(sampler.workers_seen) == 2
    assert sampler.parent_peak_rss > 0
    # Each worker wrote 32 MiB of its own: private memory at least most of that.
    assert sampler.worker_peak_uss >= 24 * 2**20
    assert sampler.worker_peak_rss >= sampler.worker_peak_uss


def test_forkserver_server_and_resource_tracker_are_not_workers(tmp_path):
    sampler = _sample_run(tmp_path, "forkserver")
    procs = sampler.procs
    # 2 fork workers + the forkserver server + its worker (+ the resource tracker it starts).
    assert len(procs) - 1 >= 4
    assert len(sampler.workers_seen) == 3
    helpers = set(procs) - sampler.workers_seen - {sampler.pid}
    assert helpers, "the forkserver server was counted as a worker"


# A launcher stub as a Windows venv's Scripts\python.exe is one: it starts the real interpreter
# with the same arguments and waits for it. Built here from C, as the real stub is a small
# native program (argv[0] is kept, so the two command lines are equal; the executables differ).
STUB_C = r"""
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    pid_t pid = fork();
    if (pid == 0) { execv(REAL_PYTHON, argv); _exit(127); }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"""

STUB_SCRIPT = textwrap.dedent("""
    import multiprocessing as mp, time

    def work():
        block = bytearray(48 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(0.8)

    if __name__ == "__main__":
        p = mp.get_context("fork").Process(target=work)
        p.start(); p.join()
""")


def test_sampler_sees_through_a_launcher_stub(tmp_path):
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a launcher stub")
    src = tmp_path / "stub.c"
    src.write_text(STUB_C, encoding="utf-8")
    stub = tmp_path / "python"
    subprocess.run([cc, f'-DREAL_PYTHON="{sys.executable}"', "-o", str(stub), str(src)], check=True, timeout=60)
    script = tmp_path / "cell.py"
    script.write_text(STUB_SCRIPT, encoding="utf-8")
    proc = subprocess.Popen([str(stub), str(script)])
    sampler = TreeSampler(proc.pid)
    _sample_until_exit(proc, sampler)
    assert sampler.cell_pid != proc.pid  # the real interpreter, not the stub
    assert len(sampler.workers_seen) == 1  # the worker only; the interpreter is not a worker
    assert sampler.parent_peak_rss > 5 * 2**20  # the interpreter's RSS, not the stub's few hundred KiB
    assert sampler.worker_peak_rss > 48 * 2**20
