"""The committed reports/COMPATIBILITY.md: its case list matches the catalogue, and columns with no
runner of their own are marked predicted in every cell."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness._catalogue import discover

REPORT = Path(__file__).resolve().parent.parent / "reports" / "COMPATIBILITY.md"


@pytest.fixture(scope="module")
def default_view() -> tuple[list[str], list[list[str]]]:
    """The platform lines and the table rows of the report's "What you get by default" section."""
    if not REPORT.exists():
        pytest.fail(f"{REPORT} is missing: run 'nox -s matrix' (or harness run + harness report) and commit it")
    text = REPORT.read_text(encoding="utf-8")
    assert "\n## What you get by default\n" in text, "the report does not lead with the default view"
    section = text.split("\n## What you get by default\n", 1)[1].split("\n## ", 1)[0]
    platforms = [ln for ln in section.splitlines() if ln.startswith("- **")]
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]]
            for ln in section.splitlines() if ln.startswith("| `")]
    return platforms, rows


def test_case_list_is_not_stale(default_view):
    _, rows = default_view
    in_report = [re.fullmatch(r"`([^`]+)`", row[0]).group(1) for row in rows]
    assert len(in_report) == len(set(in_report)), "a case appears twice"
    catalogue = {case.id for case in discover().cases}
    missing = sorted(catalogue - set(in_report))
    extra = sorted(set(in_report) - catalogue)
    assert not missing and not extra, (
        f"reports/COMPATIBILITY.md is stale: missing {missing}, no longer in the catalogue {extra}; "
        "regenerate it with 'nox -s matrix'")


def test_columns_without_a_runner_are_predicted_in_every_cell(default_view):
    platforms, rows = default_view
    assert len(platforms) == 4
    for col, line in enumerate(platforms, start=1):
        cells = [row[col] for row in rows]
        if "no runner" in line:
            assert all(c.startswith("*") and "†" in c for c in cells), line
    observed = [i for i, line in enumerate(platforms, start=1) if "observed on" in line]
    assert observed, "no column was observed on a real runner"
    assert any("†" not in row[i] for row in rows for i in observed)
