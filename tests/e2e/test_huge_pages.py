"""The warm template backs its resident memory by huge pages without changing any memory figure.

``harness.child.warm_server.collapse_resident_memory`` makes each fork of the template cheaper;
what it must never do is change what a cell or a worker measures: resident set sizes and
private memory (USS). Each scenario runs in its own interpreter with one private anonymous
mapping of known content and reads that mapping's line of ``/proc/self/smaps`` (``proc(5)``)
before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="transparent huge pages are Linux's")

SCENARIO = textwrap.dedent(
    """
    import ctypes, json, mmap, os, sys
    from harness.child.warm_server import HUGE_PAGE_BYTES, collapse_resident_memory

    kind = sys.argv[1]
    size = 4 * HUGE_PAGE_BYTES
    m = mmap.mmap(-1, size + HUGE_PAGE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    first = (base + HUGE_PAGE_BYTES - 1) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES - base
    for page in range(first, first + size, 4096):
        if kind == "full" or page // 4096 % 2 == 0:
            m[page] = 1
        elif kind == "zero":
            m[page]  # a read maps the shared zero page: present, but no memory of its own

    def vma(pid="self"):
        found, out = False, {}
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                head = line.split()
                if "-" in head[0] and ":" not in head[0]:
                    low, high = (int(x, 16) for x in head[0].split("-"))
                    found = low <= base < high
                elif found and head[0] in ("Rss:", "Private_Dirty:", "AnonHugePages:"):
                    out[head[0][:-1]] = int(head[1]) * 1024
        return out

    before = vma()
    collapsed = collapse_resident_memory()
    after = vma()
    child = {}
    if kind == "full":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            m[first + 4096 * 7] = 2  # one write into a range the parent holds as a huge page
            os.write(w, json.dumps(vma()).encode())
            os._exit(0)
        os.close(w)
        child = json.loads(os.read(r, 65536))
        os.waitpid(pid, 0)
    print(json.dumps({"before": before, "after": after, "collapsed": collapsed, "child": child}))
    """
)


def _scenario(kind: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", SCENARIO, kind], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_fully_resident_range_becomes_huge_pages_and_a_fork_still_copies_4_kib() -> None:
    out = _scenario("full")
    if out["after"].get("AnonHugePages", 0) == 0:
        pytest.skip(f"this kernel ({os.uname().release}) did not collapse (no MADV_COLLAPSE before Linux 6.1, "
                    "or no free huge page)")
    huge = out["after"]["AnonHugePages"]  # all four ranges, unless no free huge page was left
    assert huge % (2 << 20) == 0 and huge <= 4 * (2 << 20)
    assert out["collapsed"] >= huge
    assert out["after"]["Rss"] == out["before"]["Rss"]  # the same resident memory
    # The child's one write copies one 4 KiB page, not the 2 MiB huge page it lies in
    # (copy-on-write splits the huge mapping), and it still maps the whole range.
    assert out["child"]["Private_Dirty"] <= 2 * 4096
    assert out["child"]["Rss"] == out["before"]["Rss"]


@pytest.mark.parametrize("kind", ["holes", "zero"])
def test_a_range_with_holes_or_zero_pages_is_left_as_it_is(kind: str) -> None:
    out = _scenario(kind)
    assert out["after"].get("AnonHugePages", 0) == 0
    assert out["after"]["Rss"] == out["before"]["Rss"]
