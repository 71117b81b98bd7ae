"""Case files are named as their ids, and the harness names no case id.

A case's id is what every report, shard and command shows; its file is where a reader looks
for it. The rule: the file stem is the id with ``-`` written ``_`` (``fd-limit-many-tensors``
lives in ``fd_limit_many_tensors.py``). It holds for the built-in catalogue and for the test
catalogue ``tests/fixture_cases``, which mirrors it. ``tests/data/hostile_cases`` (deliberately
odd inputs) and the sample downstream project (a user's own catalogue, where the harness
imposes no naming) are not held to it.

What a case stands for is declared in its ``CASE`` (``matches``), so no module of the harness
needs to name a case: adding or renaming one never means editing ``harness/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.catalogue.discover import default_catalogue_dir, discover

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = {
    "cases": default_catalogue_dir(),
    "tests/fixture_cases": TESTS / "fixture_cases",
}


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_every_case_file_is_named_as_its_id(name):
    found = discover(CATALOGUES[name])
    assert found.errors == []
    assert found.cases
    misnamed = [
        f"{c.path.relative_to(ROOT)} holds {c.id!r}: name it {c.id.replace('-', '_')}.py"
        for c in found.cases
        if c.path.stem != c.id.replace("-", "_")
    ]
    assert misnamed == []


def test_the_harness_names_no_case_id():
    ids = sorted(c.id for c in discover().cases)
    assert len(ids) >= 71
    # An id as a whole word: not part of a longer id or name ("dataset-lock" in "dataset-lock-lazy").
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ids)) + r")(?![\w-])")
    named = []
    for path in sorted((ROOT / "harness").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            named.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert named == []
