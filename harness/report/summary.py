"""The compact Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``), kept under a byte limit.

GitHub documents a limit of 1 MiB per step under "Adding a job summary" (workflow commands).
The summary tries three forms, largest first, and returns the first that fits:

1. full: the compatibility view and every cell that contradicts its expectation;
2. short: only the rows with a cell that is not ``pass``;
3. counts: per-platform counts, then as many contradicting cells as fit.

Text is escaped as in :mod:`harness.report.markdown`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness._escape import code, markdown
from harness.classify.outcomes import SYMBOLS
from harness.report import JSONObject
from harness.report.markdown import compat_table, table
from harness.report.views import (
    EMULATED_MARK,
    LEGEND,
    PREDICTED_MARK,
    Notes,
    compat_model,
    contradiction,
    platform_title,
)

__all__ = ["SUMMARY_LIMIT_BYTES", "render_summary"]

#: GitHub's limit for one step's ``$GITHUB_STEP_SUMMARY`` is 1 MiB; stay a little under it.
SUMMARY_LIMIT_BYTES = 1024 * 1024 - 4096

_FOOT = [
    f"{EMULATED_MARK} cells are emulated with a platform profile on Linux; *italic* "
    f"{PREDICTED_MARK} cells are predicted from the same start method on another runner. "
    "The full report (Markdown, HTML, JSON, JUnit, heatmap) is in the report artifact.",
    "",
]


@dataclass(frozen=True)
class _Parts:
    """What every form of the summary shares."""

    head: list[str]  # title and rejected shards
    contradicting: int  # cells that contradict their expectation, a broken case's included
    items: list[str]  # one list item per broken case and per other contradicting cell
    notes: Notes  # the footnotes of the compatibility view
    limit_bytes: int

    def fits(self, lines: list[str]) -> bool:
        return len("\n".join(lines).encode("utf-8")) <= self.limit_bytes

    def contradictions(self) -> list[str]:
        if not self.contradicting:
            return ["No observed cell contradicts its expectation.", ""]
        return [
            f"**{self.contradicting} observed cell(s) contradict their expectation:**",
            "",
            *self.items,
            "",
        ]

    def footnotes(self, rows: list[JSONObject]) -> list[str]:
        """The notes that ``rows`` refer to, in the order they are first referred to."""
        keys = [
            k
            for row in rows
            for c in row["cells"]
            if c is not None
            for k in (c["warn"], c["disagree_note"])
            if k
        ]
        return [f"[^{k}]: {markdown(self.notes.items[k])}" for k in dict.fromkeys(keys)] + (
            [""] if keys else []
        )


def _parts(matrix: JSONObject, compat: JSONObject, notes: Notes, limit_bytes: int) -> _Parts:
    compat_rows = compat["rows"]
    head = [
        f"### DataLoader start-method compatibility ({len(compat_rows)} cases, "
        f"{len(matrix['runners'])} runner(s))",
        "",
    ]
    if matrix.get("rejected"):
        head += [f"**{len(matrix['rejected'])} shard(s) rejected:**", ""]
        head += [f"- {markdown(r)}" for r in matrix["rejected"]] + [""]
    mismatches = [r for r in matrix["results"] if not r.get("matches", True)]
    broken = sorted({(r["case"], r["runner"]) for r in mismatches if r.get("broken")})
    items = [
        f"- 🚧 {code(case)} on {code(runner)}: broken case, its in-process control did not pass"
        for case, runner in broken
    ]
    items += [
        f"- ‼ {code(r['case'])} [{r['method']}] on {code(r['runner'])}: "
        + markdown(f"{contradiction(r)}: {(r.get('root_cause') or r.get('message') or '')[:300]}")
        for r in mismatches
        if not r.get("broken")
    ]
    return _Parts(head, len(mismatches), items, notes, limit_bytes)


def _table_form(compat: JSONObject, parts: _Parts, short: bool) -> list[str]:
    """The full form, or (``short``) only the rows with a cell that is not ``pass``."""
    model = compat
    note: list[str] = []
    if short:
        model = {
            "platforms": compat["platforms"],
            "rows": [
                r
                for r in compat["rows"]
                if any(c is not None and c["outcome"] != "pass" for c in r["cells"])
            ],
        }
        note = ["Short form: only cases with a cell that is not ✅ pass.", ""]
    return (
        parts.head
        + note
        + compat_table(model, with_fix=False)
        + [""]
        + parts.contradictions()
        + parts.footnotes(model["rows"])
        + _FOOT
    )


def _counts_table(compat: JSONObject) -> list[str]:
    head = ["Platform (default)", "observed", "emulated", "predicted"] + [
        SYMBOLS[o] + " " + o for o, _ in LEGEND
    ]
    rows = []
    for i, plat in enumerate(compat["platforms"]):
        cells = [row["cells"][i] for row in compat["rows"] if row["cells"][i] is not None]
        prov = Counter(c["provenance"] for c in cells)
        outcomes = Counter(c["outcome"] for c in cells)
        rows.append(
            [
                f"{platform_title(plat)} ({plat['default_method']})",
                str(prov["observed"]),
                str(prov["emulated"]),
                str(prov["predicted"]),
            ]
            + [str(outcomes[o]) for o, _ in LEGEND]
        )
    return table(head, rows)


def _counts_form(compat: JSONObject, parts: _Parts) -> list[str]:
    """Per-platform counts, then as many contradicting cells as fit, then ``- …``."""
    counts = (
        parts.head + ["Short form: counts per platform only.", ""] + _counts_table(compat) + [""]
    )
    if not parts.fits(counts + _FOOT):
        raise ValueError(
            f"summary limit {parts.limit_bytes} bytes is too small for the counts table"
        )
    lines = list(counts)
    if parts.contradicting:
        lines += [
            f"**{parts.contradicting} observed cell(s) contradict their expectation** (first ones):",
            "",
        ]
        for item in parts.items:
            if not parts.fits(lines + [item, "- …", ""] + _FOOT):
                lines.append("- …")
                break
            lines.append(item)
        lines.append("")
    return lines + _FOOT if parts.fits(lines + _FOOT) else counts + _FOOT


def render_summary(matrix: JSONObject, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """Compact Markdown for a CI job summary, at most ``limit_bytes`` in UTF-8.

    Args:
        matrix: the merged matrix document.
        limit_bytes: the budget; the full form when it fits, else the short form, else the
            counts (see the module's docstring).

    Raises:
        ValueError: ``limit_bytes`` is too small for even the counts.
    """
    notes = Notes()
    compat = compat_model(matrix, notes)
    parts = _parts(matrix, compat, notes, limit_bytes)
    for short in (False, True):
        lines = _table_form(compat, parts, short)
        if parts.fits(lines):
            return "\n".join(lines)
    return "\n".join(_counts_form(compat, parts))
