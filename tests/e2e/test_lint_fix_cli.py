"""``harness lint --fix`` and ``--diff`` as a user runs them: what is rewritten and what is
refused (with why), comments kept, exit codes, and the safety rules (unparsable, read-only and
changed files, notebooks, encodings and line endings).

Whether the fixed code then runs under spawn and forkserver, with the same data, is
``tests/e2e/test_lint_fix_proof.py`` (it starts real workers).
"""

from __future__ import annotations

import ast
import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent('''\
    """A training script."""
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Squares(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.tensor(i * i)


    def main():
        # the loader of the run
        loader = DataLoader(Squares(), batch_size=4, num_workers=2,
                            collate_fn=lambda batch: torch.stack(batch) * 2)  # keep me
        print([b.tolist() for b in loader])


    if __name__ == "__main__":
        main()
    ''')


def _findings(cli, path: Path) -> list[dict]:
    proc = cli("lint", "--json", str(path))
    return json.loads(proc.stdout)["findings"]


def test_diff_previews_and_writes_nothing(cli, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = cli("lint", "--diff", str(script))
    assert proc.returncode == 1, proc.stderr
    assert script.read_text(encoding="utf-8") == SCRIPT
    name = script.as_posix().lstrip("/")  # a/ and b/ then the path, as git writes them (patch -p1)
    assert proc.stdout.startswith(f"--- a/{name}\n+++ b/{name}\n")
    added = [ln[1:] for ln in proc.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln[1:] for ln in proc.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert removed == ["                        collate_fn=lambda batch: torch.stack(batch) * 2)  # keep me"]
    assert "def collate_fn(batch):" in added
    assert "    return torch.stack(batch) * 2" in added
    assert "                        collate_fn=collate_fn)  # keep me" in added
    assert "would fix 1 finding(s) in 1 file(s)" in proc.stderr


def test_fix_rewrites_keeps_comments_and_is_clean_after(cli, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    assert _findings(cli, script)[0]["rule"] == "HL101"
    proc = cli("lint", "--fix", str(script))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = script.read_text(encoding="utf-8")
    assert "# the loader of the run" in fixed and "# keep me" in fixed and '"""A training script."""' in fixed
    tree = ast.parse(fixed)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["collate_fn", "main"]
    assert _findings(cli, script) == []
    assert f"{script}:17:36: HL101 fixed: lambda -> def collate_fn" in proc.stderr
    # a second run finds nothing to do
    again = cli("lint", "--diff", str(script))
    assert again.returncode == 0 and again.stdout == ""


def test_refused_fix_says_why_and_leaves_the_file(cli, tmp_path):
    script = tmp_path / "loop.py"
    old = ("    loader = DataLoader(Squares(), batch_size=4, num_workers=2,\n"
           "                        collate_fn=lambda batch: torch.stack(batch) * 2)  # keep me\n"
           "    print([b.tolist() for b in loader])\n")
    assert old in SCRIPT
    source = SCRIPT.replace(old, "    for k in (1, 2):\n"
                                 "        loader = DataLoader(Squares(), batch_size=4, num_workers=2,\n"
                                 "                            collate_fn=lambda batch: torch.stack(batch) * k)\n"
                                 "        print([b.tolist() for b in loader])\n")
    script.write_text(source, encoding="utf-8")
    proc = cli("lint", "--fix", str(script))
    assert proc.returncode == 1
    assert script.read_text(encoding="utf-8") == source
    assert "HL101 not fixed: it reads 'k', which is bound by a loop" in proc.stderr
    assert "fixed 0 finding(s) in 0 file(s)" in proc.stderr
    assert "HL101" in proc.stdout  # the finding is still reported


def test_unparsable_file_is_one_line_and_others_are_fixed(cli, tmp_path):
    (tmp_path / "broken.py").write_text("from torch.utils.data import DataLoader\ndef f(:\n", encoding="utf-8")
    good = tmp_path / "train.py"
    good.write_text(SCRIPT, encoding="utf-8")
    proc = cli("lint", "--fix", str(tmp_path))
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if "broken.py" in ln]
    assert len(lines) == 1 and "does not parse (line 2" in lines[0] and lines[0].endswith("; not fixed")
    assert "def collate_fn(batch):" in good.read_text(encoding="utf-8")
    assert (tmp_path / "broken.py").read_text(encoding="utf-8").endswith("def f(:\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_file_or_folder_is_one_error_line(cli, tmp_path, what):
    """Refused by the permission bits too, so that root (which access(2) lets write) leaves it."""
    folder = tmp_path / "src"
    folder.mkdir()
    script = folder / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    (script if what == "file" else folder).chmod(stat.S_IRUSR | (stat.S_IXUSR if what == "folder" else 0))
    try:
        proc = cli("lint", "--fix", str(script))
    finally:
        folder.chmod(stat.S_IRWXU)
    assert proc.returncode == 1
    assert f"{script}: is read-only; not fixed" in proc.stderr
    assert script.read_text(encoding="utf-8") == SCRIPT
    assert sorted(p.name for p in folder.iterdir()) == ["train.py"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_fifo_named_py_is_one_line_not_a_hang(cli, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    proc = cli("lint", "--diff", str(tmp_path), timeout=60)
    assert "pipe.py: not a regular file; not fixed" in proc.stderr


def test_read_only_file_refused_even_as_root(tmp_path, monkeypatch):
    from harness.lint import rewrite

    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    monkeypatch.setattr(rewrite.os, "access", lambda path, mode: False)
    report = rewrite.rewrite_paths([script], write=True)
    assert report.errors == [f"{script}: is read-only; not fixed"]
    assert script.read_text(encoding="utf-8") == SCRIPT
    assert list(tmp_path.iterdir()) == [script]  # no temporary file left


def test_file_changed_while_fixing_is_not_overwritten(tmp_path, monkeypatch):
    from harness.lint import fix, rewrite

    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    real = fix.fix_text

    def edit_meanwhile(text, path, **kw):
        result = real(text, path, **kw)
        script.write_text(SCRIPT + "# saved by an editor\n", encoding="utf-8")
        return result

    monkeypatch.setattr(rewrite, "fix_text", edit_meanwhile)
    report = rewrite.rewrite_paths([script], write=True)
    assert report.errors == [f"{script}: changed while harness lint --fix ran; not rewritten"]
    assert script.read_text(encoding="utf-8").endswith("# saved by an editor\n")


def test_mode_encoding_and_line_endings_are_kept(cli, tmp_path):
    script = tmp_path / "train.py"
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + SCRIPT
    script.write_bytes(latin.replace("\n", "\r\n").encode("latin-1"))
    script.chmod(0o750)
    proc = cli("lint", "--fix", str(script))
    assert proc.returncode == 0, proc.stderr
    raw = script.read_bytes()
    assert b"# caf\xe9\r\n" in raw and b"def collate_fn(batch):\r\n" in raw
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


def test_notebook_is_reported_not_rewritten(cli, tmp_path):
    notebook = tmp_path / "nb.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "from torch.utils.data import DataLoader\n"
                        "loader = DataLoader(range(4), num_workers=2, collate_fn=lambda b: b)\n"}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                        encoding="utf-8")
    before = notebook.read_bytes()
    proc = cli("lint", "--fix", str(notebook))
    assert proc.returncode == 1
    assert notebook.read_bytes() == before
    assert "HL101" in proc.stdout


def test_fix_and_diff_together_is_a_usage_error(cli, tmp_path):
    proc = cli("lint", "--fix", "--diff", str(tmp_path))
    assert proc.returncode == 2
    assert "--fix and --diff" in proc.stderr


def test_select_limits_what_is_fixed(cli, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = cli("lint", "--diff", "--select", "HL3", str(script))
    assert proc.returncode == 0 and proc.stdout == ""


def test_fix_lines_are_those_of_the_file_as_it_was(cli, tmp_path):
    """Each fix moves code; what stderr names is where the finding was in the original file."""
    script = tmp_path / "two.py"
    script.write_text(textwrap.dedent('''\
        from torch.utils.data import DataLoader


        def main(ds):
            a = DataLoader(ds, num_workers=2, collate_fn=lambda b: b)
            b = DataLoader(ds, num_workers=2, worker_init_fn=lambda i: None)
            return a, b
        '''), encoding="utf-8")
    proc = cli("lint", "--diff", str(script))
    assert f"{script}:5:50: HL101 fixed: lambda -> def collate_fn" in proc.stderr
    assert f"{script}:6:54: HL101 fixed: lambda -> def worker_init_fn" in proc.stderr


def test_refused_resource_names_the_catalogue_fix(cli, tmp_path):
    script = tmp_path / "locked.py"
    script.write_text(textwrap.dedent('''\
        import threading

        from torch.utils.data import Dataset


        class Locked(Dataset):
            def __init__(self):
                self.lock = threading.Lock()
        '''), encoding="utf-8")
    proc = cli("lint", "--diff", str(script))
    assert proc.returncode == 0 and proc.stdout == ""
    assert "HL201 not fixed: self.lock holds threading.Lock" in proc.stderr
    assert "the catalogue's fix: harness explain dataset-lock-lazy" in proc.stderr


def test_a_loader_with_a_fork_context_pickles_nothing(cli, tmp_path):
    """``multiprocessing_context="fork"`` forks the workers: the dataset is inherited, not
    pickled, and the script is not imported again (torch.utils.data.DataLoader's docs)."""
    script = tmp_path / "forked.py"
    script.write_text(textwrap.dedent('''\
        import multiprocessing as mp

        from torch.utils.data import DataLoader


        def main(ds):
            a = DataLoader(ds, num_workers=2, collate_fn=lambda b: b, multiprocessing_context="fork")
            b = DataLoader(ds, num_workers=2, collate_fn=lambda b: b, multiprocessing_context=mp.get_context("fork"))
            c = DataLoader(ds, num_workers=2, collate_fn=lambda b: b, multiprocessing_context="spawn")
            return a, b, c
        '''), encoding="utf-8")
    assert [(f["line"], f["rule"]) for f in _findings(cli, script)] == [(9, "HL101")]


# What a fix would change in what the program does (each found by a hostile review): refused,
# the file left as it was, the reason named.
UNPROVABLE = {
    "default_read_later": ("SCALE = 1\n\ndef main(ds):\n"
                           "    return DataLoader(ds, num_workers=2, collate_fn=lambda b, s=SCALE: b * s)\n\n"
                           "SCALE = 5\n", "'SCALE', which the module binds more than once"),
    "mutable_default": ("def main(ds):\n    def t(i, seen=[]):\n        seen.append(i)\n        return i\n"
                        "    return DataLoader(ds, num_workers=2, collate_fn=t)\n", "made anew each time"),
    "class_body_code": ("def main():\n    class D(Dataset):\n        print('defining D')\n"
                        "        def __len__(self):\n            return 1\n"
                        "    return DataLoader(D(), num_workers=2)\n", "its body runs code"),
    "mangled_name": ("class Maker:\n    __scale = 3\n\n    def loader(self, ds):\n"
                     "        return DataLoader(ds, num_workers=2, collate_fn=lambda b: b * Maker.__scale)\n",
                     "mangles"),
    "captured_lock": ("import threading\n\ndef main(ds):\n    lock = threading.Lock()\n\n"
                      "    def t(b):\n        with lock:\n            return b\n"
                      "    return DataLoader(ds, num_workers=2, collate_fn=t)\n", "cannot be pickled"),
    "functools_shadowed": ("def main(ds, functools=None):\n    k = 2\n"
                           "    return DataLoader(ds, num_workers=2, collate_fn=lambda b: b * k)\n",
                           "binds 'functools' to something else"),
}


@pytest.mark.parametrize("name", sorted(UNPROVABLE))
def test_a_fix_that_would_change_behaviour_is_refused(cli, tmp_path, name):
    body, reason = UNPROVABLE[name]
    script = tmp_path / f"{name}.py"
    source = "from torch.utils.data import DataLoader, Dataset\n\n" + body
    script.write_text(source, encoding="utf-8")
    proc = cli("lint", "--fix", str(script))
    assert script.read_text(encoding="utf-8") == source
    assert "not fixed" in proc.stderr and reason in proc.stderr, proc.stderr
    assert proc.returncode == 1
