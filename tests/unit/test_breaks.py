"""The packaged view of where each case breaks is what the committed shards give."""

from __future__ import annotations

import json
from pathlib import Path

from harness.report.breaks import breaks_data, breaks_file, describe_breaks

SHARDS = Path(__file__).resolve().parents[2] / "reports" / "shards"


def test_the_packaged_file_is_the_committed_shards_view():
    assert json.loads(breaks_file().read_text(encoding="utf-8")) == json.loads(json.dumps(breaks_data(SHARDS))), (
        "run: python -m harness.report.breaks")


def test_a_lambda_collate_fn_breaks_where_the_matrix_observed_it():
    data = json.loads(breaks_file().read_text(encoding="utf-8"))
    cells = {c["platform"]: c for c in data["cases"]["collate-fn-lambda"]}
    text = describe_breaks("collate-fn-lambda")
    for platform, title in (("windows", "Windows"), ("macos", "macOS"), ("linux-py>=3.14", "Linux, Python 3.14+")):
        c = cells[platform]
        assert f"{title} ({c['method']}: {c['outcome']}/{c['kind']}, {c['provenance']})" in text
    assert "Python 3.13 and older" not in text  # fork: it passes there
    assert describe_breaks("collate-fn-toplevel") == ""
