"""Property: any string in any free-text field of a valid shard, and any JSON value in an extra
key, goes through shard write, ``read_shard`` and ``harness report`` intact.

Checked for every example: no exception; every record appears in ``matrix.json`` exactly; every
COMPATIBILITY.md table row has as many cell separators as its header, and no raw ``<`` came from
the input; terminal lines encode as UTF-8 and hold no control character; matrix.html has only
its own tags; junit.xml parses; the exit code is 0 (1 when a record contradicts its expectation).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import xml.etree.ElementTree as ET

from _outputs import foreign_angle_brackets, foreign_html_tags, table_problems
from _shards import linux_shard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.classify.outcomes import METHODS
from harness.report.pipeline import write_report
from harness.shard.format import read_shard, write_json_atomic

OUTCOMES = ["pass", "error", "hang", "crash", "wrong", "unsupported", "skipped"]
NASTY = ["|", "`", "\\", "<img src=x onerror=alert(1)>", "\udcfe", "\ud800", "\x1b[31m", "\x00", "\r\n", "\n\n",
         "__main__", "_", "*", "[x](javascript:alert(1))", "&amp;", "&#60;", "# ", "- ", "1. ", "\u202e", "\u2028",
         "</details>", "<!--", "$\\frac{$", "```", "[^w1]", "\t", "\x85", " "]

#: Any string: every code point (surrogates and control characters included), with the
#: sequences that have broken renderers before mixed in.
texts = st.lists(st.one_of(st.text(st.characters(exclude_categories=()), max_size=12), st.sampled_from(NASTY)),
                 max_size=5).map("".join)
ids = texts.filter(lambda s: 0 < len(s) <= 200)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)

_TEMPLATE = linux_shard()


@st.composite
def shards(draw) -> dict:
    """A valid shard of 1-4 records whose free-text fields and extra keys are arbitrary."""
    runner = dict(_TEMPLATE["runner"], id=draw(ids), arch=draw(texts), torch=draw(texts),
                  harness_version=draw(texts), git_commit=draw(st.none() | texts), started_utc=draw(texts),
                  python_implementation=draw(texts), x_extra=draw(json_values))
    cells = draw(st.lists(st.tuples(texts, st.sampled_from(METHODS)), min_size=1, max_size=4, unique=True))
    results, cases = [], {}
    for case, method in cells:
        outcome = draw(st.sampled_from(OUTCOMES))
        results.append({
            "runner": runner["id"], "case": case, "family": draw(texts), "method": method,
            "outcome": outcome, "kind": draw(st.none() | texts), "message": draw(texts),
            "root_cause": draw(texts), "duration_s": draw(st.none() | st.floats(0, 1e6)),
            "first_batch_s": draw(st.none() | st.floats(0, 1e6)), "wall_s": draw(st.none() | st.floats(0, 1e6)),
            "parent_peak_rss_bytes": draw(st.none() | st.integers(0, 2**40)),
            "worker_peak_rss_bytes": draw(st.none() | st.integers(0, 2**40)),
            "worker_peak_uss_bytes": draw(st.none() | st.integers(0, 2**40)),
            "workers_seen": draw(st.none() | st.integers(0, 8)),
            "warnings": draw(st.lists(texts, max_size=2)), "expected": draw(st.sampled_from(OUTCOMES)),
            "expected_kind": draw(st.none() | texts), "matches": draw(st.booleans()),
            "broken": draw(st.booleans()), "exit_code": draw(st.none() | st.integers(-64, 255)),
            "stderr_tail": draw(texts), "x_extra": draw(json_values),
        })
        cases.setdefault(case, {"family": draw(texts), "title": draw(texts), "why": draw(texts),
                                "fix": draw(st.none() | texts), "expect": {method: outcome},
                                "sources": draw(st.lists(texts, max_size=2)), "x_extra": draw(json_values)})
    return {"schema_version": 1, "complete": draw(st.booleans()), "runner": runner, "cases": cases,
            "results": results, "x_extra": draw(json_values)}


def _as_json(value):
    """``value`` as JSON can hold it: a high surrogate followed by a low one is one code point
    in JSON (``"\\ud800\\udcfe"``), so such a pair of Python characters comes back joined. A
    lone surrogate (what :func:`os.fsdecode` makes of a non-UTF-8 byte) round-trips as it is."""
    return json.loads(json.dumps(value))


def _canon(records: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in records)


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shard=shards())
def test_any_text_survives_write_read_and_report(shard, tmp_path_factory):
    root = tmp_path_factory.mktemp("prop")
    path = root / "shards" / "shard.json"
    write_json_atomic(path, shard)
    shard = _as_json(shard)
    assert read_shard(path) == shard

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = write_report(root / "shards", root / "out", summary=root / "summary.md")
        stdout.flush()
        stderr.flush()
    terminal = stdout.buffer.getvalue().decode("utf-8") + stderr.buffer.getvalue().decode("utf-8")
    assert code == (0 if all(r["matches"] for r in shard["results"]) else 1), terminal
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", terminal), terminal

    out = root / "out"
    matrix = json.loads((out / "matrix.json").read_text(encoding="ascii"),
                        parse_constant=lambda name: (_ for _ in ()).throw(AssertionError(name)))
    assert _canon(matrix["results"]) == _canon(shard["results"])
    assert matrix["runners"][0]["id"] == shard["runner"]["id"]
    for md in ((out / "COMPATIBILITY.md").read_text(encoding="utf-8"), (root / "summary.md").read_text(encoding="utf-8")):
        assert table_problems(md) == []
        assert foreign_angle_brackets(md) == []
    html = (out / "matrix.html").read_text(encoding="utf-8")
    assert foreign_html_tags(html) == set()
    ET.parse(out / "junit.xml")


def test_every_nasty_sequence_at_once_round_trips(tmp_path):
    """The sequences the strategy mixes in, all in one shard: written, read back, reported."""
    shard = json.loads(json.dumps(_TEMPLATE))
    shard["runner"]["torch"] = shard["results"][0]["message"] = "".join(NASTY)
    write_json_atomic(tmp_path / "shards" / "s.json", shard)
    assert read_shard(tmp_path / "shards" / "s.json") == shard
    with contextlib.redirect_stdout(io.StringIO()):
        assert write_report(tmp_path / "shards", tmp_path / "out") == 0
    assert table_problems((tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")) == []
