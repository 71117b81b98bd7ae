"""The ``harness`` command line under hostile conditions, run as a user runs it (a new process):
bad numbers in options and ``HARNESS_*`` variables, closed standard streams, a symlink loop or an
empty list in ``[tool.harness]``, an unwritable ``--out``, an oversized message in a shard, and a
``diagnose`` killed with SIGKILL.

Each failure must be one line on stderr and the documented exit code (docs/matrix.md, "Options and exit codes": 0
done, 1 findings, 2 usage or input error), never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARDS = ROOT / "reports" / "shards"
POSIX = pytest.mark.skipif(os.name != "posix", reason="closes file descriptors / sends SIGKILL (POSIX)")

SAFE = """
from torch.utils.data import DataLoader, Dataset

class Numbers(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i

def make_loader():
    return DataLoader(Numbers(), num_workers=2)
"""

UNSAFE = SAFE + """
def make_unsafe():
    loader = DataLoader(Numbers(), num_workers=2)
    loader.dataset.transform = lambda x: x
    return loader
"""

SLOW = SAFE + """
import time

def make_slow():
    time.sleep(120)
    return make_loader()
"""


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_") and k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def harness(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
            close: tuple[int, ...] = (), timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run ``python -m harness ARGS`` with the file descriptors in ``close`` closed in the child
    (``>&-``, ``2>&-``); what is not closed is captured."""

    def close_fds() -> None:
        for fd in close:
            os.close(fd)

    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=_env(env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=close_fds if close else None)


def one_error_line(proc: subprocess.CompletedProcess[str], code: int, *names: str) -> str:
    """Assert exit ``code``, exactly one line on stderr naming each of ``names``, no traceback."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr + (proc.stdout or "")
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0]
    return lines[0]


@pytest.fixture
def targets(tmp_path: Path) -> Path:
    (tmp_path / "loaders.py").write_text(UNSAFE + SLOW.replace(SAFE, ""), encoding="utf-8")
    return tmp_path


# -- 1. every number is checked once, options and variables alike ----------------------------------

BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e308", "1e400", "fast", "", "9" * 400]


@pytest.mark.parametrize("value", [v for v in BAD_NUMBERS if v])
@pytest.mark.parametrize("option", ["--timeout", "--timeout-scale"])
def test_a_bad_run_number_is_one_line(tmp_path, option, value):
    proc = harness("run", "--cases", "transform-lambda", option, value, "--out", str(tmp_path))
    one_error_line(proc, 2, "harness run:", option)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e308", "1e7", "fast", "1e-400"])
def test_a_bad_timeout_scale_variable_is_one_line_and_writes_no_shard(tmp_path, value):
    proc = harness("run", "--cases", "transform-lambda", "--out", str(tmp_path),
                   env={"HARNESS_TIMEOUT_SCALE": value})
    one_error_line(proc, 2, "harness run:", "HARNESS_TIMEOUT_SCALE")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "1e3", "two", "2000000", "9" * 5000])
@pytest.mark.parametrize("command,option", [("run", "--jobs"), ("diagnose", "--num-workers")])
def test_a_bad_count_is_one_line(targets, command, option, value):
    where = ["--cases", "transform-lambda"] if command == "run" else ["loaders.py:make_loader"]
    proc = harness(command, *where, option, value, cwd=targets)
    line = one_error_line(proc, 2, f"harness {command}:", option)
    assert len(line) < 300


@pytest.mark.parametrize("value", ["nan", "0", "-5", "1e308", "1e10"])
@pytest.mark.parametrize("command", ["diagnose", "reproduce"])
def test_a_bad_timeout_of_diagnose_and_reproduce_is_one_line(targets, command, value):
    (targets / "script.py").write_text("print('hi')\n", encoding="utf-8")
    target = "loaders.py:make_loader" if command == "diagnose" else "script.py"
    proc = harness(command, target, "--timeout", value, cwd=targets)
    one_error_line(proc, 2, f"harness {command}:", "--timeout")
    assert proc.stdout == ""


@pytest.mark.parametrize("value", ["1e30", "1e300", "inf", "nan", "-1", "lots", "1e-300"])
def test_a_bad_memory_bound_is_one_line_before_any_child(targets, value):
    proc = harness("diagnose", "loaders.py:make_loader", env={"HARNESS_DIAGNOSE_MEMORY_GIB": value}, cwd=targets)
    one_error_line(proc, 2, "harness diagnose:", "HARNESS_DIAGNOSE_MEMORY_GIB")
    assert "internal error" not in proc.stderr


def test_a_timeout_times_its_scale_past_the_largest_timeout_is_one_line(tmp_path):
    proc = harness("run", "--cases", "transform-lambda", "--timeout", "1e9", "--timeout-scale", "10",
                   "--out", str(tmp_path))
    one_error_line(proc, 2, "harness run:", "--timeout")


def test_the_largest_accepted_scale_writes_a_shard_that_report_reads(tmp_path):
    schema = json.loads((ROOT / "harness/schemas/shard.schema.json").read_text(encoding="utf-8"))
    largest = schema["properties"]["runner"]["properties"]["timeout_scale"]["maximum"]
    shards = tmp_path / "shards"
    proc = harness("run", "--cases", "transform-toplevel-def", "--start-method", "in-process",
                   "--out", str(shards), env={"HARNESS_TIMEOUT_SCALE": repr(float(largest))})
    assert proc.returncode == 0, proc.stderr
    (shard,) = shards.glob("*.json")
    assert json.loads(shard.read_text(encoding="utf-8"))["runner"]["timeout_scale"] == largest
    report = harness("report", "--shards", str(shards), "--out", str(tmp_path / "out"))
    assert report.returncode == 0, report.stderr
    assert "rejected" not in report.stderr
    assert len(json.loads((tmp_path / "out/matrix.json").read_text(encoding="utf-8"))["results"]) == 1


# -- 2. report clips over-long text, rejects only what it cannot read --------------------------------

def _committed_shard() -> Path:
    found = sorted(p for p in SHARDS.glob("*.json") if "-as-" not in p.name)
    if not found:
        pytest.skip("no committed shard")
    return found[0]


def test_report_clips_a_20_mb_message_and_keeps_every_result(tmp_path):
    source = _committed_shard()
    data = json.loads(source.read_text(encoding="utf-8"))
    data["results"][0]["message"] = "m" * (20 * 2**20)
    data["results"][1]["stderr_tail"] = "s" * 100_000 + "THE END"
    failed = next(r for r in data["results"] if isinstance(r.get("evidence"), dict))
    failed["evidence"]["notes"] = ["n" * 50_000] * 150
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / source.name).write_text(json.dumps(data), encoding="ascii")
    (shards / "truncated.json").write_text('{"schema_version": 1, "runner": {', encoding="ascii")
    proc = harness("report", "--shards", str(shards), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr  # the truncated one is rejected
    assert "Traceback" not in proc.stderr
    rejected = [line for line in proc.stderr.splitlines() if "rejected" in line]
    assert len(rejected) == 1 and "truncated.json" in rejected[0]
    assert not any(source.name in line for line in rejected)
    clipped = [line for line in proc.stderr.splitlines() if source.name in line]
    assert len(clipped) == 1 and "clipped" in clipped[0]
    matrix = json.loads((tmp_path / "out/matrix.json").read_text(encoding="utf-8"))
    mine = [r for r in matrix["results"] if r["runner"] == data["runner"]["id"]]
    assert len(mine) == len(data["results"])
    first = next(r for r in mine if (r["case"], r["method"]) == (data["results"][0]["case"], data["results"][0]["method"]))
    assert len(first["message"]) < 2100
    tail = next(r for r in mine if (r["case"], r["method"]) == (data["results"][1]["case"], data["results"][1]["method"]))
    assert tail["stderr_tail"].endswith("THE END") and "characters cut]" in tail["stderr_tail"]


# -- 3. closed streams, a symlink loop, an empty catalogue, an unwritable --out --------------------

@POSIX
@pytest.mark.parametrize("args", [("list",), ("list", "--json"), ("explain", "transform-lambda")])
def test_a_command_that_only_prints_with_stdout_closed_is_one_line_exit_2(args):
    proc = harness(*args, close=(1,))
    one_error_line(proc, 2, f"harness {args[0]}:", "standard output")


@POSIX
@pytest.mark.parametrize("target,code", [("loaders.py:make_loader", 0), ("loaders.py:make_unsafe", 1)])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_diagnose_with_stdout_closed_keeps_its_verdict(targets, target, code, fmt):
    proc = harness("diagnose", target, "--format", fmt, cwd=targets, close=(1,))
    one_error_line(proc, code, "harness diagnose:", "standard output")


@POSIX
@pytest.mark.parametrize("target,code", [("loaders.py:make_loader", 0), ("loaders.py:make_unsafe", 1)])
def test_diagnose_with_stderr_closed_keeps_its_verdict_and_output(targets, target, code):
    proc = harness("diagnose", target, "--json", cwd=targets, close=(2,))
    assert proc.returncode == code
    assert json.loads(proc.stdout)["safe"] is (code == 0)


@POSIX
def test_both_streams_closed_keep_the_exit_code(targets):
    assert harness("diagnose", "loaders.py:make_loader", cwd=targets, close=(1, 2)).returncode == 0
    assert harness("diagnose", "loaders.py:make_unsafe", cwd=targets, close=(1, 2)).returncode == 1
    assert harness("list", "--bogus", close=(1, 2)).returncode == 2


@POSIX
def test_an_error_with_stderr_closed_never_reaches_stdout():
    proc = harness("list", "--no-such-option", close=(2,))
    assert (proc.returncode, proc.stdout) == (2, "")
    listing = harness("list", "--json", close=(2,))
    assert listing.returncode == 0 and json.loads(listing.stdout)


@POSIX
def test_classify_with_stdout_closed_keeps_its_verdict(tmp_path):
    text = tmp_path / "paste.txt"
    text.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                    "_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f>: attribute lookup "
                    "<lambda> on __main__ failed\n", encoding="utf-8")
    one_error_line(harness("classify", str(text), close=(1,)), 1, "harness classify:", "standard output")


@POSIX
def test_report_with_stdout_closed_still_writes_its_files(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    shutil.copy(_committed_shard(), shards)
    proc = harness("report", "--shards", str(shards), "--out", str(tmp_path / "out"), close=(1,))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "out/matrix.json").is_file()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_is_one_line():
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "harness", "list"], env=_env(), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    one_error_line(proc, 2, "harness list:", "standard output")


def _project(tmp_path: Path, catalogue: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.harness]\ncatalogue = {catalogue}\n", encoding="utf-8")
    return tmp_path


@POSIX
@pytest.mark.parametrize("entry", ["loop", "loop/inside"])
@pytest.mark.parametrize("args", [("list",), ("explain", "transform-lambda"), ("run", "--cases", "x")])
def test_a_symlink_loop_in_tool_harness_is_one_line(tmp_path, entry, args):
    os.symlink("other", tmp_path / "loop")
    os.symlink("loop", tmp_path / "other")
    project = _project(tmp_path, json.dumps([entry]))
    proc = harness(*args, cwd=project)
    one_error_line(proc, 2, f"harness {args[0]}:", "pyproject.toml", "loop")


@POSIX
def test_a_looping_pyproject_is_one_line(tmp_path):
    os.symlink("pyproject.toml", tmp_path / "pyproject.toml")
    one_error_line(harness("list", cwd=tmp_path), 2, "harness list:", "pyproject.toml")


@pytest.mark.parametrize("args", [("list",), ("explain", "transform-lambda"), ("run", "--cases", "transform-lambda")])
def test_an_empty_catalogue_list_is_one_line(tmp_path, args):
    proc = harness(*args, cwd=_project(tmp_path, "[]"))
    one_error_line(proc, 2, f"harness {args[0]}:", "pyproject.toml", "catalogue")
    assert proc.stdout == ""


def _unwritable(tmp_path: Path) -> list[Path]:
    """Report directories that cannot be written: under a file, and read-only ones."""
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    out = [tmp_path / "a-file" / "report"]
    if os.name == "posix" and os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        out += [locked, locked / "missing"]
    if os.path.isdir("/proc/self"):
        out.append(Path("/proc/self"))  # exists, and no file can be made in it, even as root
    return out


def test_report_into_an_unwritable_directory_is_one_line(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    shutil.copy(_committed_shard(), shards)
    try:
        for out in _unwritable(tmp_path):
            proc = harness("report", "--shards", str(shards), "--out", str(out))
            line = [x for x in proc.stderr.splitlines() if "matrix.png skipped" not in x]
            assert proc.returncode == 2, proc.stderr
            assert "Traceback" not in proc.stderr
            assert len(line) == 1 and line[0].startswith(f"harness report: --out {out}")
    finally:
        if (tmp_path / "locked").exists():
            (tmp_path / "locked").chmod(0o700)


# -- 4. a diagnose killed with SIGKILL leaves no work folder and no process ------------------------

@POSIX
def test_sigkill_of_diagnose_leaves_no_work_folder(targets, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "diagnose", "loaders.py:make_slow"], cwd=targets,
                            env=_env({"TMPDIR": str(temp)}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(temp.glob("hd-*/stage-0.txt")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(temp.glob("hd-*")), "diagnose made no work folder"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 20
    while list(temp.glob("hd-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(temp.glob("hd-*")) == []
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "make_slow" not in left
