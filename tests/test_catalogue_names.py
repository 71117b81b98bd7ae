"""Case files are named as their ids.

A case's id is what every report, shard and command shows; its file is where a reader looks
for it. The rule: the file stem is the id with ``-`` written ``_`` (``fd-limit-many-tensors``
lives in ``fd_limit_many_tensors.py``). It holds for the built-in catalogue and for the test
catalogue ``tests/fixture_cases``, which mirrors it. ``tests/data/hostile_cases`` (deliberately
odd inputs) and the sample downstream project (a user's own catalogue, where the harness
imposes no naming) are not held to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._catalogue import default_catalogue_dir, discover

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = {
    "cases": default_catalogue_dir(),
    "tests/fixture_cases": Path(__file__).parent / "fixture_cases",
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
