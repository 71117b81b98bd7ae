"""``pytest --check-loaders`` and the tests a suite marks: ``no_check_loaders`` opts a test out,
and an ``xfail`` test's unsafe loader is annotated as a warning, not an error.

Each run is a real ``pytest`` process on a small suite written here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

_SUITE = '''
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset


@pytest.mark.no_check_loaders(reason="tests the pickling error itself")
def test_exempt():
    DataLoader(TensorDataset(torch.arange(3)), collate_fn=lambda b: b)


@pytest.mark.xfail(reason="a known failure of its own", strict=True)
def test_expected_to_fail():
    DataLoader(TensorDataset(torch.arange(3)), collate_fn=lambda b: b)
    assert False


def test_plain():
    DataLoader(TensorDataset(torch.arange(3)), collate_fn=lambda b: b)
'''


def test_exempt_and_xfail_tests(tmp_path):
    (tmp_path / "test_marked.py").write_text(_SUITE)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W",
                           "error::pytest.PytestUnknownMarkWarning", "--check-loaders", "test_marked.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GITHUB_ACTIONS": "true"})
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert re.search(r"^1 failed, 1 passed, 1 xfailed", out, re.M), out
    assert "FAILED test_marked.py::test_plain" in out
    assert "test_exempt" not in out.split("harness --check-loaders) =", 1)[1]
    levels = dict((int(line), level) for level, line in re.findall(r"^::(error|warning) file=test_marked.py,line=(\d+),", out, re.M))
    lines = _SUITE.splitlines()
    xfail_line = next(i for i, t in enumerate(lines, 1) if "collate_fn" in t and i > lines.index("def test_expected_to_fail():"))
    plain_line = len(lines)
    assert levels == {xfail_line: "warning", plain_line: "error"}
