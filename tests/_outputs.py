"""Structural checks of generated report outputs (Markdown and HTML), for the escaping tests.

A GFM table row ends a cell at every ``|`` that is not backslash-escaped (a ``|`` preceded by
an even number of backslashes, none included); the cell count of every row must equal its
header's, or the row is cut or spills.
"""

from __future__ import annotations

import re

_UNESCAPED_PIPE = re.compile(r"(?<!\\)(?:\\\\)*\|")

#: Raw ``<`` the renderer itself writes into COMPATIBILITY.md (HTML blocks, a platform id).
OWN_ANGLE_BRACKETS = ("<details open>", "<details>", "</details>", "<summary>", "</summary>", "`linux-py<=3.13`")


def unescaped_pipes(line: str) -> int:
    """How many ``|`` in ``line`` end a GFM table cell."""
    return len(_UNESCAPED_PIPE.findall(line))


def table_problems(md: str) -> list[str]:
    """One line per table row whose cell count differs from its table's header row."""
    problems = []
    header: int | None = None
    for n, line in enumerate(md.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        pipes = unescaped_pipes(line)
        if header is None:
            header = pipes
        elif pipes != header:
            problems.append(f"line {n}: {pipes} cell separators, header has {header}: {line[:200]!r}")
    return problems


def foreign_angle_brackets(md: str) -> list[str]:
    """Lines of ``md`` holding a raw ``<`` that the renderer did not write itself."""
    out = []
    for line in md.splitlines():
        stripped = line
        for own in OWN_ANGLE_BRACKETS:
            stripped = stripped.replace(own, "")
        if "<" in stripped:
            out.append(line[:200])
    return out


#: Tags matrix.html writes itself; any other tag came from a shard.
HTML_TAGS = frozenset({"!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "code",
                       "ul", "li", "b", "i", "span", "table", "tr", "th", "td", "br", "small", "sup", "a", "details",
                       "summary", "ol", "img"})


def foreign_html_tags(page: str) -> set[str]:
    """Tag names in ``page`` that the HTML template does not write."""
    return {t.lower() for t in re.findall(r"<\s*/?\s*([!A-Za-z][A-Za-z0-9]*)", page)} - HTML_TAGS
