"""The typed boundaries between the harness and its child processes: the cell request, the
cell's result statuses and the warm template's messages, each read back from JSON, and a
mismatch between the two sides reported as one line naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import FrozenInstanceError

import pytest

from harness.catalogue.discover import discover
from harness.child import status
from harness.child.jsonfields import MessageError
from harness.child.request import CellRequest
from harness.child.warm_protocol import (
    Exited,
    Forked,
    ForkFailed,
    ForkRequest,
    ProbedPath,
    Ready,
    read_answer,
)
from harness.run.plan import plan
from harness.shard.format import schema

REQUEST = CellRequest(
    module="cases.x.y",
    path="/cat/cases/x/y.py",
    root="/cat",
    script=True,
    method="spawn",
    num_workers=2,
    require_check=True,
    argv=("--flag", "v"),
    cwd="/work",
    stdin="interactive",
)


def _through_json(data: dict[str, object]) -> object:
    return json.loads(json.dumps(data))


def test_a_request_survives_its_json_form():
    assert CellRequest.from_json(_through_json(REQUEST.as_json())) == REQUEST
    with pytest.raises(FrozenInstanceError):
        REQUEST.method = "fork"  # the assignment under test


def test_the_request_of_every_catalogue_cell_reads_back():
    for spec in plan(discover().cases, ["in-process", "spawn"], 60):
        request = CellRequest.from_json(_through_json(spec.to_child()))
        assert (request.module, request.method, request.script) == (
            spec.case.module,
            spec.method,
            spec.case.script,
        )
        assert request.num_workers == (0 if spec.method == "in-process" else spec.num_workers)
        assert request.require_check  # a catalogue case never passes without a checked batch


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"case": "transform-lambda"}, "cell request: unknown field 'case'"),
        ({"method": None}, "cell request: field 'method' must be str, got NoneType"),
        ({"num_workers": "2"}, "cell request: field 'num_workers' must be int, got str"),
        ({"num_workers": True}, "cell request: field 'num_workers' must be int, got bool"),
        ({"argv": ["a", 1]}, "cell request: field 'argv' must hold only strings"),
        (
            {"stdin": "telepathy"},
            "cell request: field 'stdin' must be one of interactive, pipe or null, got 'telepathy'",
        ),
    ],
)
def test_a_request_that_does_not_fit_names_the_field(change, message):
    with pytest.raises(MessageError) as err:
        CellRequest.from_json({**REQUEST.as_json(), **change})
    assert str(err.value) == message


def test_a_request_without_a_required_field_names_it():
    data = REQUEST.as_json()
    del data["root"]
    with pytest.raises(MessageError, match=r"^cell request: missing field 'root'$"):
        CellRequest.from_json(data)
    with pytest.raises(MessageError, match=r"^cell request: expected a JSON object, got list$"):
        CellRequest.from_json([])


def test_optional_fields_take_their_defaults():
    data = {
        k: v
        for k, v in REQUEST.as_json().items()
        if k in ("module", "path", "root", "script", "method", "num_workers")
    }
    request = CellRequest.from_json(data)
    assert (request.require_check, request.argv, request.cwd, request.stdin) == (
        False,
        (),
        "",
        None,
    )


def test_the_cell_refuses_a_request_it_cannot_read_in_one_line(tmp_path):
    result = tmp_path / "result.json"
    bad = json.dumps({**REQUEST.as_json(), "timeout_s": 60})
    proc = subprocess.run(
        [sys.executable, "-m", "harness.child.cell", bad, str(result)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == "harness.child.cell: cell request: unknown field 'timeout_s'\n"
    assert not result.exists()


def test_the_statuses_are_those_the_shard_schema_allows():
    evidence = schema("shard")["$defs"]["result"]["properties"]["evidence"]["properties"]["status"]
    assert [s for s in evidence["enum"] if s is not None] == list(status.STATUSES)


ANSWERS = [
    Ready(pid=41, threads=1, import_s=1.25, pidfd=True),
    Forked(id=3, pid=42),
    ForkFailed(id=4, error="fork failed: [Errno 12] Cannot allocate memory"),
    Exited(id=3, returncode=-9),
]


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: a.kind)
def test_every_answer_of_the_template_reads_back_as_itself(answer):
    data = _through_json(answer.as_json())
    assert isinstance(data, dict) and data["kind"] == answer.kind
    assert read_answer(data) == answer


def test_a_fork_request_reads_back():
    req = ForkRequest(
        id=7,
        argv=("-m", "{}", "/tmp/r.json"),
        env={"PATH": "/bin"},
        cwd="/tmp/hc-1",
        stdout="/tmp/hc-1/out",
        stderr="/tmp/hc-1/err",
        sys_path=("\0cwd", "/lib/python3"),
    )
    data = _through_json(req.as_json())
    assert isinstance(data, dict) and data["op"] == "fork"
    assert ForkRequest.from_json(data) == req
    with pytest.raises(
        MessageError, match=r"^template request: field 'env' must map names to strings$"
    ):
        ForkRequest.from_json({**req.as_json(), "env": {"PATH": None}})
    with pytest.raises(
        MessageError, match=r"^template request: field 'op' must be 'fork', got 'kill'$"
    ):
        ForkRequest.from_json({**req.as_json(), "op": "kill"})


def test_a_message_of_another_shape_is_refused_not_guessed():
    # The old protocol's ready line had no kind: it is an error now, never taken for an answer.
    with pytest.raises(MessageError, match=r"^template message: unknown kind None"):
        read_answer({"ready": True, "pid": 1, "threads": 1, "import_s": 0.5, "pidfd": True})
    with pytest.raises(
        MessageError, match=r"^template message 'exited': missing field 'returncode'$"
    ):
        read_answer({"kind": "exited", "id": 1})
    with pytest.raises(MessageError, match=r"^template message 'forked': unknown field 'error'$"):
        read_answer({"kind": "forked", "id": 1, "pid": 2, "error": "x"})
    with pytest.raises(
        MessageError,
        match=r"^template message 'ready': field 'kind' must be 'ready', got 'exited'$",
    ):
        Ready.from_json({"kind": "exited", "pid": 1, "threads": 1, "import_s": 0.5, "pidfd": True})


def test_the_probe_prints_a_fresh_interpreters_path(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.child.warm_server", "--probe"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    probed = ProbedPath.from_json(json.loads(proc.stdout))
    assert probed.cwd == str(tmp_path)
    assert probed.path[0] == str(tmp_path)  # python -m puts the working directory first
