"""The built wheel, installed into a fresh virtualenv, works from a folder outside the checkout.

``nox -s package`` builds the sdist and the wheel, checks them with ``twine check --strict``
and runs this file with ``HARNESS_DIST`` set to the folder that holds them (and
``--noconftest``: nothing here imports the checkout's harness). The virtualenv gets the wheel
and torch (``HARNESS_TORCH``, default ``torch==2.13.0``; ``HARNESS_TORCH_INDEX_URL`` for another
index) and nothing else; every command runs from an empty temporary folder, with no
``PYTHONPATH``, so only what the wheel installed can answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.package

CHECKOUT = Path(__file__).resolve().parents[2]
DIST = os.environ.get("HARNESS_DIST")


def _wheel() -> Path:
    if not DIST:
        pytest.skip("HARNESS_DIST is not set: nox -s package builds the distributions and runs this")
    wheels = sorted(Path(DIST).glob("dataloader_start_harness-*.whl"))
    assert len(wheels) == 1, f"{DIST}: expected one wheel, found {[w.name for w in wheels]}"
    return wheels[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin directory, environment, an empty working folder) of a fresh virtualenv holding the wheel."""
    wheel = _wheel()
    root = tmp_path_factory.mktemp("installed")
    venv.create(root / "venv", with_pip=True, clear=True)
    bindir = root / "venv" / ("Scripts" if os.name == "nt" else "bin")
    torch = os.environ.get("HARNESS_TORCH", "torch==2.13.0")
    index = os.environ.get("HARNESS_TORCH_INDEX_URL")
    pip = [str(bindir / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, torch, *(["--index-url", index] if index else [])], check=True, timeout=1200)
    subprocess.run([*pip, str(wheel)], check=True, timeout=1200)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    work = root / "elsewhere"
    work.mkdir()
    return bindir, env, work


def _run(installed, *args, timeout=600):
    bindir, env, work = installed
    exe = bindir / ("harness.exe" if os.name == "nt" else "harness")
    return subprocess.run([str(exe), *args], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def _case_ids_in_checkout() -> set[str]:
    """The ids of the checkout's cases, from the documented naming rule (a case module is named
    as its id with ``-`` written ``_``): every module that assigns ``CASE`` at its top level, and
    every notebook. Read from the files, not from the harness."""
    import re

    ids = set()
    for path in (CHECKOUT / "harness_cases").rglob("*"):
        if path.name.startswith("_"):
            continue
        if path.suffix == ".ipynb" or (path.suffix == ".py" and re.search(
                r"^CASE\s*=", path.read_text(encoding="utf-8"), re.M)):
            ids.add(path.stem.replace("_", "-"))
    return ids


def test_the_wheel_installs_no_top_level_cases_package():
    """Only ``harness`` and ``harness_cases`` (names that cannot clash with a project's own
    ``cases``) and the metadata: nothing else lands in ``site-packages``."""
    with zipfile.ZipFile(_wheel()) as zf:
        top = {name.split("/", 1)[0] for name in zf.namelist()}
    meta = {t for t in top if t.endswith(".dist-info")}
    assert top - meta == {"harness", "harness_cases"}
    assert len(meta) == 1


def test_metadata_and_version_have_one_source(installed):
    bindir, env, work = installed
    code = ("import importlib.metadata as m, harness, harness_cases; "
            "print(m.version('dataloader-start-harness'), harness.__version__, harness_cases.__file__)")
    out = subprocess.run([str(bindir / "python"), "-c", code], cwd=work, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == out[1]
    assert "site-packages" in out[2]  # the installed catalogue, not the checkout's
    assert _run(installed, "--version").stdout.strip() == f"harness {out[0]}"


def test_list_explain_run_report_from_an_unrelated_folder(installed):
    bindir, env, work = installed
    listed = _run(installed, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    cases = json.loads(listed.stdout)
    assert {c["id"] for c in cases} == _case_ids_in_checkout()
    assert all("site-packages" in c["path"] and Path(c["path"]).is_file() for c in cases)

    explained = _run(installed, "explain", "dataset-lambda-attribute")
    assert explained.returncode == 0, explained.stderr
    assert "site-packages" in explained.stdout and "spawn       error/pickle" in explained.stdout

    ran = _run(installed, "run", "--cases", "dataset-lambda-attribute", "transform-toplevel-def",
               "--out", "shards")
    assert ran.returncode == 0, ran.stderr
    (shard,) = (work / "shards").glob("*.json")
    results = {(r["case"], r["method"]): (r["outcome"], r["kind"])
               for r in json.loads(shard.read_text(encoding="utf-8"))["results"]}
    # the case's documented outcome: a lambda attribute does not pickle for spawn and forkserver
    assert results[("dataset-lambda-attribute", "spawn")] == ("error", "pickle")
    assert results[("dataset-lambda-attribute", "fork")][0] == "pass"
    assert {o for (c, _), (o, _) in results.items() if c == "transform-toplevel-def"} == {"pass"}

    reported = _run(installed, "report", "--shards", "shards", "--out", "report")
    assert reported.returncode == 0, reported.stderr
    assert {"COMPATIBILITY.md", "matrix.html", "matrix.json"} <= {p.name for p in (work / "report").iterdir()}
    assert "dataset-lambda-attribute" in (work / "report" / "COMPATIBILITY.md").read_text(encoding="utf-8")


def test_diagnose_and_lint_on_a_users_module(installed):
    bindir, env, work = installed
    (work / "userdata.py").write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset\n\n\n"
        "class Squares(Dataset):\n"
        "    def __init__(self, transform):\n"
        "        self.transform = transform\n\n"
        "    def __len__(self):\n"
        "        return 4\n\n"
        "    def __getitem__(self, i):\n"
        "        return self.transform(torch.tensor(i))\n\n\n"
        "def make_loader():\n"
        "    return DataLoader(Squares(lambda x: x * x), num_workers=2)\n", encoding="utf-8")
    diagnosed = _run(installed, "diagnose", "userdata:make_loader")
    assert diagnosed.returncode == 1, diagnosed.stdout + diagnosed.stderr
    assert "transform" in diagnosed.stdout and "lambda" in diagnosed.stdout
    linted = _run(installed, "lint", "userdata.py")
    assert linted.returncode == 1 and "userdata.py:" in linted.stdout, linted.stdout + linted.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "--noconftest", "-m", "package", "-p", "no:cacheprovider"]))
