"""Generate the site's reference and catalogue pages at build time (mkdocs-gen-files).

Run by ``mkdocs build`` (``nox -s docs``) through the ``gen-files`` plugin of ``mkdocs.yml``:
the CLI reference from the argparse parser, one page per JSON Schema, the compatibility table
(the committed ``reports/COMPATIBILITY.md``) and one page per catalogue family, from the
committed shards. The functions that write them are in :mod:`harness.report.docs_pages`.
"""

from __future__ import annotations

import json
from pathlib import Path

import mkdocs_gen_files

from harness._cli import build_parser
from harness.catalogue.discover import discover
from harness.report.docs_pages import (
    GENERATED,
    cli_reference,
    families,
    family_page,
    schema_reference,
)
from harness.report.merge import load_shards, merge

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ("case", "shard", "matrix")


def _write(path: str, text: str) -> None:
    with mkdocs_gen_files.open(path, "w") as fh:
        fh.write(text)


_write("reference/cli.md", cli_reference(build_parser()))
for name in SCHEMAS:
    source = f"harness/schemas/{name}.schema.json"
    _write(f"reference/{name}-schema.md", schema_reference(json.loads((ROOT / source).read_text(encoding="utf-8")), source))

catalogue = discover()
shards, rejected = load_shards(ROOT / "reports" / "shards")
matrix = merge(shards, rejected)
table = (ROOT / "reports" / "COMPATIBILITY.md").read_text(encoding="utf-8")
# GitHub renders Markdown inside <details>; Python-Markdown does so where md_in_html is told to
table = table.replace("<details>\n", '<details markdown="1">\n')
links = "\n".join(f"- [`{family}`]({family}.md)" for family in families(catalogue))
_write("compatibility/index.md", GENERATED + table.replace("\n## ", f"\n## Families\n\nOne page per family, each case with its code, why it breaks, its row and the diff to its fix:\n\n{links}\n\n## ", 1))
for family in families(catalogue):
    _write(f"compatibility/{family}.md", family_page(family, catalogue, matrix))
_write("changelog.md", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
