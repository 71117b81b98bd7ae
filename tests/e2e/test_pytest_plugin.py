"""The pytest plugin: ``harness.assert_spawn_safe`` and ``--start-method`` (``--mp-start-method``).

``assert_spawn_safe`` runs in this process. The start-method option is checked in a separate
pytest session (a subprocess), where the installed ``pytest11`` entry point loads the plugin
exactly as in a user's CI; its tests start real DataLoader workers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import harness

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

USER = TESTS / "user_code"
OWN_CODE_DOC = Path(__file__).parents[2] / "docs" / "own-code.md"


@pytest.fixture
def user_modules(monkeypatch):
    monkeypatch.syspath_prepend(str(USER))
    import importlib

    return importlib.import_module


def test_assert_spawn_safe_lists_every_path(user_modules):
    loader = user_modules("loader_several").make_loader()
    with pytest.raises(AssertionError) as info:
        harness.assert_spawn_safe(loader)
    text = str(info.value)
    assert text.splitlines()[0] == "5 objects cannot be sent to a spawn worker:"
    for path in ("dataset.transform.transforms[1]", "dataset.index_file", "dataset.np_module",
                 "dataset.cache.lock", "collate_fn.__self__.sort_key"):
        assert f"  {path}: " in text
    assert "[case dataset-open-file; fix: dataset-open-file-lazy (" in text
    # Each line ends with where the culprit is defined, relative to the current directory.
    where = os.path.relpath(USER / "loader_several.py").replace(os.sep, "/")
    lambda_line = next(line for line in text.splitlines() if line.startswith("  dataset.transform.transforms[1]: "))
    assert lambda_line.endswith(f" at {where}:41")
    file_line = next(line for line in text.splitlines() if line.startswith("  dataset.index_file: "))
    assert file_line.endswith(f" at {where}:42")  # an open file: where Records stores it (self.index_file = open(...))


def test_assert_spawn_safe_fails_on_what_a_worker_cannot_load_or_send_back(user_modules):
    with pytest.raises(AssertionError) as info:
        harness.assert_spawn_safe(user_modules("loader_getattr").make_loader())
    lines = str(info.value).splitlines()
    assert lines[0] == "1 object cannot make the round trip to a spawn worker and back:"
    assert lines[1].startswith("  dataset: loader_getattr.Forwarding: pickles, but unpickling in the worker fails: "
                               "RecursionError: maximum recursion depth exceeded at ")
    assert lines[1].endswith("loader_getattr.py:24")
    with pytest.raises(AssertionError, match=r"  batch\.__class__: type: Can't pickle <class 'collate_same_name\.Batch'>"):
        harness.assert_spawn_safe(user_modules("collate_same_name").make_loader())


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="on 3.14 it is a failure, not a warning")
def test_assert_spawn_safe_warns_of_what_a_newer_python_will_not_pickle(user_modules):
    with pytest.warns(UserWarning, match=r"breaks on Python 3\.14: dataset\.augmentations: itertools\.cycle: ") as seen:
        result = harness.assert_spawn_safe(user_modules("loader_itertools").make_loader())
    assert result.safe
    assert str(seen[0].message).endswith("loader_itertools.py:26")  # self.augmentations = itertools.cycle(...)


def test_assert_spawn_safe_accepts_a_dataset_and_platform_aliases(user_modules):
    dataset = user_modules("loader_slots").make_dataset()
    with pytest.raises(AssertionError, match=r"dataset\.spec\.fn: function: Can't pickle local object"):
        harness.assert_spawn_safe(dataset, method="linux-py3.14")
    result = harness.assert_spawn_safe(user_modules("loader_safe").make_loader(), method="macos")
    assert result.safe
    assert result.method == "spawn"
    assert result.payload.total_bytes > 0


def test_assert_spawn_safe_rejects_fork(user_modules):
    with pytest.raises(ValueError, match="resolves to 'fork'"):
        harness.assert_spawn_safe(user_modules("loader_safe").make_loader(), method="linux")


def _session(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )


_INNER = '''
import multiprocessing
import pickle

import pytest
from torch.utils.data import DataLoader


def test_start_method():
    assert multiprocessing.get_start_method() == "{method}"


def test_workers_start():
    assert [b.tolist() for b in DataLoader(list(range(4)), batch_size=2, num_workers=2)] == [[0, 1], [2, 3]]


def test_lambda_collate_fails_as_it_would_on_windows():
    loader = DataLoader(list(range(4)), batch_size=2, num_workers=1, collate_fn=lambda b: b)
    with pytest.raises((AttributeError, pickle.PicklingError), match="lambda"):
        next(iter(loader))
'''


@pytest.mark.parametrize("method, flag", [
    ("spawn", "--start-method"),
    pytest.param("forkserver", "--mp-start-method", marks=pytest.mark.catalogue),  # the older spelling
])
def test_start_method_forces_the_session(tmp_path, method, flag):
    (tmp_path / "test_inner.py").write_text(_INNER.format(method=method))
    proc = _session(tmp_path, f"{flag}={method}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "3 passed" in proc.stdout


def test_without_the_option_the_platform_default_stays(tmp_path):
    from harness._policy import default_method

    (tmp_path / "test_inner.py").write_text(
        "import multiprocessing\n\n\ndef test_default():\n"
        f"    assert multiprocessing.get_start_method() == {default_method()!r}\n")
    proc = _session(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.mark.parametrize("flag", ["--start-method", "--mp-start-method"])
def test_unknown_start_method_is_a_usage_error(tmp_path, flag):
    (tmp_path / "test_inner.py").write_text("def test_x():\n    pass\n")
    proc = _session(tmp_path, f"{flag}=threads")
    assert proc.returncode == 4  # pytest's usage-error exit code
    assert "ERROR: --start-method: unknown start method or platform 'threads' (choose from fork, spawn" in proc.stderr


def test_readme_example_runs_as_documented(tmp_path):
    """The docs' five-line example (docs/own-code.md), against a loader package with one lambda, then fixed."""
    section = OWN_CODE_DOC.read_text(encoding="utf-8").split("## The pytest plugin", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(example.strip().splitlines()) == 5
    (tmp_path / "test_readme.py").write_text(example)
    pkg = tmp_path / "mypackage"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    loader_code = textwrap.dedent('''
        from torch.utils.data import DataLoader, Dataset

        def {name}(x):
            return x + 1

        class Items(Dataset):
            def __init__(self, transform):
                self.transform = transform

            def __len__(self):
                return 4

            def __getitem__(self, i):
                return self.transform(i)

        def make_loader():
            return DataLoader(Items({transform}), batch_size=2, num_workers=2)
    ''')
    (pkg / "data.py").write_text(loader_code.format(name="add_one", transform="lambda x: x + 1"))
    proc = _session(tmp_path)
    assert proc.returncode == 1
    assert "1 object cannot be sent to a spawn worker:" in proc.stdout
    assert "dataset.transform: function: Can't pickle" in proc.stdout
    (pkg / "data.py").write_text(loader_code.format(name="add_one", transform="add_one"))
    proc = _session(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]


_PROFILE_INNER = '''
import multiprocessing
import os
import torch.multiprocessing



def report(q):
    import torch.multiprocessing as tmp
    q.put(tmp.get_sharing_strategy())


def test_profile():
    assert multiprocessing.get_start_method() == "spawn"
    assert torch.multiprocessing.get_sharing_strategy() == "file_system"
    assert len(os.environ["TMPDIR"]) == 49  # a macOS runner's /var/folders/xx/<28>/T/
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=report, args=(q,))
    p.start()
    assert q.get(timeout=120) == "file_system"  # the worker too
    p.join()
'''


def test_a_platform_name_applies_the_whole_profile(tmp_path):
    (tmp_path / "test_inner.py").write_text(_PROFILE_INNER)
    tmpdir_before = os.environ.get("TMPDIR")
    proc = _session(tmp_path, "--start-method=macos")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 passed" in proc.stdout
    assert os.environ.get("TMPDIR") == tmpdir_before
