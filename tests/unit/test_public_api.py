"""The public surface, pinned: what ``harness``, ``harness.case`` and ``harness.errors`` export,
and the two entry points an installation registers (the ``harness`` console script and the
pytest plugin). A change here is a change users see: make it on purpose, with the README."""

from __future__ import annotations

import re
from importlib.metadata import distribution

import harness
import harness.case
import harness.errors


def test_harness_exports():
    assert sorted(harness.__all__) == ["__version__", "assert_spawn_safe"]
    assert callable(harness.assert_spawn_safe)


def test_case_api_exports():
    assert sorted(harness.case.__all__) == [
        "AddOne",
        "Cell",
        "Skip",
        "Squares",
        "Wrong",
        "add_one",
        "current_cell",
        "squares",
    ]


def test_error_tree_exports_and_shape():
    assert sorted(harness.errors.__all__) == [
        "CatalogueError",
        "ConfigError",
        "HarnessError",
        "Interrupted",
        "NotAShard",
        "SaveError",
        "ShardError",
        "TargetError",
        "TemplateError",
        "UsageError",
    ]
    e = harness.errors
    parent = {name: getattr(e, name).__mro__[1].__name__ for name in e.__all__}
    assert parent == {
        "HarnessError": "Exception",
        "UsageError": "HarnessError",
        "CatalogueError": "HarnessError",
        "ConfigError": "CatalogueError",
        "ShardError": "HarnessError",
        "NotAShard": "ShardError",
        "SaveError": "HarnessError",
        "TemplateError": "HarnessError",
        "TargetError": "HarnessError",
        "Interrupted": "HarnessError",
    }
    # Code that caught the types these replaced keeps working.
    assert issubclass(e.UsageError, ValueError) and issubclass(e.TemplateError, RuntimeError)
    assert {getattr(e, name).exit_code for name in e.__all__ if name != "Interrupted"} == {2}
    assert e.Interrupted.exit_code == 130


def test_every_error_the_tree_draws_is_exported():
    tree = harness.errors.__doc__.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    drawn = re.findall(r"^    (?:[│ ]   )*(?:[├└]── )?([A-Z]\w+)", tree, re.M)
    assert sorted(drawn) == sorted(harness.errors.__all__)


def test_entry_points():
    eps = {
        (ep.group, ep.name): ep.value
        for ep in distribution("dataloader-start-harness").entry_points
    }
    assert eps == {
        ("console_scripts", "harness"): "harness._cli:main",
        ("pytest11", "harness"): "harness._pytest_plugin",
    }
