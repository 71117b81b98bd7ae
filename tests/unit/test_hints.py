"""How ``harness.inspect.hints`` picks the case a finding or an error stands for.

The rules are the documented ones (module docstring of :mod:`harness.inspect.hints`, README
"How to add a case"); each test writes a small catalogue of its own, with the declarations it
needs, and matches real walker findings (``find_problems`` on real objects) or hand-made
findings where the rule is about a field alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from harness.catalogue.discover import discover
from harness.inspect import hints
from harness.inspect.walker import Problem, find_problems

BAD = {"in-process": "pass", "fork": "pass", "spawn": "error", "forkserver": "error"}
GOOD = dict.fromkeys(BAD, "pass")


def write_case(folder: Path, case_id: str, matches: dict, expect: dict = BAD) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").touch()
    meta = {
        "id": case_id,
        "family": "hints",
        "title": f"the {case_id} case",
        "why": "a test",
        "expect": expect,
        "sources": ["tests/unit/test_hints.py"],
        "matches": matches,
    }
    (folder / f"{case_id.replace('-', '_')}.py").write_text(
        f"CASE = {meta!r}\n\n\ndef run(cell):\n    pass\n"
    )


def only(folder: Path) -> hints.Hints:
    """The hints of the catalogue in ``folder`` alone."""
    return hints.Hints.from_cases(discover(folder).cases)


def named(h: hints.Hints, p: Problem) -> str | None:
    case = h.case_for_problem(p)
    return case.id if case else None


class Holder:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Made:
    def __init__(self):
        self.fn = lambda x: x


@pytest.fixture
def zip_problems(tmp_path) -> dict[str, Problem]:
    """The walker's findings for a dataset holding an open ZipFile and a bare lock, by path."""
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("x", "y")
    with zipfile.ZipFile(archive) as opened:
        found = find_problems({"dataset": Holder(archive=opened, lock=threading.RLock())})
    return {p.path: p for p in found}


def test_where_an_object_sits_says_more_than_what_it_is(tmp_path, zip_problems):
    write_case(
        tmp_path / "hint_cases",
        "holds-a-lock",
        {"objects": [{"type": ["_thread.RLock", "_thread.lock"]}]},
    )
    write_case(tmp_path / "hint_cases", "holds-a-zip", {"objects": [{"within": "zipfile.ZipFile"}]})
    write_case(tmp_path / "hint_cases", "holds-a-file", {"objects": [{"type": "_io._IOBase"}]})
    h = only(tmp_path / "hint_cases")
    assert {path: named(h, p) for path, p in zip_problems.items()} == {
        "dataset.archive.fp": "holds-a-zip",  # a BufferedReader: _io._IOBase is one of its bases
        "dataset.archive._lock": "holds-a-zip",
        "dataset.lock": "holds-a-lock",
    }


def test_a_path_says_more_than_a_name_and_a_longer_pattern_more_than_a_shorter(tmp_path):
    write_case(tmp_path / "hint_cases", "any-lambda", {"objects": [{"is": "lambda"}]})
    write_case(
        tmp_path / "hint_cases",
        "local-lambda",
        {"objects": [{"is": "lambda", "name": "*.<locals>.*"}]},
    )
    write_case(
        tmp_path / "hint_cases",
        "init-lambda",
        {"objects": [{"is": "lambda", "name": "*.__init__.<locals>.*"}]},
    )
    write_case(
        tmp_path / "hint_cases",
        "collate-lambda",
        {"objects": [{"is": "lambda", "path": "collate_fn*"}]},
    )
    h = only(tmp_path / "hint_cases")
    found = find_problems({"dataset": Holder(a=lambda x: x, b=Made()), "collate_fn": Made().fn})
    assert {p.path: named(h, p) for p in found} == {
        "dataset.a": "local-lambda",
        "dataset.b.fn": "init-lambda",
        "collate_fn": "collate-lambda",
    }
    assert named(h, find_problems({"dataset": Holder(a=MODULE_LAMBDA)})[0]) == "any-lambda"


MODULE_LAMBDA = lambda x: x  # noqa: E731 - a module-level lambda, qualname '<lambda>'


def test_a_name_is_only_a_function_s_or_a_class_s(tmp_path, zip_problems):
    write_case(tmp_path / "hint_cases", "anything-named", {"objects": [{"name": "*"}]})
    h = only(tmp_path / "hint_cases")
    assert named(h, zip_problems["dataset.lock"]) is None
    assert named(h, find_problems({"dataset": Holder(f=lambda: 0)})[0]) == "anything-named"


def _problem(**fields) -> Problem:
    base = {
        "path": "dataset.x",
        "type": "mod.Thing",
        "message": "m",
        "exc_type": "TypeError",
        "label": "other",
        "root": "dataset",
        "classes": ("mod.Thing",),
    }
    return Problem(**{**base, **fields})


def test_the_first_batch_and_user_code_that_raised_match_only_when_asked_for(tmp_path):
    write_case(tmp_path / "hint_cases", "a-thing", {"objects": [{"type": "mod.Thing"}]})
    write_case(
        tmp_path / "hint_cases",
        "a-thing-coming-back",
        {"objects": [{"type": "mod.Thing", "path": "batch*"}]},
    )
    write_case(
        tmp_path / "hint_cases",
        "a-thing-that-raised",
        {"objects": [{"type": "mod.Thing", "is": "raised"}]},
    )
    h = only(tmp_path / "hint_cases")
    assert named(h, _problem()) == "a-thing"
    assert named(h, _problem(path="batch.x", root="batch")) == "a-thing-coming-back"
    assert named(h, _problem(label="raised")) == "a-thing-that-raised"
    assert named(h, _problem(label="unpickle")) is None


def test_only_bad_cases_are_served(tmp_path):
    write_case(
        tmp_path / "hint_cases", "good-thing", {"objects": [{"type": "mod.Thing"}]}, expect=GOOD
    )
    h = only(tmp_path / "hint_cases")
    assert named(h, _problem()) is None
    assert "good-thing" in h.cases  # still there for fix titles


def test_error_text_is_a_regular_expression_and_says_more_than_the_kind(tmp_path):
    write_case(tmp_path / "hint_cases", "any-pickle", {"errors": [{"kind": "pickle"}]})
    write_case(
        tmp_path / "hint_cases",
        "a-class",
        {"errors": [{"kind": "pickle", "text": r"local object '[^']*\.[A-Z]\w*'"}]},
    )
    h = only(tmp_path / "hint_cases")
    text = "AttributeError: Can't pickle local object 'make_loader.<locals>.Local'"
    assert h.case_for_error("pickle", text).id == "a-class"
    assert h.case_for_error("pickle", text.replace("Local", "local")).id == "any-pickle"
    assert h.case_for_error("bootstrap", text) is None
    assert h.errors == ()


def test_a_project_catalogue_in_pyproject_comes_before_the_built_in_one(tmp_path, monkeypatch):
    write_case(tmp_path / "hint_cases", "our-bootstrap", {"errors": [{"kind": "bootstrap"}]})
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\ncatalogue = ["hint_cases"]\n')
    monkeypatch.chdir(tmp_path)
    h = hints.catalogue_hints()
    assert (
        h.case_for_error("bootstrap", "RuntimeError: ... bootstrapping phase.").id
        == "our-bootstrap"
    )
    assert (
        h.case_for_error("daemonic", "").id == "loader-in-daemonic-pool"
    )  # the built-in catalogue still serves
    assert hints.catalogue_hints() is h  # read once per process


def test_an_unreadable_project_catalogue_leaves_the_built_in_one(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\ncatalogue = "no such folder"\n')
    monkeypatch.chdir(tmp_path)
    assert hints.catalogue_hints().case_for_error("daemonic", "").id == "loader-in-daemonic-pool"
    (tmp_path / "pyproject.toml").write_text("[tool.harness\n")
    assert hints.catalogue_hints().case_for_error("daemonic", "").id == "loader-in-daemonic-pool"


def test_reading_the_hints_imports_neither_torch_nor_a_case():
    code = (
        "import json, sys\nfrom harness.inspect import hints\nh = hints.catalogue_hints()\n"
        "print(json.dumps([len(h.objects), 'torch' in sys.modules, sorted(m for m in sys.modules "
        "if m.startswith('cases.'))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    declared, torch_imported, cases_imported = json.loads(out.stdout)
    assert declared >= 20
    assert (torch_imported, cases_imported) == (False, [])


def test_an_error_pattern_that_is_not_a_regular_expression_is_a_broken_case(tmp_path):
    # The schema cannot tell; silently dropping the entry would send its errors to another case.
    folder = tmp_path / "mycases"
    write_case(folder, "bad-regex", {"errors": [{"text": "cannot pickle ([unclosed"}]})
    write_case(folder, "good-regex", {"errors": [{"text": "cannot pickle 'x'"}]})
    cat = discover(folder)
    assert [c.id for c in cat.cases] == ["good-regex"]
    assert len(cat.errors) == 1
    line = cat.errors[0]
    assert line == (f"{folder.resolve() / 'bad_regex.py'}: CASE['matches']['errors'][0]['text']: "
                    "'cannot pickle ([unclosed' is not a regular expression: unterminated character set "
                    "at position 15")
    assert "\n" not in line
