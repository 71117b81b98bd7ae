"""``harness diagnose`` on realistic user loaders (``tests/user_code``), as a user runs it.

The expected problem paths are read off the loaders' code by hand (each loader's docstring
states them and why), and so are their lines: the culprit's own definition (a lambda, a
``def``, a class), else the nearest enclosing user-defined class on the path. One test starts
every loader under a real ``spawn`` start, in a fresh interpreter, and checks that diagnose's
verdict is what really happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.catalogue.discover import discover

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

USER = TESTS / "user_code"
CASES = discover().by_id()


# target → {path: (expected catalogue case, line)}; paths and lines from the loaders' code,
# cases from the catalogue's descriptions of the same mechanism. Lines: a lambda's or a def's
# own line, a local class's ``class`` line; an open file, a lock, a generator, a connection or
# a torch.Generator at the ``class`` line of the user's class holding it.
UNSAFE = {
    "loader_nested.py:make_loader": {
        "dataset.transform.transforms[2]": ("transform-lambda", 30),
        "dataset.ops['flip']": ("transform-lambda", 31),
    },
    "loader_partial.py:make_loader": {
        "collate_fn.func": ("transform-partial-local", 22),  # def sorted_pad
        "collate_fn.keywords['key']": ("collate-fn-lambda", 26),
    },
    "loader_closure.py:make_loader": {
        "dataset.transform": ("transform-closure-captures-local", 29),  # def standardise
        "worker_init_fn": ("worker-init-fn-local", 32),  # def seed_worker
    },
    "loader_local_class.py:make_loader": {"dataset.__class__": ("dataset-class-in-function", 12)},
    "loader_zip.py:make_loader": {  # class ZipImages
        "dataset.archive.fp": ("dataset-zip-archive", 25),
        "dataset.archive._lock": ("dataset-zip-archive", 25),
    },
    "loader_sqlite.py:make_loader": {"dataset.db.conn": ("dataset-sqlite-connection", 18)},  # self.conn = sqlite3.connect(...)
    "loader_generator.py:make_loader": {"dataset.files": ("dataset-generator", 16)},  # self.files = Path(root).iterdir()
    "loader_several.py:make_loader": {
        "dataset.transform.transforms[1]": ("dataset-lambda-attribute", 41),
        "dataset.index_file": ("dataset-open-file", 42),  # self.index_file = open(index_path)
        "dataset.np_module": ("dataset-module-object", 43),  # self.np_module = np
        "dataset.cache.lock": ("dataset-lock", 28),  # self.lock = threading.Lock()
        "collate_fn.__self__.sort_key": ("collate-fn-lambda", 33),
    },
    "loader_slots.py:make_dataset": {
        "dataset.spec.fn": ("dataset-lambda-attribute", 25),
        "dataset.handler.lock": ("dataset-log-handler", 23),  # class Logged (the handler is logging's)
        "dataset.handler.stream": ("dataset-log-handler", 23),
    },
    "loader_context.py:make_dataset": {"dataset.seen._lock": ("value-fork-context-spawn-loader", 15)},
    "loader_torch_generator.py:make_loader": {"dataset.rng": ("dataset-torch-generator", 17)},  # self.rng = torch.Generator()...
    "loader_windows.py:make_loader": {"indices[0]": ("sampler-index-unpicklable", 14)},  # class Window
}
PROBLEM_KEYS = ["path", "type", "message", "case", "fix", "file", "line"]
SAFE = ["loader_safe.py:make_loader", "loader_numpy.py:dataset"]



@pytest.mark.parametrize("target", sorted(UNSAFE))
def test_unsafe_loaders_report_every_path_with_its_case_and_line(cli, monkeypatch, target):
    monkeypatch.chdir(USER)  # files are shown relative to the current directory
    rc, out, _ = cli.main("diagnose", str(USER / target), "--json")
    assert rc == 1
    result = json.loads(out)
    assert result["safe"] is False
    expected = UNSAFE[target]
    # The payload is measured when the worker arguments pickle (only the indices fail).
    assert (result["payload_bytes"] is None) == any(not p.startswith("indices") for p in expected)
    got = {p["path"]: p for p in result["problems"]}
    assert sorted(got) == sorted(expected)
    assert len(result["problems"]) == len(expected)  # no path twice
    for path, (want, line) in expected.items():
        p = got[path]
        assert list(p) == PROBLEM_KEYS
        assert p["message"]
        assert p["case"] == want, path
        assert p["fix"] == CASES[want].fix
        assert (p["file"], p["line"]) == (target.split(":")[0], line), path


def test_json_has_exactly_the_documented_keys(cli, monkeypatch):
    monkeypatch.chdir(USER.parent.parent)
    rc, out, _ = cli.main("diagnose", str(USER / "loader_sqlite.py:make_loader"), "--json", "--start-method", "forkserver")
    result = json.loads(out)
    assert rc == 1
    assert list(result) == ["target", "method", "safe", "problems", "hazards", "payload_bytes", "num_workers"]
    assert result["target"] == str(USER / "loader_sqlite.py:make_loader")
    assert result["method"] == "forkserver"
    assert result["num_workers"] == 2
    assert result["problems"] == [{
        "path": "dataset.db.conn",
        "type": "sqlite3.Connection",
        "message": "cannot pickle 'sqlite3.Connection' object",
        "case": "dataset-sqlite-connection",
        "fix": "dataset-sqlite-lazy",
        "file": "tests/user_code/loader_sqlite.py",  # relative to the current directory, the checkout
        "line": 18,  # self.conn = sqlite3.connect(...)
    }]
    assert result["hazards"] == []


def test_loader_num_workers_is_reported(cli):
    _, out, _ = cli.main("diagnose", str(USER / "loader_several.py:make_loader"), "--json")
    assert json.loads(out)["num_workers"] == 3  # the loader's own count


@pytest.mark.parametrize("target", SAFE)
def test_safe_loaders_exit_0_with_no_path(cli, target):
    rc, out, _ = cli.main("diagnose", str(USER / target), "--json")
    result = json.loads(out)
    assert rc == 0
    assert result["safe"] is True
    assert result["problems"] == []
    assert result["payload_bytes"] > 0


def test_large_numpy_payload_is_counted(cli):
    # loader_numpy holds a (2**20, 8) float64 array: 64 MiB, plus a few hundred bytes of pickle.
    array_bytes = (1 << 20) * 8 * 8
    rc, out, _ = cli.main("diagnose", str(USER / "loader_numpy.py:dataset"), "--json", "--num-workers", "4")
    result = json.loads(out)
    assert rc == 0
    assert array_bytes <= result["payload_bytes"] <= array_bytes + 4096
    assert result["num_workers"] == 4
    rc, out, _ = cli.main("diagnose", str(USER / "loader_numpy.py:dataset"))
    assert rc == 0
    assert "SAFE under spawn" in out
    assert "x 2 workers" in out  # a bare dataset is diagnosed as DataLoader(dataset, num_workers=2)


def test_human_output_lists_path_type_message_and_fix(cli, monkeypatch):
    monkeypatch.chdir(USER.parent.parent)
    rc, out, _ = cli.main("diagnose", str(USER / "loader_nested.py:make_loader"))
    assert rc == 1
    assert "UNSAFE under spawn: 2 objects cannot be sent to a worker" in out
    assert "1. dataset.transform.transforms[2]" in out
    assert "at:      tests/user_code/loader_nested.py:30" in out
    assert "type:    function" in out
    assert "Can't pickle local object 'make_loader.<locals>.<lambda>'" in out
    assert "matches case transform-lambda; fix: transform-toplevel-def (" in out
    assert "payload: not measured" in out


def test_module_target_from_the_current_directory(cli, monkeypatch):
    monkeypatch.chdir(USER.parent)
    rc, out, _ = cli.main("diagnose", "user_code.loader_partial:make_loader", "--json")
    assert rc == 1
    assert sorted(p["path"] for p in json.loads(out)["problems"]) == ["collate_fn.func", "collate_fn.keywords['key']"]


@pytest.mark.parametrize("target, words", [
    ("user_code/nope.py:make_loader", "nope.py: file not found"),
    ("no_such_package.loaders:make_loader", "no_such_package.loaders: module not found"),
    ("user_code/loader_slots.py:make_loader", "has no attribute 'make_loader'"),
    ("user_code/loader_slots.py:NOT_A_LOADER", "got builtins.int, not a DataLoader"),
    ("user_code/loader_slots.py:broken_factory", "calling broken_factory() raised ValueError: data root /nonexistent"),
    ("user_code/loader_slots.py", "expected package.module:attr or path/to/file.py:attr"),
])
def test_bad_targets_exit_2_with_one_line(cli, monkeypatch, target, words):
    monkeypatch.chdir(USER.parent)
    rc, out, err = cli.main("diagnose", target)
    assert rc == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert words in err


@pytest.mark.parametrize("flag", ["--start-method", "--method"])
def test_usage_error_for_a_method_that_pickles_nothing(cli, flag):
    rc, out, err = cli.main("diagnose", str(USER / "loader_safe.py:make_loader"), flag, "fork")
    assert (rc, out) == (2, "")
    assert err == (f"harness diagnose: {flag} 'fork' resolves to 'fork', which pickles nothing at worker start; "
                   "choose one of spawn, forkserver or a platform that uses them\n")


def test_cli_entry_point_end_to_end(cli):
    proc = cli("diagnose", "tests/user_code/loader_local_class.py:make_loader", cwd=USER.parent.parent, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "1. dataset.__class__" in proc.stdout
    assert "matches case dataset-class-in-function; fix: dataset-class-toplevel" in proc.stdout


_REAL_START = r"""
import importlib, json, multiprocessing, sys, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
from torch.utils.data import DataLoader

multiprocessing.set_start_method("spawn", force=True)
out = {}
for target in sys.argv[2:]:
    module, attr = target.split(".py:")
    obj = getattr(importlib.import_module(module), attr)
    obj = obj() if callable(obj) and not hasattr(obj, "__getitem__") else obj
    loader = obj if isinstance(obj, DataLoader) else DataLoader(obj, batch_size=4, num_workers=2)
    try:
        it = iter(loader)
        next(it)
        del it
        out[target] = "started"
    except Exception as exc:
        out[target] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def _agree_with_real_start(cli, targets: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _REAL_START, str(USER), *targets],
                          capture_output=True, text=True, timeout=300, cwd=USER)
    assert proc.returncode == 0, proc.stderr[-2000:]
    real = json.loads(proc.stdout.strip().splitlines()[-1])
    for target in targets:
        rc, _, _ = cli.main("diagnose", str(USER / target))
        assert (real[target] == "started") == (rc == 0), (target, real[target])


def test_verdicts_agree_with_a_real_spawn_start(cli):
    """One unsafe and one safe loader, started for real under spawn (the fast check)."""
    _agree_with_real_start(cli, ["loader_nested.py:make_loader", "loader_safe.py:make_loader"])


@pytest.mark.catalogue
def test_every_verdict_agrees_with_a_real_spawn_start(cli):
    """Every unsafe loader really fails to start under spawn, and every safe one starts."""
    _agree_with_real_start(cli, sorted(UNSAFE) + SAFE)


def test_drawing_the_first_indices_leaves_the_random_streams_alone():
    import random

    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    from harness.inspect.diagnose import diagnose

    loader = DataLoader(list(range(32)), batch_size=4, shuffle=True, num_workers=2)
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    expected = (torch.rand(3).tolist(), random.random(), np.random.rand())
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    assert diagnose(loader).safe
    assert (torch.rand(3).tolist(), random.random(), np.random.rand()) == expected
