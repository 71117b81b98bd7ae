"""Broken cases: a case that fails its own in-process control, or whose module does not import,
is reported as a broken case naming its file, and every other case still runs.

Real cells (in-process and fork, or spawn where fork does not exist) of a temporary catalogue passed with ``--catalogue``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from harness._policy import available_methods

# A worker method this platform has (fork where it exists: the quickest).
WORKER = "fork" if "fork" in available_methods() else "spawn"
ALL_PASS = '{"in-process": "pass", "fork": "pass", "spawn": "pass", "forkserver": "pass"}'


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


def _catalogue(root: Path) -> Path:
    cat = root / "brokencat"
    cat.mkdir()
    _write(cat, "__init__.py", "")
    _write(cat, "ok.py", f'''
        from torch.utils.data import DataLoader
        from harness.case import Squares, squares
        CASE = {{"id": "t-ok", "family": "t", "title": "ok", "why": "w", "expect": {ALL_PASS},
                "sources": ["https://example.org/ok"]}}
        def run(cell):
            cell.check(DataLoader(Squares(8), batch_size=2, num_workers=cell.num_workers), squares(8))
        ''')
    _write(cat, "raises.py", f'''
        CASE = {{"id": "t-raises", "family": "t", "title": "control fails", "why": "w", "expect": {ALL_PASS},
                "sources": ["https://example.org/raises"]}}
        def run(cell):
            raise ValueError("the case itself is wrong")
        ''')
    _write(cat, "badimport.py", f'''
        import module_that_does_not_exist_anywhere  # noqa: F401
        CASE = {{"id": "t-badimport", "family": "t", "title": "does not import", "why": "w",
                "expect": {ALL_PASS}, "sources": ["https://example.org/badimport"]}}
        def run(cell):
            pass
        ''')
    _write(cat, "syntax.py", 'CASE = {"id": "t-syntax",\n')
    return cat


def test_broken_cases_are_named_once_and_the_rest_still_runs(tmp_path, cli):
    cat = _catalogue(tmp_path)
    out = tmp_path / "shards"
    proc = cli("run", "--catalogue", str(cat), "--start-method", "in-process", WORKER, "--out", str(out))
    # An unreadable module (syntax.py) is an input error: exit 2, after the other cases ran.
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("[")]
    named = {name: [ln for ln in lines if f"{name}.py" in ln] for name in ("raises", "badimport", "syntax", "ok")}
    assert len(named["raises"]) == 1 and "broken case 't-raises'" in named["raises"][0]
    assert "ValueError: the case itself is wrong" in named["raises"][0]
    assert len(named["badimport"]) == 1 and "failed to import" in named["badimport"][0]
    assert "module_that_does_not_exist_anywhere" in named["badimport"][0]
    assert len(named["syntax"]) == 1 and "syntax error" in named["syntax"][0]
    assert named["ok"] == []
    # Broken cells are not start-method findings.
    assert "MISMATCH" not in proc.stdout and "2 broken case(s)" in proc.stdout

    (shard_path,) = out.glob("*.json")
    results = {(r["case"], r["method"]): r for r in json.loads(shard_path.read_text())["results"]}
    assert set(results) == {(c, m) for c in ("t-ok", "t-raises", "t-badimport") for m in ("in-process", WORKER)}
    for m in ("in-process", WORKER):
        assert results[("t-ok", m)]["outcome"] == "pass" and results[("t-ok", m)]["matches"]
        assert not results[("t-ok", m)]["broken"]
        assert results[("t-raises", m)]["broken"] and not results[("t-raises", m)]["matches"]
        bad = results[("t-badimport", m)]
        assert bad["broken"] and (bad["outcome"], bad["kind"]) == ("error", "import")


def test_a_module_that_does_not_import_is_broken_under_any_method(tmp_path, cli):
    cat = _catalogue(tmp_path)
    (cat / "syntax.py").unlink()
    out = tmp_path / "shards"
    proc = cli("run", "--catalogue", str(cat), "--cases", "t-badimport", "t-ok", "--start-method", WORKER,
               "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    assert sum("broken case 't-badimport'" in ln for ln in proc.stderr.splitlines()) == 1
    (shard_path,) = out.glob("*.json")
    results = {r["case"]: r for r in json.loads(shard_path.read_text())["results"]}
    assert results["t-badimport"]["broken"] and not results["t-ok"]["broken"]
