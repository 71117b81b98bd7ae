"""A case that leaves processes behind: a classic double-fork ``setsid`` daemon, a detached
child started with ``start_new_session``, and DataLoader workers that never return.

``CONTAIN_MARKER`` names a folder; each process writes ``<role>-<pid>`` there with its
work folder (its TMPDIR), so a test can find them all and check that none outlives the harness.
"""

import os
import subprocess
import sys
import time

from torch.utils.data import DataLoader

from harness.case import Squares, squares

CASE = {
    "id": "leaky",
    "family": "fixture",
    "title": "leaves a daemon and hung workers behind",
    "why": "test fixture for containment",
    "expect": {"in-process": "hang", "fork": "hang", "spawn": "hang", "forkserver": "hang"},
    "sources": ["tests"],
    "timeout_s": 600,
}

MARKER = os.environ.get("CONTAIN_MARKER", "")


def _note(role):
    if MARKER:
        with open(os.path.join(MARKER, f"{role}-{os.getpid()}"), "w") as f:
            f.write(os.environ.get("TMPDIR") or os.getcwd())  # the cell's work folder


def _daemon():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            _note("daemon")
            time.sleep(600)
        os._exit(0)
    os.waitpid(pid, 0)


def _detached():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


class Sleeper(Squares):
    def __getitem__(self, i):
        _note("worker")
        time.sleep(600)


def run(cell):
    _note("cell")
    _daemon()
    _detached()
    cell.check(DataLoader(Sleeper(4), batch_size=2, num_workers=cell.num_workers), squares(4))
