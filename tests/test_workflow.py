"""The GitHub Actions workflow, .ci/run and tox.toml against the noxfile: they call only sessions
that exist, run the parametrized sessions on exactly one interpreter each (--force-python), use the
Python list that nox derives from pyproject.toml, cover the three operating systems, pin every
action by commit SHA, and validate offline.

nox itself answers which sessions exist and which a command line selects (``nox -l --json``), so
these tests follow nox's real behaviour; none of them creates a virtualenv or installs torch."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
CI_RUN = ROOT / ".ci" / "run"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
PARAMETRIZED = {"matrix", "run", "tests", "regression"}
FORCE = ("--force-python", "--force-pythons", "-P")
SESSION_FLAGS = ("-s", "--session", "--sessions", "-e")


# --- nox, asked directly ------------------------------------------------------------------------

def _nox_command() -> list[str]:
    if importlib.util.find_spec("nox") is not None:
        return [sys.executable, "-m", "nox"]
    exe = shutil.which("nox")
    if exe is None:
        pytest.skip("nox is not installed (nox -s tests installs it)")
    return [exe]


def _nox_env(ci: bool | None = None) -> dict[str, str]:
    """The caller's environment without NOX* settings (NOXSESSION, NOXFORCEPYTHON ...)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NOX")}
    env["NO_COLOR"] = "1"
    env.pop("FORCE_COLOR", None)
    if ci is False:
        env.pop("CI", None)
    elif ci:
        env["CI"] = "true"
    return env


def nox(*args: str, ci: bool | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*_nox_command(), "-f", str(ROOT / "noxfile.py"), *args], cwd=ROOT,
                          env=_nox_env(ci), capture_output=True, text=True, timeout=timeout)


def nox_selected(*args: str) -> list[dict]:
    """What ``nox -l --json ARGS`` says those arguments select (nox fails on unknown sessions)."""
    proc = nox("--list", "--json", *args)
    assert proc.returncode == 0, f"nox {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def all_sessions() -> list[dict]:
    """Every session in the noxfile, with its python, as ``nox -l --json`` reports it."""
    proc = nox("--list")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = re.findall(r"^[*-] (\S+) -> ", proc.stdout, flags=re.M)
    assert ids, proc.stdout
    return nox_selected("-s", *ids)


@pytest.fixture(scope="module")
def pyproject_pythons() -> list[str]:
    """The X.Y versions in pyproject.toml's trove classifiers, read without nox."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [m.group(1) for c in project.get("classifiers", [])
             if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))]
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def test_pyproject_lists_every_supported_python(pyproject_pythons):
    assert pyproject_pythons == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == f">={pyproject_pythons[0]}"


def test_sessions_are_parametrized_over_the_pyproject_pythons(all_sessions, pyproject_pythons):
    by_name: dict[str, list] = {}
    for s in all_sessions:
        by_name.setdefault(s["name"], []).append(s["python"])
        assert s["description"], f"{s['session']} has no docstring (its nox -l description)"
    assert PARAMETRIZED | {"report", "lint"} <= set(by_name)
    for name in PARAMETRIZED:
        assert by_name[name] == pyproject_pythons, name
        assert {s["session"] for s in all_sessions if s["name"] == name} == {
            f"{name}-{py}" for py in pyproject_pythons}
    for name in set(by_name) - PARAMETRIZED:
        assert by_name[name] == [None], f"{name} should run on the interpreter nox runs on"


def test_force_python_selects_exactly_one_interpreter(pyproject_pythons):
    for py in pyproject_pythons[0], pyproject_pythons[-1]:
        selected = nox_selected("-s", *sorted(PARAMETRIZED), "--force-python", py)
        assert sorted(s["session"] for s in selected) == sorted(f"{n}-{py}" for n in PARAMETRIZED)
    one = nox_selected("-s", "tests-3.11")
    assert [(s["name"], s["python"]) for s in one] == [("tests", "3.11")]


@pytest.mark.parametrize("ci", [False, True], ids=["local", "CI"])
def test_missing_interpreter_is_skipped_locally_and_fails_on_ci(ci, tmp_path):
    # 3.99 exists nowhere: nox looks for it, does not download it, and never reaches an install
    proc = nox("-s", "tests", "--force-python", "3.99", "--envdir", str(tmp_path), ci=ci, timeout=180)
    out = proc.stdout + proc.stderr
    if ci:
        assert proc.returncode == 1, out
        assert re.search(r"Session tests-3\.99 failed: Python interpreter 3\.99 not found", out), out
    else:
        assert proc.returncode == 0, out
        assert re.search(r"Session tests-3\.99 skipped: Python interpreter 3\.99 not found", out), out
    assert "pip install" not in out


# --- the workflow ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wf() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(wf: dict):
    for job_id, job in wf["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def _triggers(wf: dict) -> dict:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as boolean true


def _commands(script: str) -> list[list[str]]:
    """Shell commands in a run block or script, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", script)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def _nox_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``nox`` / ``python -m nox``, or None when argv does not run nox."""
    if argv and Path(argv[0]).name in ("nox", "nox.exe"):
        return argv[1:]
    for i in range(len(argv) - 2):
        if Path(argv[i]).name.startswith("python") and argv[i + 1:i + 3] == ["-m", "nox"]:
            return argv[i + 3:]
    return None


def _sessions_and_python(args: list[str]) -> tuple[list[str], str | None]:
    sessions, python, taking = [], None, False
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in SESSION_FLAGS:
            taking = True
        elif arg in FORCE:
            python = args[i + 1]
            taking = False
        elif arg.startswith("-"):
            taking = False
        elif taking:
            sessions.append(arg)
    return sessions, python


def _nox_calls(wf: dict):
    """(job id, step, nox arguments) for every nox command in a run step."""
    for job_id, step in _steps(wf):
        for argv in _commands(step.get("run", "")):
            args = _nox_args(argv)
            if args is not None:
                yield job_id, step, args


def _resolve(value: str, step: dict, job: dict) -> str:
    """A shell variable in a run line resolved through the step's, then the job's, env."""
    var = re.fullmatch(r"\$\{?(\w+)\}?", value)
    if var is None:
        return value
    env = {**job.get("env", {}), **step.get("env", {})}
    assert var.group(1) in env, f"{value} is set in neither the step's nor the job's env"
    return str(env[var.group(1)])


def _setup_python(job: dict) -> str:
    setups = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
    assert len(setups) == 1
    return str(setups[0]["with"]["python-version"])


def _defaults(expr: str, key: str) -> list:
    found = re.search(rf"inputs\.{key} \|\| '(\[.*?\])'", expr)
    assert found, expr
    return yaml.safe_load(found.group(1))


def test_every_nox_session_called_exists(wf, all_sessions):
    known = {s["name"] for s in all_sessions} | {s["session"] for s in all_sessions}
    called = set()
    for job_id, _, args in _nox_calls(wf):
        sessions, _ = _sessions_and_python(args)
        assert sessions, f"{job_id}: nox without -s runs the default sessions"
        assert set(sessions) <= known, f"{job_id}: unknown nox sessions {set(sessions) - known}"
        called |= set(sessions)
    assert {"matrix", "report", "lint", "tests", "regression"} <= called


def test_parametrized_sessions_run_on_the_job_python_only(wf, all_sessions, pyproject_pythons):
    parametrized = {s["name"] for s in all_sessions if s["python"]}
    assert parametrized == PARAMETRIZED
    checked = 0
    for job_id, step, args in _nox_calls(wf):
        job = wf["jobs"][job_id]
        sessions, python = _sessions_and_python(args)
        if not set(sessions) & parametrized:
            continue
        checked += 1
        assert python is not None, f"{job_id}: nox -s {' '.join(sessions)} without --force-python"
        # the interpreter nox is forced to is the one actions/setup-python installed in this job
        resolved = _resolve(python, step, job)
        assert resolved == _setup_python(job), job_id
        if resolved == "${{ matrix.python }}":
            concrete = _defaults(job["strategy"]["matrix"]["python"], "python")
        else:
            assert re.fullmatch(r"3\.\d+", resolved), f"{job_id}: --force-python {resolved}"
            concrete = [resolved]
        for py in concrete:
            replayed = [py if a == python else a for a in args]
            cut = replayed.index("--") if "--" in replayed else len(replayed)
            selected = nox_selected(*replayed[:cut])
            assert selected, f"{job_id}: {replayed} selects nothing"
            assert {s["python"] for s in selected} == {py}, f"{job_id}: {selected}"
            assert sorted(s["name"] for s in selected) == sorted(sessions), f"{job_id}: {selected}"
    assert checked >= 2  # the run job (matrix) and the tests job (tests, regression)


def test_the_workflow_python_list_is_the_nox_list(wf, pyproject_pythons):
    job = wf["jobs"]["run"]
    assert _defaults(job["strategy"]["matrix"]["python"], "python") == pyproject_pythons
    dispatch = _triggers(wf)["workflow_dispatch"]["inputs"]["python"]["default"]
    assert json.loads(dispatch) == pyproject_pythons
    tests_python = _setup_python(wf["jobs"]["tests"])
    assert tests_python in pyproject_pythons


def test_matrix_covers_three_oses_pythons_and_two_torches(wf, pyproject_pythons):
    job = wf["jobs"]["run"]
    strategy = job["strategy"]
    assert strategy["fail-fast"] is False
    matrix = strategy["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "windows-latest", "macos-latest"}
    assert _defaults(matrix["python"], "python") == pyproject_pythons
    torches = _defaults(matrix["torch"], "torch")
    assert len(torches) >= 2 and "2.13.0" in torches
    assert job["env"]["HARNESS_TORCH"] == "torch==${{ matrix.torch }}"
    assert "https://download.pytorch.org/whl/cpu" in job["env"]["HARNESS_TORCH_INDEX_URL"]
    assert "matrix.os == 'ubuntu-latest'" in job["env"]["HARNESS_TORCH_INDEX_URL"]
    # slower macOS and Windows runners get every per-cell timeout doubled
    assert job["env"]["HARNESS_TIMEOUT_SCALE"] == "${{ matrix.os != 'ubuntu-latest' && '2' || '1' }}"
    calls = [args for job_id, _, args in _nox_calls(wf) if job_id == "run"]
    assert [_sessions_and_python(a)[0] for a in calls] == [["matrix"]]
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
    for job_id, step in _steps(wf):  # expressions reach run scripts through env, never inline
        assert "${{" not in step.get("run", ""), f"{job_id}: template expansion in {step['run']!r}"


def _tool(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


@pytest.mark.parametrize("command", [
    ["zizmor", "--offline", "--min-severity", "medium", str(WORKFLOW.parent)],
    ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
    ["actionlint", str(WORKFLOW)],
])
def test_offline_validators(command):
    exe = _tool(command[0])
    if exe is None:
        pytest.skip(f"{command[0]} is not installed (nox -s lint installs zizmor and check-jsonschema)")
    proc = subprocess.run([exe, *command[1:]], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- .ci/run --------------------------------------------------------------------------------------

def test_ci_run_runs_lint_tests_and_regression_on_its_own_python_only():
    commands = _commands(CI_RUN.read_text(encoding="utf-8"))
    calls = [args for argv in commands if (args := _nox_args(argv)) is not None]
    assert len(calls) == 1, calls
    args = calls[0]
    sessions, python = _sessions_and_python(args)
    assert sessions == ["lint", "tests", "regression"]
    assert python == "$PYTHON_VERSION", args
    assert "--error-on-missing-interpreters" in args
    assert args.index("--error-on-missing-interpreters") < args.index("-s")
    assign = [argv[0] for argv in commands if argv[0].startswith("PYTHON_VERSION=")]
    assert len(assign) == 1 and "sys.version_info[:2]" in assign[0], assign
    current = "{}.{}".format(*sys.version_info[:2])
    bash = shutil.which("bash")
    if bash is not None and os.name != "nt":
        # the assignment, run as .ci/run runs it, names the interpreter running the script
        line = next(ln for ln in CI_RUN.read_text(encoding="utf-8").splitlines()
                    if ln.startswith("PYTHON_VERSION="))
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        out = subprocess.run([bash, "-c", f'{line}\nprintf %s "$PYTHON_VERSION"'], capture_output=True,
                             text=True, timeout=60, env={**os.environ, "PATH": path})
        assert out.returncode == 0 and out.stdout == current, out.stdout + out.stderr
    selected = nox_selected(*[current if a == python else a for a in args])
    assert sorted(s["session"] for s in selected) == sorted(f"{n}-{current}" for n in sessions)


# --- tox ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tox() -> dict:
    return tomllib.loads((ROOT / "tox.toml").read_text(encoding="utf-8"))


def test_tox_mirrors_the_nox_sessions(tox, all_sessions, pyproject_pythons):
    nox_ids = {s["session"] for s in all_sessions}
    bases = tox["env_base"]
    assert set(bases) == {"run", "tests", "regression"}
    tox_envs = set(tox["env"])
    for name, base in bases.items():
        assert base["factors"] == pyproject_pythons, name
        tox_envs |= {f"{name}-{py}" for py in base["factors"]}
    assert tox_envs == {f"{n}-{py}" for n in ("run", "tests", "regression") for py in pyproject_pythons} | {"report"}
    assert tox_envs <= nox_ids | {"report"}  # the same names as the nox sessions
    assert "report" in {s["session"] for s in all_sessions}
    runs = [f"run-{py}" for py in pyproject_pythons]
    assert tox["labels"]["matrix"] == [*runs, "report"]
    assert tox["env_list"] == [*runs, "report"]
    assert tox["labels"]["tests"] == [f"tests-{py}" for py in pyproject_pythons]
    assert tox["labels"]["regression"] == [f"regression-{py}" for py in pyproject_pythons]
    assert tox["skip_missing_interpreters"] is True
    pin = {"replace": "env", "name": "HARNESS_TORCH", "default": "torch==2.13.0"}
    assert tox["env_run_base"]["deps"] == [pin]
    assert bases["tests"]["deps"][0] == pin and "nox" in bases["tests"]["deps"]
    nox_default = re.search(r'HARNESS_TORCH", "([^"]+)"', (ROOT / "noxfile.py").read_text(encoding="utf-8")).group(1)
    assert nox_default == "torch==2.13.0"  # the same pin in both drivers
    commands = {"run": bases["run"], "tests": bases["tests"], "regression": bases["regression"],
                "report": tox["env"]["report"]}
    for name, env in commands.items():
        argv = env["commands"][0]
        assert argv[-1] == {"replace": "posargs", "extend": True}, name
    assert commands["run"]["commands"][0][:2] == ["harness", "run"]
    assert commands["report"]["commands"][0][:2] == ["harness", "report"]
    assert commands["tests"]["commands"][0][:5] == ["pytest", "-n", "auto", "-m", "not catalogue"]
    assert commands["regression"]["commands"][0][:5] == ["pytest", "-n", "auto", "-m", "catalogue"]


def test_tox_reads_the_same_environments(tox, pyproject_pythons):
    exe = _tool("tox")
    if exe is None:
        pytest.skip("tox is not installed")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    have = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)\.(\d+)", version).groups())
    need = tuple(int(x) for x in re.search(r"tox>=([\d.]+)", str(tox["requires"])).group(1).split("."))
    if have < need:
        pytest.skip(f"tox {version.split()[0]} is older than {'.'.join(map(str, need))}")
    proc = subprocess.run([exe, "-c", str(ROOT / "tox.toml"), "config", "-k", "base_python",
                           "-e", ",".join(f"tests-{py}" for py in pyproject_pythons)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = dict(re.findall(r"^\[testenv:(\S+)\]\nbase_python = (\S+)$", proc.stdout, flags=re.M))
    assert got == {f"tests-{py}": py for py in pyproject_pythons}, proc.stdout
