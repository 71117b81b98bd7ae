"""The GitHub Actions workflow and tox.toml: they call only sessions that exist, cover the three
operating systems, pin every action by commit SHA, and validate offline."""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def nox_sessions() -> set[str]:
    """Session names declared in noxfile.py (``@nox.session`` or ``@nox.session(name=...)``)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(target) in ("nox.session", "session"):
                name = node.name
                if isinstance(deco, ast.Call):
                    for kw in deco.keywords:
                        if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                            name = kw.value.value
                names.add(name)
    return names


@pytest.fixture(scope="module")
def wf() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(wf: dict):
    for job_id, job in wf["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def _triggers(wf: dict) -> dict:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as boolean true


def test_every_nox_session_called_exists(wf):
    sessions = nox_sessions()
    assert {"matrix", "report", "lint", "tests"} <= sessions
    called = set()
    for _, step in _steps(wf):
        for line in step.get("run", "").splitlines():
            argv = shlex.split(line)
            if "nox" not in argv:
                continue
            taking = False
            for arg in argv[argv.index("nox") + 1:]:
                if arg in ("-s", "--session", "--sessions", "-e"):
                    taking = True
                elif arg.startswith("-"):
                    taking = False
                elif taking:
                    called.add(arg)
    assert called, "the workflow calls no nox session"
    assert called <= sessions, f"unknown nox sessions: {called - sessions}"
    assert {"matrix", "report", "lint"} <= called


def test_matrix_covers_three_oses_pythons_and_two_torches(wf):
    job = wf["jobs"]["run"]
    strategy = job["strategy"]
    assert strategy["fail-fast"] is False
    matrix = strategy["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "windows-latest", "macos-latest"}
    defaults = {}
    for key in ("python", "torch"):
        found = re.search(rf"inputs\.{key} \|\| '(\[.*?\])'", matrix[key])
        assert found, matrix[key]
        defaults[key] = yaml.safe_load(found.group(1))
    assert defaults["python"] == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert len(defaults["torch"]) >= 2 and "2.13.0" in defaults["torch"]
    assert job["env"]["HARNESS_TORCH"] == "torch==${{ matrix.torch }}"
    assert "https://download.pytorch.org/whl/cpu" in job["env"]["HARNESS_TORCH_INDEX_URL"]
    assert "matrix.os == 'ubuntu-latest'" in job["env"]["HARNESS_TORCH_INDEX_URL"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert "nox -s matrix" in runs
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "reports/shards/*.json"
    assert all(f"${{{{ matrix.{k} }}}}" in upload["with"]["name"] for k in ("os", "python", "torch"))
    assert upload["if"] == "${{ always() }}"


def test_report_job_merges_everything_and_writes_the_summary(wf):
    job = wf["jobs"]["report"]
    assert set(job["needs"]) == set(wf["jobs"]) - {"report"}
    assert job["if"] == "${{ always() }}"
    download = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["merge-multiple"] is True and download["with"]["path"] == "reports/shards"
    run = next(s["run"] for s in job["steps"] if "nox -s report" in s.get("run", ""))
    assert '--summary "$GITHUB_STEP_SUMMARY"' in run
    upload = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(upload) == 1
    paths = upload[0]["with"]["path"].split()
    assert {Path(p).name for p in paths} == {"COMPATIBILITY.md", "matrix.html", "matrix.json", "junit.xml", "matrix.png"}


def test_hygiene(wf):
    assert wf["permissions"] == {"contents": "read"}
    assert "group" in wf["concurrency"]
    triggers = _triggers(wf)
    assert set(triggers) == {"push", "pull_request", "schedule", "workflow_dispatch"}
    assert set(triggers["workflow_dispatch"]["inputs"]) == {"python", "torch"}
    assert "pull_request_target" not in WORKFLOW.read_text(encoding="utf-8")
    lines = WORKFLOW.read_text(encoding="utf-8").splitlines()
    uses = [(job, s) for job, s in _steps(wf) if "uses" in s]
    assert uses
    for job, step in uses:
        assert SHA_PIN.match(step["uses"]), f"{job}: {step['uses']} is not pinned by a full commit SHA"
        line = next(ln for ln in lines if step["uses"] in ln)
        assert re.search(r"#\s*v\d+(\.\d+)*\s*$", line), f"{job}: no version comment on {line.strip()}"
        if step["uses"].startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    for job_id, job in wf["jobs"].items():
        assert "permissions" not in job or job["permissions"] in ({}, {"contents": "read"}), job_id


def _tool(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


@pytest.mark.parametrize("command", [
    ["zizmor", "--offline", "--min-severity", "medium", str(WORKFLOW.parent)],
    ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
])
def test_offline_validators(command):
    exe = _tool(command[0])
    if exe is None:
        pytest.skip(f"{command[0]} is not installed (nox -s lint installs it)")
    proc = subprocess.run([exe, *command[1:]], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_tox_mirrors_the_nox_sessions():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    tox = tomllib.loads((ROOT / "tox.toml").read_text(encoding="utf-8"))
    envs = tox["env"]
    assert {"run", "report", "tests"} <= set(envs) <= nox_sessions()
    assert tox["labels"]["matrix"] == ["run", "report"]
    assert tox["env_run_base"]["deps"] == [{"replace": "env", "name": "HARNESS_TORCH", "default": "torch==2.13.0"}]
    nox_default = re.search(r'HARNESS_TORCH", "([^"]+)"', (ROOT / "noxfile.py").read_text(encoding="utf-8")).group(1)
    assert nox_default == "torch==2.13.0"  # the same pin in both drivers
    for name in ("run", "report", "tests"):
        argv = envs[name]["commands"][0]
        assert argv[-1] == {"replace": "posargs", "extend": True}
    assert envs["run"]["commands"][0][:2] == ["harness", "run"]
    assert envs["report"]["commands"][0][:2] == ["harness", "report"]
