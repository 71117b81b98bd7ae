"""One reader of ``CASE`` (harness/catalogue/literal.py) for discovery, the cell request's
``stdin`` and ``harness explain``: the dict literal and the ``dict(...)`` call read the same,
the last assignment counts, and anything else is a one-line error naming the file."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from harness.catalogue.discover import discover
from harness.catalogue.literal import case_statement, declared_stdin, read_case_file
from harness.errors import CatalogueError
from harness.inspect.explain import code_lines
from harness.run.plan import plan

EXPECT = '{"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"}'

LITERAL = f"""
CASE = {{
    "id": "t-form",
    "family": "t",
    "title": "declared as a literal",
    "why": "w",
    "script": True,
    "stdin": "pipe",
    "expect": {EXPECT},
    "expect_kind": {{"spawn": "pickle", "forkserver": "pickle"}},
    "expect_when": [{{"python": ">=3.14", "expect": {{"fork": "error"}}}}],
    "sources": ["https://example.org/form"],
}}
print("ran")
"""

# The same declaration with every dict that can be a call written as one (keys such as
# "in-process" are no identifiers, so ``expect`` stays a literal inside the call).
CALL = f"""
CASE = dict(
    id="t-form",
    family="t",
    title="declared as a literal",
    why="w",
    script=True,
    stdin="pipe",
    expect={EXPECT},
    expect_kind=dict(spawn="pickle", forkserver="pickle"),
    expect_when=[dict(python=">=3.14", expect=dict(fork="error"))],
    sources=["https://example.org/form"],
)
print("ran")
"""


def _file(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def test_the_literal_and_the_dict_call_read_the_same(tmp_path):
    _, literal = read_case_file(_file(tmp_path, "literal.py", LITERAL))
    _, call = read_case_file(_file(tmp_path, "call.py", CALL))
    assert literal == call
    assert literal is not None and literal["expect_when"] == [
        {"python": ">=3.14", "expect": {"fork": "error"}}
    ]


@pytest.mark.parametrize("source", [LITERAL, CALL], ids=["literal", "dict-call"])
def test_discovery_reads_both_forms_into_the_same_case(tmp_path, source):
    cat = tmp_path / "formcat"
    cat.mkdir()
    _file(cat, "form.py", source)
    found = discover(cat)
    assert found.errors == []
    (case,) = found.cases
    assert (case.id, case.script) == ("t-form", True)
    assert case.expect_kind == {"spawn": "pickle", "forkserver": "pickle"}
    # The ``expect_when`` entry applies on 3.14 only: fork's outcome changes, its kind is dropped.
    assert case.expectation((3, 14), "file_descriptor")[0]["fork"] == "error"
    assert case.expectation((3, 13), "file_descriptor")[0]["fork"] == "pass"


@pytest.mark.parametrize("source", [LITERAL, CALL], ids=["literal", "dict-call"])
def test_the_cell_request_carries_the_stdin_mode_of_both_forms(tmp_path, source):
    cat = tmp_path / "formcat"
    cat.mkdir()
    path = _file(cat, "form.py", source)
    assert declared_stdin(path) == "pipe"
    (spec,) = plan(discover(cat).cases, ["spawn"], 60)
    assert spec.to_child()["stdin"] == "pipe"


def test_the_stdin_modes_of_the_built_in_catalogue_reach_the_request():
    # As the case files declare them (cases/interactive_main/).
    cases = {c.id: c for c in discover().cases}
    for case_id, mode in (
        ("interactive-stdin-def", "interactive"),
        ("interactive-python-dash-pipe", "pipe"),
        ("transform-lambda", None),
    ):
        (spec,) = plan([cases[case_id]], ["spawn"], 60)
        assert spec.to_child()["stdin"] == mode, case_id


def test_a_file_without_a_readable_case_declares_no_stdin(tmp_path):
    # A user's script run by ``harness reproduce`` is no case module: no mode, no error.
    assert declared_stdin(_file(tmp_path, "plain.py", "print('hello')\n")) is None
    assert declared_stdin(_file(tmp_path, "broken.py", "def f(:\n")) is None
    assert declared_stdin(_file(tmp_path, "named.py", "BASE = {}\nCASE = BASE\n")) is None
    assert declared_stdin(_file(tmp_path, "other.py", 'CASE = {"stdin": "telepathy"}\n')) is None
    assert declared_stdin(tmp_path / "missing.py") is None


def test_the_last_assignment_is_the_declaration(tmp_path):
    path = _file(tmp_path, "twice.py", 'CASE = {"id": "first"}\nx = 1\nCASE = dict(id="second")\n')
    _, meta = read_case_file(path)
    assert meta == {"id": "second"}
    stmt = case_statement(ast.parse(path.read_text()))
    assert stmt is not None and stmt.lineno == 3


def test_an_annotated_declaration_is_read(tmp_path):
    _, meta = read_case_file(_file(tmp_path, "annotated.py", 'CASE: dict = dict(id="t-ann")\n'))
    assert meta == {"id": "t-ann"}
    _, meta = read_case_file(_file(tmp_path, "bare.py", "CASE: dict\n"))
    assert meta is None


@pytest.mark.parametrize(
    "value",
    [
        "dict(**BASE)",
        "make_case()",
        '{"id": NAME}',
        '{**BASE, "id": "x"}',
        'dict(id="x", why=f"{NAME}")',
        "dict({'id': 'x'})",
    ],
)
def test_anything_but_a_literal_is_one_line_naming_the_file(tmp_path, value):
    path = _file(tmp_path, "computed.py", f"CASE = {value}\n")
    with pytest.raises(CatalogueError) as err:
        read_case_file(path)
    assert str(err.value).startswith(f"{path}: CASE must be a literal dict")
    assert "\n" not in str(err.value)


def test_a_declaration_that_is_no_dict_is_named(tmp_path):
    path = _file(tmp_path, "listed.py", 'CASE = ["t-list"]\n')
    with pytest.raises(CatalogueError, match=r"listed\.py: CASE must be a dict, got list$"):
        read_case_file(path)


@pytest.mark.parametrize("source", [LITERAL, CALL], ids=["literal", "dict-call"])
def test_explain_folds_both_forms_out_of_the_code(source):
    lines = code_lines(textwrap.dedent(source).lstrip())
    assert lines == ["CASE = {...}  # metadata: harness list --json\n", 'print("ran")\n']
