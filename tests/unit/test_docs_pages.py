"""The generated pages of the documentation site (harness.report.docs_pages, docs/gen_pages.py).

Expected values come from elsewhere: each subcommand's real ``--help`` output, the case files
on disk, ``harness explain``'s diff, the committed ``reports/COMPATIBILITY.md`` and the JSON
Schemas, so a page that drifts from what the tool does fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness._cli import build_parser
from harness.catalogue.discover import discover
from harness.report.docs_pages import cli_reference, families, family_page, schema_reference
from harness.report.merge import load_shards, merge

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COMMANDS = ["run", "report", "list", "explain", "diagnose", "reproduce", "classify", "lint"]


@pytest.fixture(scope="module")
def matrix():
    shards, rejected = load_shards(ROOT / "reports" / "shards")
    return merge(shards, rejected)


@pytest.fixture(scope="module")
def catalogue():
    return discover()


def _section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_cli_reference_names_every_option_that_help_shows(command):
    page = cli_reference(build_parser())
    section = _section(page, f"## harness {command}")
    shown = subprocess.run([sys.executable, "-m", "harness", command, "--help"], capture_output=True,
                           text=True, timeout=60, cwd=ROOT).stdout
    # the option column of --help: lines that start with an option (the help text wraps below)
    heads = [ln for ln in shown.split("options:", 1)[-1].splitlines() if re.match(r"  -", ln)]
    options = {o for ln in heads for o in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", ln.split("  ", 2)[1])}
    options -= {"-h", "--help"}
    assert options, shown
    missing = sorted(o for o in options if f"`{o}`" not in section)
    assert missing == [], f"harness {command} --help shows {missing}, the reference does not"


def test_every_case_of_a_family_has_its_code_why_row_and_fix(catalogue, matrix):
    report = (ROOT / "reports" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    default = _section(report, "## What you get by default")
    default_rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([\w-]+)` \|.*$", default, re.M)}
    for family in families(catalogue):
        page = family_page(family, catalogue, matrix)
        for case in (c for c in catalogue.cases if c.family == family):
            section = page.split(f"## `{case.id}`\n", 1)[1].split('\n<a id="', 1)[0]
            if not case.notebook:
                assert case.path.read_text(encoding="utf-8").rstrip() in section, case.id
            assert " ".join(case.why.split()[:6]) in " ".join(section.split()), case.id
            # its row of the default view is the committed report's row, without the Fix column
            row = default_rows[case.id]
            cells = [c.strip() for c in row.strip("|").split("|")][1:-1]
            page_row = next(ln for ln in section.splitlines() if ln.startswith(f"| `{case.id}` |"))
            page_cells = [re.sub(r"\[\^[\w-]+\]", "", c).strip() for c in page_row.strip("|").split("|")][1:]
            assert page_cells == [re.sub(r"\[\^\w+\]", "", c).strip() for c in cells], case.id


def test_the_fix_diff_is_the_one_harness_explain_prints(catalogue, matrix):
    case = catalogue.by_id()["transform-lambda"]
    page = family_page(case.family, catalogue, matrix)
    section = page.split("## `transform-lambda`\n", 1)[1].split('\n<a id="', 1)[0]
    explained = subprocess.run([sys.executable, "-m", "harness", "explain", "transform-lambda"],
                               capture_output=True, text=True, timeout=60, cwd=ROOT).stdout
    diff = [ln for ln in explained.split("\nFix\n", 1)[1].splitlines() if ln.startswith(("---", "+++", "@@", "-", "+"))]
    shown = re.search(r"```diff\n(.*?)```", section, re.S).group(1)
    assert diff and [ln for ln in shown.splitlines() if ln.startswith(("---", "+++", "@@", "-", "+"))] == diff


@pytest.mark.parametrize("name", ["case", "shard", "matrix"])
def test_the_schema_reference_lists_every_field(name):
    source = f"harness/schemas/{name}.schema.json"
    schema = json.loads((ROOT / source).read_text(encoding="utf-8"))
    page = schema_reference(schema, source)
    objects = [schema, *(d for d in schema.get("$defs", {}).values() if isinstance(d, dict) and d.get("type") == "object")]
    fields = {f for obj in objects for f in obj.get("properties", {})}
    assert fields
    assert sorted(f for f in fields if f"| `{f}` |" not in page) == []


def _nav_pages(nav) -> list[str]:
    out = []
    for item in nav:
        if isinstance(item, str):
            out.append(item)
        else:
            for value in item.values():
                out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def test_the_site_navigation_has_every_page_and_every_family(catalogue):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    generated = {"reference/cli.md", "reference/case-schema.md", "reference/shard-schema.md",
                 "reference/matrix-schema.md", "compatibility/index.md", "changelog.md"}
    generated |= {f"compatibility/{family}.md" for family in families(catalogue)}
    assert nav == written | generated


def test_every_relative_link_of_the_readme_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert links
    assert [link for link in links if "://" not in link and not (ROOT / link).exists()] == []


def test_the_readme_is_for_the_first_hour():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
