"""``harness lint`` as a user runs it: held-out scripts, modules and notebooks (each hazard and
its safe twin), the output formats, suppressions, configuration, exit codes and bad input.

The expected lines are where the hazard is written in each input below; the expected rule and
case are what the catalogue observes for that mechanism (a lambda under spawn, a local function,
a class under the main guard ...), not what the lint happens to print.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEADER = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return path


def _line_of(path: Path, marker: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if marker in line)


def _lint(cli, *args, cwd):
    proc = cli("lint", "--json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)["findings"]


# name -> (unsafe source, marker on the culprit's line, rule, case, safe twin)
HELD_OUT = {
    "helper_parameter": (
        """
        def make_loader(ds, fn):
            return DataLoader(ds, batch_size=2, num_workers=2, collate_fn=fn)

        def build(ds):
            return make_loader(ds, lambda batch: batch)  # CULPRIT
        """,
        "CULPRIT", "HL101", "collate-fn-lambda",
        """
        def collate(batch):
            return batch

        def make_loader(ds, fn):
            return DataLoader(ds, batch_size=2, num_workers=2, collate_fn=fn)

        def build(ds):
            return make_loader(ds, collate)
        """,
    ),
    "stored_by_init": (
        """
        class Images(Dataset):
            def __init__(self, files, augment):
                self.files = files
                self.augment = augment

            def __len__(self):
                return len(self.files)

            def __getitem__(self, i):
                return self.augment(self.files[i])

        def train(files):
            def flip(x):  # CULPRIT
                return x[::-1]
            return DataLoader(Images(files, flip), num_workers=4)
        """,
        "CULPRIT", "HL102", "transform-local-def",
        """
        class Images(Dataset):
            def __init__(self, files, augment):
                self.files = files
                self.augment = augment

            def __len__(self):
                return len(self.files)

            def __getitem__(self, i):
                return self.augment(self.files[i])

        def flip(x):
            return x[::-1]

        def train(files):
            return DataLoader(Images(files, flip), num_workers=4)
        """,
    ),
    "open_in_init": (
        """
        class Lines(Dataset):
            def __init__(self, path, cached=True):
                if cached:
                    self.fh = open(path, "rb")  # CULPRIT
                self.n = 10

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                return self.fh.readline()
        """,
        "CULPRIT", "HL201", "dataset-open-file",
        """
        class Lines(Dataset):
            def __init__(self, path, cached=True):
                self.path = path
                self.fh = None
                self.n = 10

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                if self.fh is None:
                    self.fh = open(self.path, "rb")
                return self.fh.readline()
        """,
    ),
    "no_main_guard": (
        """
        def collate(batch):
            return batch

        def main():
            loader = DataLoader(list(range(8)), num_workers=2, collate_fn=collate)
            for batch in loader:
                print(batch)

        main()  # CULPRIT
        """,
        "CULPRIT", "HL301", "entry-no-main-guard",
        """
        def collate(batch):
            return batch

        def main():
            loader = DataLoader(list(range(8)), num_workers=2, collate_fn=collate)
            for batch in loader:
                print(batch)

        if __name__ == "__main__":
            main()
        """,
    ),
    "class_under_guard": (
        """
        if __name__ == "__main__":
            class Numbers(Dataset):  # CULPRIT
                def __len__(self):
                    return 8

                def __getitem__(self, i):
                    return i

            for batch in DataLoader(Numbers(), num_workers=2):
                print(batch)
        """,
        "CULPRIT", "HL302", "entry-class-inside-main-guard",
        """
        class Numbers(Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                return i

        if __name__ == "__main__":
            for batch in DataLoader(Numbers(), num_workers=2):
                print(batch)
        """,
    ),
    "generic_loader_subclass": (
        """
        from typing import Generic, TypeVar

        T = TypeVar("T")

        class BatchLoader(DataLoader[T], Generic[T]):
            def __init__(self, data, workers=2):
                super().__init__(data, num_workers=workers, collate_fn=lambda batch: batch[0])  # CULPRIT
        """,
        "CULPRIT", "HL101", "collate-fn-lambda",
        """
        from typing import Generic, TypeVar

        T = TypeVar("T")

        def first(batch):
            return batch[0]

        class BatchLoader(DataLoader[T], Generic[T]):
            def __init__(self, data, workers=2):
                super().__init__(data, num_workers=workers, collate_fn=first)
        """,
    ),
    "generic_dataset_base": (
        """
        from typing import TypeVar

        T = TypeVar("T")

        class Shards(Dataset[T]):
            def __init__(self, index):
                self.index = open(index)  # CULPRIT
        """,
        "CULPRIT", "HL201", "dataset-open-file",
        """
        from typing import TypeVar

        T = TypeVar("T")

        class Shards(Dataset[T]):
            def __init__(self, index):
                self.index = index
        """,
    ),
    "partial_of_local": (
        """
        import functools

        def run(data):
            def scale(x, k):  # CULPRIT
                return x * k
            return DataLoader(data, num_workers=2, worker_init_fn=None,
                              collate_fn=functools.partial(scale, k=2))
        """,
        "CULPRIT", "HL102", "transform-partial-local",
        """
        import functools

        def scale(x, k):
            return x * k

        def run(data):
            return DataLoader(data, num_workers=2, collate_fn=functools.partial(scale, k=2))
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_held_out_hazard_is_flagged_at_its_line_and_its_safe_twin_is_clean(cli, tmp_path, name):
    unsafe, marker, rule, case, safe = HELD_OUT[name]
    bad = _write(tmp_path, f"{name}.py", unsafe)
    good = _write(tmp_path, f"{name}_fixed.py", safe)
    proc, findings = _lint(cli, bad.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert [(f["path"], f["line"], f["rule"], f["case"]) for f in findings] == [
        (bad.name, _line_of(bad, marker), rule, case)]
    proc, findings = _lint(cli, good.name, cwd=tmp_path)
    assert (proc.returncode, findings) == (0, [])


NOTEBOOK_CELLS = [
    ("markdown", "# Training"),
    ("code", "import torch\nfrom torch.utils.data import DataLoader, Dataset\n%matplotlib inline"),
    ("code", "class Cells(Dataset):\n    def __len__(self):\n        return 8\n\n    def __getitem__(self, i):\n        return i"),
    ("markdown", "Now the loader:"),
    ("code", "loader = DataLoader(Cells(), batch_size=2, num_workers=2)\nnext(iter(loader))"),
]


def _notebook(path: Path, cells) -> Path:
    nb = {"cells": [{"cell_type": kind, "metadata": {}, "source": text,
                     **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                    for kind, text in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_a_notebook_definition_is_located_by_cell_and_line(cli, tmp_path):
    nb = _notebook(tmp_path / "train.ipynb", NOTEBOOK_CELLS)
    proc, findings = _lint(cli, nb.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert [(f["cell"], f["line"], f["rule"], f["case"]) for f in findings] == [(3, 1, "HL303", "notebook-dataset-class")]
    # its safe twin imports the class from a module beside the notebook
    fixed = [c if i != 2 else ("code", "from cells import Cells") for i, c in enumerate(NOTEBOOK_CELLS)]
    twin = _notebook(tmp_path / "train_fixed.ipynb", fixed)
    (tmp_path / "cells.py").write_text(HEADER + "class Cells(Dataset):\n    pass\n", encoding="utf-8")
    assert _lint(cli, twin.name, "cells.py", cwd=tmp_path)[1] == []


def test_num_workers_zero_is_a_warning_and_itertools_is_a_hazard(cli, tmp_path):
    path = _write(tmp_path, "zero.py", """
        import itertools

        class Cycling(Dataset):
            def __init__(self, items):
                self.order = itertools.cycle(items)

        def loader(ds):
            return DataLoader(ds, collate_fn=lambda b: b)
        """)
    proc, findings = _lint(cli, path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert [(f["rule"], f["level"]) for f in findings] == [("HL202", "warning"), ("HL101", "warning")]
    assert "num_workers=0 here" in findings[1]["message"]


def test_suppression_selection_and_configuration(cli, tmp_path):
    path = _write(tmp_path, "two.py", """
        def loader(ds):
            return DataLoader(ds, num_workers=2, collate_fn=lambda b: b)  # harness: ignore[HL101]

        def other(ds):
            def local(b):
                return b
            return DataLoader(ds, num_workers=2, worker_init_fn=local)
        """)
    assert [f["rule"] for f in _lint(cli, path.name, cwd=tmp_path)[1]] == ["HL102"]
    assert _lint(cli, path.name, "--ignore", "HL1", cwd=tmp_path)[1] == []
    (tmp_path / "pyproject.toml").write_text('[tool.harness.lint]\nselect = ["HL3"]\npaths = ["two.py"]\n')
    proc, findings = _lint(cli, cwd=tmp_path)
    assert (proc.returncode, findings) == (0, [])


@pytest.mark.parametrize(("args", "config", "says"), [
    (["nowhere.py"], None, "nowhere.py: no such file or folder"),
    (["--select", "XY1", "."], None, "--select: 'XY1' is no rule code"),
    (["."], "[tool.harness.lint]\nselct = []\n", "unknown key 'selct'"),
    (["."], '[tool.harness.lint]\nignore = ["HL999"]\n', "'HL999' is no rule code"),
])
def test_usage_errors_are_one_line_exit_2(cli, tmp_path, args, config, says):
    if config:
        (tmp_path / "pyproject.toml").write_text(config)
    proc = cli("lint", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr, proc.stderr


def test_a_file_that_does_not_parse_is_one_line_and_the_others_are_checked(cli, tmp_path):
    (tmp_path / "broken.py").write_text("from torch.utils.data import DataLoader\ndef f(:\n", encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text("{not json", encoding="utf-8")
    good = _write(tmp_path, "bad.py", "def run(d):\n    return DataLoader(d, num_workers=2, collate_fn=lambda b: b)\n")
    proc = cli("lint", "--json", ".", cwd=tmp_path)
    assert proc.returncode == 1
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 2 and any("broken.py: does not parse (line 2" in e for e in errors) \
        and any("nb.ipynb: not a notebook" in e for e in errors), errors
    doc = json.loads(proc.stdout)
    assert [f["path"] for f in doc["findings"]] == [good.name] and doc["files"] == 1


def test_github_and_sarif_outputs(cli, tmp_path):
    src = tmp_path / "src" / "pkg"
    src.mkdir(parents=True)
    path = _write(src, "data.py", "def run(d):\n    return DataLoader(d, num_workers=2, collate_fn=lambda b: b)\n")
    line = 4
    proc = cli("lint", "--format", "github", "src", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"::error file=src/pkg/data.py,line={line},col=")
    assert "title=HL101 collate-fn-lambda::" in proc.stdout
    proc = cli("lint", "--format", "sarif", "src", cwd=tmp_path)
    sarif = json.loads(proc.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    (result,) = run["results"]
    assert result["ruleId"] == "HL101" and run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "HL101"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/pkg/data.py" and location["region"]["startLine"] == line
    assert path.is_file()


def test_lint_imports_no_torch_and_runs_no_user_code(tmp_path):
    (tmp_path / "boom.py").write_text("raise SystemExit('user code ran')\nimport torch\n", encoding="utf-8")
    code = ("import sys\nfrom harness._cli import main\nrc = main(['lint', '--json', 'boom.py'])\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', rc, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin"})
    assert "NO-TORCH 0" in proc.stderr, proc.stderr
    assert "user code ran" not in proc.stdout + proc.stderr


ROOT = Path(__file__).resolve().parents[2]


def test_the_lint_docs_example_is_the_sample_project_s_real_output(cli):
    doc = (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    block = doc.split("$ cd tests/data/downstream && harness lint .", 1)[1].split("```", 1)[0]
    shown = block.splitlines()[1:]
    proc = cli("lint", ".", cwd=ROOT / "tests" / "data" / "downstream")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [line for line in shown if line]


def test_the_pre_commit_hook_needs_no_torch():
    """pre-commit installs the hook's repository with its requirements into an environment of
    its own (https://pre-commit.com/#python): torch must not be one, and the hook runs the lint."""
    import yaml

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [(h["id"], h["entry"], h["language"]) for h in hooks] == [
        ("harness-lint", "harness lint", "python"), ("harness-lint-fix", "harness lint --fix", "python")]
    assert all({"python", "jupyter"} <= set(h["types_or"]) for h in hooks)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert not [r for r in requires if r.split(";")[0].strip().lower().startswith("torch")], requires


def test_commands_that_run_loaders_say_torch_is_missing(tmp_path):
    """Without torch, run, diagnose and reproduce are one line, exit 2; lint still works."""
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    (blocker / "torch.py").write_text("raise ImportError('hidden')\n", encoding="utf-8")
    code = ("import importlib.abc, sys\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from harness._cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    for args in (["run", "--cases", "collate-fn-lambda"], ["reproduce", "x.py"], ["diagnose", "x:y"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.strip().count("\n") == 0 and "PyTorch is not installed" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-c", code, "lint", str(blocker)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr


def test_hostile_files_are_one_line_each_and_the_rest_is_checked(cli, tmp_path):
    import os

    folder = tmp_path / "d"
    folder.mkdir()
    os.mkfifo(folder / "fifo.py")  # read_bytes() would block forever
    (folder / "zero.py").symlink_to("/dev/zero")  # would never end
    (folder / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nfrom torch.utils.data import DataLoader\n"
        b"s = '\xe9'\ndef run(d):\n    return DataLoader(d, num_workers=2, collate_fn=lambda b: b)\n")
    proc = cli("lint", "--json", "d", cwd=tmp_path, timeout=60)
    assert proc.returncode == 1
    errors = proc.stderr.strip().splitlines()
    assert sorted(e.split(": ", 2)[1] for e in errors) == ["d/fifo.py", "d/zero.py"], errors
    assert all("not a regular file" in e for e in errors)
    assert [(f["path"], f["line"]) for f in json.loads(proc.stdout)["findings"]] == [("d/latin.py", 5)]
    proc = cli("lint", "x" * 5000 + ".py", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "cannot be read" in proc.stderr
    proc = cli("lint", "", cwd=tmp_path)
    assert proc.returncode == 2 and "empty path" in proc.stderr


def test_notebook_ipython_forms_columns_and_suppressions(cli, tmp_path):
    cells = [
        ("code", "import torch\nfrom torch.utils.data import DataLoader\nfiles = !ls\nx = %pwd\n%time y = 1"),
        ("code", "if True:  # really?\n    pass\nz = (10\n     % 3)"),
        ("code", "%%time\nloader = DataLoader([1], num_workers=2, collate_fn=lambda b: b)"),
        ("code", "%%bash\necho not python"),
        ("code", "broken = (1,"),
        ("code", 's = "é"; DataLoader([1], num_workers=2, collate_fn=lambda b: b)'),
    ]
    nb = _notebook(tmp_path / "n.ipynb", cells)
    proc, findings = _lint(cli, nb.name, cwd=tmp_path)
    # columns count characters (ast counts UTF-8 bytes: the "é" is two)
    last = cells[5][1]
    assert [(f["cell"], f["line"], f["column"]) for f in findings] == [
        (3, 2, cells[2][1].splitlines()[1].index("lambda") + 1), (6, 1, last.index("lambda") + 1)], findings
    assert "cell 5 does not parse" in proc.stderr and proc.stderr.count("\n") == 1
    src = tmp_path / "ff.py"
    src.write_text("from torch.utils.data import DataLoader\n\x0c\n"
                   "def run(d):\n    x = '# harness: ignore'; DataLoader(d, num_workers=2, collate_fn=lambda b: b)\n"
                   "    return DataLoader(d, num_workers=2, collate_fn=lambda b: b)  # harness: ignore[HL1]\n",
                   encoding="utf-8")
    assert [f["line"] for f in _lint(cli, src.name, cwd=tmp_path)[1]] == [4]


def test_the_sarif_passes_the_reference_validator(cli, tmp_path):
    import shutil

    tool = shutil.which("sarif-multitool")
    if tool is None:
        pytest.skip("the reference SARIF validator is not installed (npm install @microsoft/sarif-multitool)")
    (tmp_path / "sp ace").mkdir()
    _write(tmp_path / "sp ace", "b%41.py", "def run(d):\n    return DataLoader(d, num_workers=2, collate_fn=lambda b: b)\n")
    out = tmp_path / "out.sarif"
    out.write_text(cli("lint", "--format", "sarif", ".", cwd=tmp_path).stdout, encoding="utf-8")
    proc = subprocess.run([tool, "validate", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "error" not in proc.stdout.lower().replace("0 error", ""), proc.stdout


def test_a_symlink_loop_given_by_name_is_one_line_and_the_other_files_are_still_checked(cli, tmp_path):
    """As for an unreadable file inside a folder: one line naming it, counted, the rest checked."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "c.py").symlink_to("b")
    (tmp_path / "train.py").write_text(
        "from torch.utils.data import DataLoader\n\n"
        "if __name__ == '__main__':\n"
        "    loader = DataLoader(range(4), num_workers=2, collate_fn=lambda b: b)\n", encoding="utf-8")
    for fmt in ("text", "sarif"):
        proc = cli("lint", "train.py", "c.py", "a", "--format", fmt, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == ["harness lint: c.py: cannot be read (Too many levels of symbolic links)",
                                            "harness lint: a: cannot be read (Too many levels of symbolic links)"]
        assert "HL101" in proc.stdout
