"""``harness diagnose`` follows the whole round trip of a worker start, with source locations.

Fixtures are small user projects in ``tests/user_code``: a dataset wrapper whose ``__getattr__``
forwards to the wrapped dataset (pickles, but a worker cannot unpickle it), a ``collate_fn``
that makes a namedtuple class named like a module-level one at each call (the batch cannot
come back), an ``itertools.cycle`` dataset (safe here, breaks on Python 3.14), and a
downstream project (``downstream/``: its own package, a factory module with a local ``def``
and a lambda) for the GitHub annotations. Expected strings come from real runs: ``harness
reproduce`` of each fixture as a script (Python 3.11, torch 2.13):

* ``loader_getattr.py`` under spawn: error (worker-died), root cause ``RecursionError: maximum
  recursion depth exceeded`` in ``__getattr__``; under fork: pass;
* ``collate_same_name.py`` under spawn and fork: hang, root cause ``_pickle.PicklingError:
  Can't pickle <class '__main__.Batch'>: it's not the same object as __main__.Batch`` printed by
  the queue feeder thread (``multiprocessing/queues.py``, ``_feed``);
* ``loader_itertools.py`` under spawn and fork: pass;
* ``downstream/factory.py`` under spawn: error (pickle), ``AttributeError: Can't pickle local
  object 'make_loader.<locals>.scale'``.

The real runs themselves are the ``catalogue``-marked tests at the end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.inspect.output import github_command

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


USER = TESTS / "user_code"
ROOT = USER.parent.parent
DOWNSTREAM = USER / "downstream"
ON_314 = sys.version_info >= (3, 14)
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"



@pytest.fixture
def in_user(monkeypatch):
    monkeypatch.chdir(USER)


# -- pickles going in, but the trip breaks: the worker cannot unpickle it, or the batch cannot come back

@pytest.mark.parametrize("target, problem", [
    ("loader_getattr.py:make_loader", {
        "path": "dataset",
        "type": "loader_getattr.Forwarding",
        "message": "pickles, but unpickling in the worker fails: RecursionError: maximum recursion depth exceeded",
        "case": None, "fix": None,
        "file": "loader_getattr.py", "line": 24,  # class Forwarding
    }),
    ("collate_same_name.py:make_loader", {
        "path": "batch.__class__",
        "type": "type",
        "message": "Can't pickle <class 'collate_same_name.Batch'>: it's not the same object as collate_same_name.Batch",
        "case": None, "fix": None,
        # The class has no source of its own (namedtuple makes it); the batch comes from collate_fn.
        "file": "collate_same_name.py", "line": 27,
    }),
], ids=["getattr-wrapper", "same-name-batch-class"])
def test_what_pickles_going_in_but_breaks_the_trip_is_found(cli, in_user, target, problem):
    rc, out, _ = cli.main("diagnose", target, "--json")
    assert rc == 1
    result = json.loads(out)
    assert result["problems"] == [problem]
    assert result["payload_bytes"] > 0  # everything going in pickles


def test_the_getattr_wrapper_in_text(cli, in_user):
    rc, out, _ = cli.main("diagnose", "loader_getattr.py:make_loader")
    assert rc == 1
    assert "UNSAFE under spawn: 1 object cannot make the round trip to a worker and back." in out
    assert "   message: pickles, but unpickling in the worker fails: RecursionError: maximum recursion" in out
    assert "first batch: not checked: the worker arguments do not make it to a worker" in out


def test_the_batch_that_cannot_come_back_in_text(cli, in_user):
    rc, out, _ = cli.main("diagnose", "collate_same_name.py:make_loader")
    assert rc == 1
    assert "UNSAFE under spawn: 1 object cannot make the round trip to a worker and back." in out
    assert "the worker's queue feeder thread prints the error and drops the batch" in out


SEEN: list = []


class Marks:
    """A map-style dataset that records what each item sees: whether ``worker_init_fn`` marked
    this copy, and ``get_worker_info()``."""

    def __init__(self):
        self.marked = False

    def __len__(self):
        return 8

    def __getitem__(self, i):
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        SEEN.append((self.marked, info.id, info.num_workers, info.dataset is self))
        return torch.tensor(i)


def mark(worker_id):
    from torch.utils.data import get_worker_info

    get_worker_info().dataset.marked = True


class Broken:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        raise ValueError("no data")


def test_the_first_batch_is_built_from_the_workers_copy():
    """worker_init_fn and the dataset run on the loaded copy, see get_worker_info(), and the
    caller's random streams and live dataset are left as they were."""
    import random

    from torch.utils.data import DataLoader, get_worker_info

    from harness.inspect.diagnose import diagnose

    SEEN.clear()
    live = Marks()
    random.seed(3)
    expected = random.random()
    random.seed(3)
    result = diagnose(DataLoader(live, batch_size=2, num_workers=2, worker_init_fn=mark))
    assert result.safe, result.format_text()
    assert not result.batch_note
    assert SEEN == [(True, 0, 2, True), (True, 0, 2, True)]  # one batch of two, in worker 0's copy
    assert live.marked is False
    assert get_worker_info() is None
    assert random.random() == expected


def test_a_dataset_that_raises_is_a_problem_at_the_batch():
    """No first batch would ever come: the main process re-raises the worker's exception
    under every start method (as iterating the loader here shows)."""
    from torch.utils.data import DataLoader

    from harness.inspect.diagnose import diagnose

    with pytest.raises(Exception):  # noqa: B017 - whatever the dataset raises
        next(iter(DataLoader(Broken(), num_workers=0)))
    result = diagnose(DataLoader(Broken(), num_workers=2))
    assert not result.safe
    assert [f.problem.path for f in result.findings] == ["batch"]
    assert result.findings[0].problem.message.startswith("building the first batch raised ValueError: no data")


# -- version hazards -----------------------------------------------------------------------------

@pytest.mark.skipif(ON_314, reason="on Python 3.14 an itertools iterator does not pickle: a problem, not a hazard")
def test_an_itertools_cycle_is_a_hazard_not_a_problem(cli, in_user):
    rc, out, _ = cli.main("diagnose", "loader_itertools.py:make_loader", "--json")
    assert rc == 0
    result = json.loads(out)
    assert result["safe"] is True
    assert result["problems"] == []
    assert result["hazards"] == [{
        "path": "dataset.augmentations",
        "type": "itertools.cycle",
        "message": f"pickles on Python {PY}, but not on Python 3.14 and later: Python 3.14 removed pickling of "
                   "itertools iterators (deprecated since 3.12, gh-101588)",
        "case": "dataset-itertools-cycle",
        "fix": "dataset-augment-list",
        "file": "loader_itertools.py",
        "line": 26,  # self.augmentations = itertools.cycle(...): where RotatingAugment stores it
        "breaks_on": "3.14",
    }]
    rc, out, _ = cli.main("diagnose", "loader_itertools.py:make_loader")
    assert rc == 0
    assert f"hazards: 1 object pickles on Python {PY} but not on a newer Python (not counted as unsafe here):" in out
    assert "   breaks:  on Python 3.14 and later" in out
    rc, out, _ = cli.main("diagnose", "loader_itertools.py:make_loader", "--format", "github")
    assert rc == 0
    assert out.splitlines() == [
        "::warning file=loader_itertools.py,line=26,title=Breaks on Python 3.14%3A dataset.augmentations::"
        f"loader_itertools.py:make_loader: dataset.augmentations (itertools.cycle): TypeError: pickles on Python {PY}, "
        "but not on Python 3.14 and later: Python 3.14 removed pickling of itertools iterators (deprecated since "
        "3.12, gh-101588); matches case dataset-itertools-cycle; fix: dataset-augment-list (Dataset keeps its "
        "augmentations in a list, chosen by item index)"]


@pytest.mark.skipif(not ON_314, reason="the problem itself shows on Python 3.14 only")
def test_an_itertools_cycle_is_a_problem_on_314(cli, in_user):
    rc, out, _ = cli.main("diagnose", "loader_itertools.py:make_loader", "--json")
    assert rc == 1
    (problem,) = json.loads(out)["problems"]
    assert (problem["path"], problem["case"]) == ("dataset.augmentations", "dataset-itertools-cycle")


# -- GitHub annotations on a downstream project ---------------------------------------------------

_GITHUB = [
    "::error file=factory.py,line=14,title=Cannot be sent to a spawn worker%3A dataset.transform::"
    "factory.py:make_loader: dataset.transform (function): AttributeError: Can't pickle local object "
    "'make_loader.<locals>.scale'; matches case transform-local-def; fix: transform-toplevel-def (Transform is a "
    "top-level function (fix))",
    "::error file=factory.py,line=18,title=Cannot be sent to a spawn worker%3A collate_fn::"
    "factory.py:make_loader: collate_fn (function): AttributeError: Can't pickle local object "
    "'make_loader.<locals>.<lambda>'; matches case collate-fn-lambda; fix: collate-fn-toplevel (collate_fn is a "
    "top-level function (fix))",
]


def test_github_annotations_point_at_the_local_def_and_the_lambda(cli):
    """The issue's done-when check, as a downstream CI step runs it: its own folder, the CLI."""
    proc = cli("diagnose", "factory.py:make_loader", "--format", "github", cwd=DOWNSTREAM, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == _GITHUB


def test_github_format_prints_nothing_for_a_safe_factory(cli, monkeypatch):
    monkeypatch.chdir(DOWNSTREAM)
    rc, out, _ = cli.main("diagnose", "factory.py:make_safe_loader", "--format", "github")
    assert (rc, out) == (0, "")


def test_json_alias_gives_the_same_files_and_lines(cli, monkeypatch):
    monkeypatch.chdir(DOWNSTREAM)
    rc, out, _ = cli.main("diagnose", "factory.py:make_loader", "--json")
    assert rc == 1
    got = [(p["path"], p["file"], p["line"]) for p in json.loads(out)["problems"]]
    assert got == [("dataset.transform", "factory.py", 14), ("collate_fn", "factory.py", 18)]
    rc2, out2, _ = cli.main("diagnose", "factory.py:make_loader", "--format", "json")
    assert (rc2, out2) == (rc, out)


def test_a_file_outside_the_current_directory_is_absolute(cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    _, out, _ = cli.main("diagnose", str(DOWNSTREAM / "factory.py:make_loader"), "--json")
    assert {p["file"] for p in json.loads(out)["problems"]} == {str(DOWNSTREAM / "factory.py")}


def test_github_escaping_follows_the_toolkit():
    line = github_command("error", "50% done\r\nnext: a,b", "t: a,b%", file="d:/x,y.py", line=3)
    assert line == "::error file=d%3A/x%2Cy.py,line=3,title=t%3A a%2Cb%25::50%25 done%0D%0Anext: a,b"
    assert github_command("warning", "m\x1b[31m", "t") == "::warning title=t::m\\x1b[31m"


# -- several targets -----------------------------------------------------------------------------

def test_several_targets_are_all_reported_and_the_worst_exit_wins(cli, monkeypatch):
    monkeypatch.chdir(DOWNSTREAM)
    rc, out, err = cli.main("diagnose", "factory.py:make_safe_loader", "nope.py:make_loader", "factory.py:make_loader", "--json")
    assert rc == 2  # an input error for any target; the others are still reported
    result = json.loads(out)
    assert [r["target"] for r in result] == ["factory.py:make_safe_loader", "nope.py:make_loader",
                                              "factory.py:make_loader"]
    assert result[0]["safe"] is True
    assert result[1] == {"target": "nope.py:make_loader", "error": "harness diagnose: error: nope.py: file not found"}
    assert [p["path"] for p in result[2]["problems"]] == ["dataset.transform", "collate_fn"]
    assert err.strip() == "harness diagnose: error: nope.py: file not found"
    rc, out, _ = cli.main("diagnose", "factory.py:make_safe_loader", "factory.py:make_loader")
    assert rc == 1
    assert "factory.py:make_safe_loader: SAFE under spawn" in out
    assert "\n\nfactory.py:make_loader: UNSAFE under spawn: 2 objects cannot be sent to a worker." in out
    rc, out, _ = cli.main("diagnose", "nope.py:x", "--format", "github")
    assert rc == 2
    assert out == "::error title=harness diagnose::harness diagnose: error: nope.py: file not found\n"


# -- agreement with real runs (slow: each starts real workers, a hang waits for its timeout) --------

@pytest.mark.catalogue
@pytest.mark.parametrize("script, method, outcome, kind, cause", [
    ("loader_getattr.py", "spawn", "error", "worker-died", "RecursionError: maximum recursion depth exceeded"),
    ("loader_getattr.py", "fork", "pass", None, ""),
    ("collate_same_name.py", "spawn", "hang", None,
     "_pickle.PicklingError: Can't pickle <class '__mp_main__.Batch'>: it's not the same object as __mp_main__.Batch"),
    ("collate_same_name.py", "fork", "hang", None,
     "_pickle.PicklingError: Can't pickle <class '__main__.Batch'>: it's not the same object as __main__.Batch"),
    ("loader_itertools.py", "spawn", "error" if ON_314 else "pass", "pickle" if ON_314 else None,
     "itertools.cycle" if ON_314 else ""),
    ("downstream/factory.py", "spawn", "error", "pickle", "Can't pickle local object 'make_loader.<locals>.scale'"),
])
def test_each_fixture_fails_for_real_as_diagnosed(cli, script, method, outcome, kind, cause):
    rc, out, _ = cli.main("reproduce", str(USER / script), "--start-method", method, "--timeout", "15", "--json")
    result = json.loads(out)
    assert (result["outcome"], result["kind"]) == (outcome, kind), result
    assert cause in result["root_cause"]
    assert rc == (0 if outcome == "pass" else 1)
    if script.startswith("collate"):
        assert result["hint"].startswith("a worker's batch could not be pickled on its way back to the main process")
