"""The CASE schema (harness/schemas/case.schema.json) agrees with the outcome taxonomy and
accepts the whole built-in catalogue."""

from __future__ import annotations

from harness.catalogue.discover import discover
from harness.classify.outcomes import KINDS, METHODS, OUTCOMES
from harness.inspect.walker import LABELS
from harness.shard.format import schema


def test_the_schema_names_the_taxonomy():
    props = schema("case")["properties"]
    assert props["expect"]["required"] == list(METHODS)
    assert props["expect"]["additionalProperties"]["enum"] == list(OUTCOMES)
    assert props["expect_kind"]["additionalProperties"]["enum"] == list(KINDS)
    assert props["expect_kind"]["propertyNames"]["enum"] == list(METHODS)


def test_the_matches_schema_names_the_kinds_and_the_walker_s_labels():
    defs = schema("case")["$defs"]
    kind = defs["error_match"]["properties"]["kind"]["anyOf"]
    assert kind[0]["enum"] == kind[1]["items"]["enum"] == list(KINDS)
    what = defs["object_match"]["properties"]["is"]["anyOf"]
    assert what[0]["enum"] == what[1]["items"]["enum"] == list(LABELS)


def test_every_built_in_case_validates():
    found = discover()
    assert found.errors == []
    assert len(found.cases) >= 71
