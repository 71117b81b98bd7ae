"""Warm cells (forked from the template) against fresh-interpreter cells.

A probe catalogue records what a case can see of its process, in the cell and in its spawn
and forkserver workers: ``sys.argv``, ``sys.path``, the environment, the working directory,
``__main__`` / ``__mp_main__``, process group and session, signal dispositions, open file
descriptors. Warm and fresh cells must see the same, and give the same outcomes and kinds;
the full-catalogue comparison is marked ``catalogue``.
"""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import processes_with_env

from harness.catalogue.discover import discover, select
from harness.classify.outcomes import METHODS
from harness.run.plan import plan, resolve_isolation
from harness.run.pool import run_cells
from harness.run.warm import Template, warm_available

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not warm_available(), reason="warm starts exist on Linux only")

_FACTS = '''
import json
import os
import signal
import sys
import tempfile
import threading

import multiprocessing
import multiprocessing.process
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from harness.case import current_cell, squares



def facts(where):
    cwd = os.getcwd()

    def norm(x):
        return x.replace(cwd, "<cwd>") if isinstance(x, str) else x

    def mod(name):
        m = sys.modules.get(name)
        if m is None:
            return None
        return [getattr(getattr(m, "__spec__", None), "name", None), norm(getattr(m, "__file__", None))]

    return {
        "where": where,
        "argv": [norm(a) for a in sys.argv],
        "orig_argv": [norm(a) for a in getattr(sys, "orig_argv", [])],
        "path": [norm(p) for p in sys.path],
        "env": {k: norm(v) for k, v in os.environ.items()},
        "cwd_is_tmpdir": cwd == os.environ.get("TMPDIR"),
        "tempdir": norm(tempfile.gettempdir()),
        "original_dir": norm(multiprocessing.process.ORIGINAL_DIR),
        "main": mod("__main__"),
        "mp_main": mod("__mp_main__"),
        "harness_cell_imported": "harness.child.cell" in sys.modules,
        "own_group": os.getpgid(0) == os.getpid(),
        "own_session": os.getsid(0) == os.getpid(),
        "signals": {s: repr(signal.getsignal(getattr(signal, s)))
                    for s in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE", "SIGHUP", "SIGUSR1")},
        "start_method": multiprocessing.get_start_method(allow_none=True),
        "python_threads": threading.active_count(),
        "executable": sys.executable,
        "flags": repr(sys.flags),
        "fds": sorted(os.listdir("/proc/self/fd")) if where == "cell" else None,
        "authkey": bytes(multiprocessing.current_process().authkey).hex(),
        "random": [__import__("random").random(), torch.initial_seed(),
                   __import__("numpy").random.random()],
    }


def dump(name, data):
    out = os.environ["PROBE_OUT"]
    cell = current_cell()
    path = os.path.join(out, f"{name}-{cell.method}-{data['where']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


class Probe(Dataset):
    def __init__(self, name, n):
        self.name = name
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        if info is not None and i < 2:
            dump(self.name, facts(f"worker{info.id}"))
        return torch.tensor([i, i * i])


def probe(name):
    dump(name, facts("cell"))
    cell = current_cell()
    loader = DataLoader(Probe(name, 4), batch_size=1, num_workers=cell.num_workers)
    cell.check(loader, squares(4))
'''

_EXPECT_PASS = '{"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"}'

PROBE_MODULE = _FACTS + f'''

CASE = {{
    "id": "probe-module",
    "family": "probe",
    "title": "what a module case sees",
    "why": "test probe",
    "expect": {_EXPECT_PASS},
    "sources": ["tests"],
}}


def run(cell):
    probe("probe-module")
'''

PROBE_SCRIPT = _FACTS + f'''

CASE = {{
    "id": "probe-script",
    "family": "probe",
    "title": "what a script case sees",
    "script": True,
    "why": "test probe",
    "expect": {_EXPECT_PASS},
    "sources": ["tests"],
}}

if __name__ == "__main__":
    probe("probe-script")
'''


def _probe_catalogue(root: Path) -> Path:
    cat = root / "probecases"
    cat.mkdir(parents=True)
    (cat / "__init__.py").write_text('"""Probe cases."""\n')
    (cat / "probe_module.py").write_text(textwrap.dedent(PROBE_MODULE))
    (cat / "probe_script.py").write_text(textwrap.dedent(PROBE_SCRIPT))
    return cat


def _run(specs, isolation: str, out: Path, monkeypatch, mark: str) -> dict[tuple[str, str], dict]:
    out.mkdir()
    monkeypatch.setenv("PROBE_OUT", str(out))
    monkeypatch.setenv("HARNESS_TEST_MARK", mark)
    records = run_cells(specs, "test", 2, isolation=isolation)
    return {(r["case"], r["method"]): r for r in records}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same cells run warm, then fresh: ``{mode: (records, facts dir)}``."""
    root = tmp_path_factory.mktemp("isolation")
    probe_cases = discover(_probe_catalogue(root)).cases
    hang = select(discover(TESTS / "fixture_cases").cases, ["fixture-hang"])
    catalogue = discover().cases
    specs = (plan(probe_cases, ["spawn", "forkserver", "fork"], 60)
             + plan(hang, ["fork"], 3)
             + plan(select(catalogue, ["entry-def-inside-main-guard"]), ["spawn", "forkserver"], 60)
             + plan(select(catalogue, ["transform-lambda"]), ["spawn"], 60))
    mark = uuid.uuid4().hex
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        for mode in ("warm", "fresh"):
            out[mode] = (_run(specs, mode, root / mode, mp, mark), root / mode)
    out["leftovers"] = processes_with_env("HARNESS_TEST_MARK", mark)
    return out


def _facts(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def test_warm_is_the_default_on_linux():
    assert resolve_isolation("auto") == "warm"
    assert resolve_isolation(None) == "warm"
    assert resolve_isolation("fresh") == "fresh"
    with pytest.raises(ValueError):
        resolve_isolation("lukewarm")


def test_same_outcomes_and_kinds(both):
    warm, fresh = both["warm"][0], both["fresh"][0]
    assert warm.keys() == fresh.keys()
    for key in warm:
        assert (warm[key]["outcome"], warm[key]["kind"]) == (fresh[key]["outcome"], fresh[key]["kind"]), key
    # What these cells do was observed by hand on Linux (CPython 3.11, torch 2.13.0).
    assert warm[("fixture-hang", "fork")]["outcome"] == "hang"
    assert (warm[("transform-lambda", "spawn")]["outcome"], warm[("transform-lambda", "spawn")]["kind"]) == ("error", "pickle")
    for m in ("spawn", "forkserver"):
        rec = warm[("entry-def-inside-main-guard", m)]
        assert (rec["outcome"], rec["kind"]) == ("error", "main-attribute")
        assert "__mp_main__" in rec["root_cause"]
        for case in ("probe-module", "probe-script"):
            assert warm[(case, m)]["outcome"] == "pass", warm[(case, m)].get("stderr_tail")


def test_cells_and_workers_see_the_same_process(both):
    warm, fresh = _facts(both["warm"][1]), _facts(both["fresh"][1])
    assert warm.keys() == fresh.keys()
    # every probe ran in the cell and in both workers, under every method it was given
    assert len(warm) == 2 * 3 * 3
    for name in warm:
        w, f = dict(warm[name]), dict(fresh[name])
        for per_process in ("authkey", "random"):
            w.pop(per_process), f.pop(per_process)
        w["env"].pop("PROBE_OUT"), f["env"].pop("PROBE_OUT")  # the two runs' output folders
        assert w == f, name


def test_main_module_is_what_python_dash_m_or_the_script_makes_it(both):
    facts = _facts(both["warm"][1])
    for m in ("spawn", "forkserver"):
        cell = facts[f"probe-module-{m}-cell"]
        assert cell["main"][0] == "harness.child.cell"  # python -m harness.child.cell, never the template
        assert cell["argv"][0].endswith(os.path.join("harness", "child", "cell.py"))
        worker = facts[f"probe-module-{m}-worker0"]
        if m == "spawn":  # spawn re-imports the parent's __main__ module by name
            assert worker["mp_main"][0] == "harness.child.cell"
        script_cell = facts[f"probe-script-{m}-cell"]
        assert script_cell["main"][1].endswith("probe_script.py")
        script_worker = facts[f"probe-script-{m}-worker0"]
        assert script_worker["mp_main"][1].endswith("probe_script.py")  # the real script, re-imported
    for name, data in facts.items():
        # runpy warns when the module it runs as __main__ is already imported
        assert not data["harness_cell_imported"], name
        if data["where"] == "cell":
            assert data["own_group"] and data["own_session"], name
            assert data["cwd_is_tmpdir"] and data["original_dir"] == "<cwd>", name
            assert data["signals"]["SIGINT"].startswith("<built-in function default_int_handler"), name


def test_each_warm_cell_gets_its_own_random_state_and_authkey(both):
    facts = _facts(both["warm"][1])
    cells = [d for d in facts.values() if d["where"] == "cell"]
    for i, source in enumerate(("random", "torch", "numpy")):
        assert len({d["random"][i] for d in cells}) == len(cells), source
    assert len({d["authkey"] for d in cells}) == len(cells)


def test_nothing_is_left_behind(both):
    assert both["leftovers"] == []


def test_template_runs_no_thread_before_it_forks():
    with Template() as tpl:
        info = tpl.wait_ready()
        assert info.threads == 1
        assert info.pid == tpl.pid
        assert tpl.info == info


@pytest.mark.catalogue
def test_whole_catalogue_same_outcomes_warm_and_fresh():
    """Every cell of the catalogue, warm and fresh: identical outcome and kind per cell."""
    cases = discover().cases
    specs = plan(cases, METHODS, 60)
    jobs = max(1, len(os.sched_getaffinity(0)))
    warm = {(r["case"], r["method"]): r for r in run_cells(specs, "warm", jobs, isolation="warm")}
    fresh = {(r["case"], r["method"]): r for r in run_cells(specs, "fresh", jobs, isolation="fresh")}
    assert warm.keys() == fresh.keys() == {s.key for s in specs}
    differ = [(k, (warm[k]["outcome"], warm[k]["kind"]), (fresh[k]["outcome"], fresh[k]["kind"]))
              for k in warm if (warm[k]["outcome"], warm[k]["kind"]) != (fresh[k]["outcome"], fresh[k]["kind"])]
    assert differ == []


def test_a_template_that_cannot_start_leaves_cells_to_fresh_interpreters(tmp_path, capsys):
    # A torch that fails to import kills the template during its imports; the cell itself
    # gets the real environment, so it runs (fresh) and passes.
    (tmp_path / "torch.py").write_text("raise ImportError('no torch in this template')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    cases = select(discover(TESTS / "fixture_cases").cases, ["fixture-good"])
    with Template(env=env) as tpl:
        records = run_cells(plan(cases, ["fork"], 60), "test", 1, template=tpl)
        assert tpl.failed
    assert [(r["outcome"], r["exit_code"]) for r in records] == [("pass", 0)]
    err = capsys.readouterr().err
    assert "warm template failed" in err and "no torch in this template" in err
