"""``outcome_label``: the one spelling of an outcome with its kind, shared by every output.

The expected strings are what the outputs showed before they shared the function: the README's
excerpt of ``COMPATIBILITY.md`` (``❌ pickle``, ``⏳ hang``, ``✅``), the HTML page's words
(``error: pickle``), progress lines and ``harness reproduce`` (``error (pickle)``), JUnit,
``harness explain`` and the report's MISMATCH lines (``error/pickle``).
"""

from __future__ import annotations

import pytest
from _shards import linux_shard

from harness._progress import _line
from harness.classify.outcomes import outcome_label
from harness.report.views import cell_words, contradiction, outcome_text


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("{outcome}/{kind}", "error/pickle"),
        ("{outcome} ({kind})", "error (pickle)"),
        ("{outcome}: {kind}", "error: pickle"),
    ],
)
def test_each_spelling_in_use(form, expected):
    assert outcome_label("error", "pickle", form) == expected


def test_the_default_spelling_is_the_slash():
    assert outcome_label("error", "main-attribute") == "error/main-attribute"


@pytest.mark.parametrize("kind", [None, ""])
def test_without_a_kind_the_outcome_stands_alone(kind):
    assert outcome_label("hang", kind) == "hang"
    assert outcome_label("hang", kind, "{outcome} ({kind})") == "hang"


def test_a_kind_from_a_shard_is_text_not_a_template():
    assert outcome_label("error", "{outcome}{kind!r}") == "error/{outcome}{kind!r}"


def test_a_real_spawn_pickling_error_reads_the_same_in_every_output():
    rec = next(
        r
        for r in linux_shard()["results"]
        if (r["case"], r["method"]) == ("transform-lambda", "spawn")
    )
    assert (rec["outcome"], rec["kind"]) == ("error", "pickle")
    assert outcome_text(rec["outcome"], rec["kind"]) == "❌ pickle"
    assert cell_words(rec["outcome"], rec["kind"]) == "error: pickle"
    assert _line(rec).startswith("transform-lambda [spawn]: error (pickle) ")
    assert (
        contradiction(dict(rec, expected="pass", expected_kind=None))
        == "expected pass, observed error/pickle"
    )


def test_table_cells_name_the_kind_of_an_error_only():
    assert outcome_text("hang", "pickle") == "⏳ hang"
    assert outcome_text("pass", None) == "✅"
    assert cell_words("hang", "pickle") == "hang"
    assert cell_words("error", "pickle", broken=True) == "broken case"
