"""``COMPATIBILITY.md``: the matrix as a Markdown document.

Sections, in order: the compatibility view (what a user gets by default on each platform), the
cost of each start method (and the memory cases cell by cell), every start method per runner,
fixes, rejected shards, and the footnotes (hazard warnings of passing cells, runners that
disagree). The rows and cells come from :mod:`harness.report.views`.

Every string of a shard is untrusted text. Each one passes through :mod:`harness._escape`
(:func:`~harness._escape.markdown` for text, :func:`~harness._escape.code` for identifiers),
so no case id, fix, message or runner field can break a table row, open a code span, or emit
raw HTML. The document carries no generation time: the committed file must be exactly what
the committed shards make.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from harness._escape import code, markdown, visible
from harness.classify.outcomes import SYMBOLS
from harness.report import JSONObject
from harness.report.views import (
    COST_FIELDS,
    EMULATED_MARK,
    LEGEND,
    PREDICTED_MARK,
    Notes,
    compat_model,
    cost_model,
    fmt_cost,
    outcome_text,
    platform_provenance,
    platform_title,
    runner_model,
)

__all__ = ["compat_table", "render_markdown", "table"]

_COMPAT_INTRO = (
    "Each column is what a user gets without choosing a start method: the platform's default "
    "(Linux: `fork` up to Python 3.13, `forkserver` from 3.14; macOS and Windows: `spawn`). "
    "Plain cells were **observed** on a runner of that platform (its OS and Python). "
    f"Cells marked {EMULATED_MARK} are **emulated**: a Linux runner reproduced that platform's "
    "settings with its profile (`harness run --profile`: start methods, torch sharing strategy, "
    f"temp-path length), which is evidence, but not an observation. *Italic cells marked "
    f"{PREDICTED_MARK}* are **predicted**: no runner of that platform ran the case, so the outcome is "
    "the same start method observed on another runner. `matrix.json` names the source runner of "
    "every cell in `compatibility[].runner` and its `provenance`."
)

_COST_INTRO = (
    "Medians over the cases that passed on each runner. First batch: from creating "
    "the iterator to the first batch. Worker peak RSS counts pages shared with the "
    "parent (fork shares them copy-on-write); USS counts only the worker's own pages. "
    "In-process cells start no worker."
)

_RUNNERS_INTRO = (
    "What each runner observed when the start method was chosen explicitly "
    "(`in-process` is the `num_workers=0` control)."
)


def table(head: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table: the header, its rule, one line per row (cells already escaped)."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(cells) + " |" for cells in rows
    ]


def _compat_cell(cell: JSONObject | None) -> str:
    if cell is None:
        return "·"
    text = markdown(cell["text"])
    if cell["provenance"] == "predicted":
        text = f"*{text}* {PREDICTED_MARK}"
    elif cell["provenance"] == "emulated":
        text = f"{text} {EMULATED_MARK}" + (" ‼" if not cell.get("matches", True) else "")
    elif not cell.get("matches", True):
        text += " ‼"
    if cell["warn"]:
        text += f" ⚡[^{cell['warn']}]"
    if cell["disagree_note"]:
        text += f" ≠[^{cell['disagree_note']}]"
    return text


def compat_table(model: JSONObject, with_fix: bool = True) -> list[str]:
    """The compatibility view (:func:`~harness.report.views.compat_model`) as a Markdown table.

    Args:
        model: the view, or one with fewer ``rows`` (the CI summary's short form).
        with_fix: add a column with each case's fix.
    """
    head = ["Case"] + [f"{platform_title(p)} ({p['default_method']})" for p in model["platforms"]]
    if with_fix:
        head.append("Fix")
    rows = []
    for row in model["rows"]:
        cells = [code(row["id"])] + [_compat_cell(c) for c in row["cells"]]
        if with_fix:
            fix = row["meta"].get("fix")
            cells.append(code(fix) if fix else "")
        rows.append(cells)
    return table(head, rows)


def _runner_cell(cell: JSONObject | None) -> str:
    """A cell of the explicit view: :func:`~harness.report.views.cell_text` with its warning
    footnote, kind escaped."""
    if cell is None:
        return "·"
    if cell.get("broken"):
        return "🚧 broken"
    text = markdown(outcome_text(cell["outcome"], cell.get("kind")))
    if cell["outcome"] == "pass" and cell.get("warnings"):
        text += f" ⚡[^{cell['warn']}]" if cell["warn"] else " ⚡"
    if not cell.get("matches", True):
        text += " ‼"
    return text


def _legend_line() -> str:
    return (
        "Legend: "
        + " · ".join(f"{SYMBOLS[o]} {o}" for o, _ in LEGEND)
        + f" · {EMULATED_MARK} emulated · *italic* {PREDICTED_MARK} predicted · ⚡ passed with a hazard warning (footnote) "
        "· ‼ contradicts the case's expectation · ≠ runners of that platform disagree "
        "· 🚧 broken case (its in-process control failed) · · not run."
    )


def _heading(matrix: JSONObject) -> list[str]:
    """Title, the runners the document comes from, and the cells kept from earlier runs."""
    out = [
        "# DataLoader start-method compatibility",
        "",
        f"Generated by `harness report` from {len(matrix['runners'])} runner(s): "
        + ", ".join(code(r["id"]) for r in matrix["runners"])
        + ".",
    ]
    carried = [r for r in matrix["runners"] if r.get("carried_over")]
    if carried:
        out.append(
            "Kept unchanged from earlier runs (`harness run --changed`): "
            + "; ".join(
                f"{r['carried_over']} cell(s) of {code(r['id'])}, the oldest observed {markdown(str(r.get('oldest_observed_utc')))}"
                for r in carried
            )
            + "."
        )
    return out


def _default_section(compat: JSONObject) -> list[str]:
    """What you get by default: where each column comes from, the table, the legend."""
    platforms = [
        f"- **{platform_title(p)}** (`{p['id']}`, default `{p['default_method']}`): "
        f"{platform_provenance(p)}"
        for p in compat["platforms"]
    ]
    return [
        "",
        "## What you get by default",
        "",
        _COMPAT_INTRO,
        "",
        *platforms,
        "",
        *compat_table(compat),
        "",
        _legend_line(),
        "",
    ]


def _cost_section(cost: JSONObject) -> list[str]:
    """Median costs per runner and start method, then the memory cases cell by cell."""
    out: list[str] = []
    titles = [title for _, title, _ in COST_FIELDS]
    if cost["rows"]:
        rows = (
            [markdown(row["label"]), row["method"], str(row["n"])]
            + [fmt_cost(kind, row["values"][key]) for key, _, kind in COST_FIELDS]
            for row in cost["rows"]
        )
        out += [
            "## Cost per start method",
            "",
            _COST_INTRO,
            "",
            *table(["Runner", "Method", "Cases", *titles], rows),
            "",
        ]
    if cost["memory"]:
        rows = (
            [code(row["case"]), markdown(row["label"]), row["method"], SYMBOLS[row["outcome"]]]
            + [fmt_cost(kind, row["values"][key]) for key, _, kind in COST_FIELDS]
            for row in cost["memory"]
        )
        out += [
            "### Memory cases, cell by cell",
            "",
            *table(["Case", "Runner", "Method", "Outcome", *titles], rows),
            "",
        ]
    return out


def _runner_section(views: list[JSONObject]) -> list[str]:
    """Every start method, one folded table per runner (open when there are at most two)."""
    out = ["## Every start method, per runner", "", _RUNNERS_INTRO, ""]
    for view in views:
        info = view["runner_info"]
        # An HTML block: its text is HTML, not Markdown, on one line (a blank line would end the block).
        summary = html.escape(
            " ".join(
                visible(
                    f"{view['label']} ({view['runner']}, default {info['default_method']}, "
                    f"{len(view['rows'])} cases)"
                ).split()
            )
        )
        rows = (
            [code(row["id"]), markdown(row["family"])] + [_runner_cell(c) for c in row["cells"]]
            for row in view["rows"]
        )
        out += [
            "<details open>" if len(views) <= 2 else "<details>",
            f"<summary>{summary}</summary>",
            "",
            *table(["Case", "Family", *view["methods"]], rows),
            "",
            "</details>",
            "",
        ]
    return out


def _closing_sections(matrix: JSONObject, notes: Notes) -> list[str]:
    """Fixes, rejected shards and the footnotes, each only when there is one."""
    out: list[str] = []
    fixes = [(cid, meta) for cid, meta in matrix["cases"].items() if meta.get("fix")]
    if fixes:
        out += ["## Fixes", ""]
        out += [
            f"- {code(cid)} → {code(meta['fix'])}: {markdown(meta.get('why', ''))}"
            for cid, meta in fixes
        ]
        out.append("")
    if matrix.get("rejected"):
        out += ["## Rejected shards", ""] + [f"- {markdown(r)}" for r in matrix["rejected"]] + [""]
    if notes.items:
        out += (
            ["## Notes", ""]
            + [f"[^{key}]: {markdown(text)}" for key, text in notes.items.items()]
            + [""]
        )
    return out


def render_markdown(matrix: JSONObject) -> str:
    """``COMPATIBILITY.md``: default view, costs, explicit view per runner, fixes, rejects, notes.

    Args:
        matrix: the merged matrix document (:func:`harness.report.merge.merge`).

    Returns:
        The document, lines joined by ``\\n`` with no trailing newline after the last empty line.
    """
    notes = Notes()  # one numbering for the footnotes of every table
    compat = compat_model(matrix, notes)
    views = runner_model(matrix, notes)
    sections = (
        _heading(matrix),
        _default_section(compat),
        _cost_section(cost_model(matrix)),
        _runner_section(views),
        _closing_sections(matrix, notes),
    )
    return "\n".join(line for section in sections for line in section)
