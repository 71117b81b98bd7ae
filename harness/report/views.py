"""Render the merged matrix: Markdown (``COMPATIBILITY.md``), a self-contained HTML page, and
the compact Markdown for a CI job summary.

Both documents lead with the compatibility view (what a user gets by default on each platform,
observed, emulated or predicted; see :mod:`harness.report.platforms`), then the cost of each start method, then the
explicit-method view per runner, then footnotes (hazard warnings of passing cells, runners that
disagree), fixes and rejected shards.

Every string of a shard is untrusted text. The Markdown documents pass each one through
:mod:`harness._escape` (:func:`~harness._escape.markdown` for text, :func:`~harness._escape.code`
for identifiers), so no case id, fix, message or runner field can break a table row, open a
code span, or emit raw HTML. The HTML page escapes every value (jinja2 autoescape, attributes
included) after :func:`~harness._escape.visible` has spelled out control characters and lone
surrogates.
"""

from __future__ import annotations

import html
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import jinja2
import markupsafe

from harness._escape import code, markdown, visible
from harness._outcomes import METHODS, SYMBOLS, outcome_label

__all__ = [
    "LEGEND",
    "PLATFORM_TITLES",
    "PROVENANCE_MARKS",
    "SUMMARY_LIMIT_BYTES",
    "OUTCOME_WORDS",
    "cell_text",
    "cell_words",
    "compat_model",
    "contradiction",
    "cost_model",
    "fmt_bytes",
    "fmt_seconds",
    "platform_provenance",
    "render_html",
    "render_markdown",
    "render_summary",
    "runner_label",
    "runner_model",
]

LEGEND = [
    ("pass", "every expected batch arrived with the right content"),
    ("wrong", "finished, but the data was wrong (the reason is recorded)"),
    ("error", "an exception; the word after the symbol is its kind"),
    ("hang", "killed by the watchdog after the timeout"),
    ("crash", "the loader's process died by a signal"),
    ("unsupported", "the start method does not exist on that platform"),
    ("skipped", "a precondition (such as CUDA) is missing"),
]

#: Column titles of the compatibility view, keyed by policy platform id.
PLATFORM_TITLES = {
    "linux-py<=3.13": "Linux, Python ≤ 3.13",
    "linux-py>=3.14": "Linux, Python ≥ 3.14",
    "macos": "macOS",
    "windows": "Windows",
}

#: GitHub's limit for one step's ``$GITHUB_STEP_SUMMARY`` is 1 MiB; stay a little under it.
SUMMARY_LIMIT_BYTES = 1024 * 1024 - 4096

#: Cost fields shown per start method: (record key, column title, formatter name).
COST_FIELDS = (
    ("first_batch_s", "first batch", "s"),
    ("duration_s", "duration", "s"),
    ("worker_peak_rss_bytes", "worker peak RSS", "b"),
    ("worker_peak_uss_bytes", "worker peak USS", "b"),
    ("parent_peak_rss_bytes", "parent peak RSS", "b"),
)

_PREDICTED_MARK = "†"
_EMULATED_MARK = "‡"
#: How each provenance is marked in Markdown: observed cells are plain.
PROVENANCE_MARKS = {"observed": "", "emulated": _EMULATED_MARK, "predicted": _PREDICTED_MARK}


def runner_label(runner: dict) -> str:
    """Short label for a runner: ``linux py3.11 torch2.13.0``, ``linux py3.11 torch2.13.0 as macos``."""
    py = ".".join(runner["python"].split(".")[:2])
    label = f"{runner['os']} py{py} torch{runner['torch'].split('+')[0]}"
    return f"{label} as {runner['emulates']}" if runner.get("emulates") else label


def fmt_seconds(value: float | None) -> str:
    """Seconds for people: ``64 ms`` below one second, ``7.52 s`` above; ``–`` when unknown."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms" if value >= 0.0095 else f"{value * 1000:.1f} ms"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def fmt_bytes(value: float | None) -> str:
    """Bytes in MiB (GiB from 1 GiB); ``–`` when unknown or zero (no worker was measured)."""
    if not value:
        return "–"
    mib = value / 2**20
    if mib >= 1024:
        return f"{mib / 1024:.2f} GiB"
    return f"{mib:.0f} MiB" if mib >= 100 else f"{mib:.1f} MiB"


def _fmt(kind: str, value: float | None) -> str:
    return fmt_seconds(value) if kind == "s" else fmt_bytes(value)


def _outcome_text(outcome: str, kind: str | None) -> str:
    """The symbol and the word after it: ``❌ pickle`` (an error's kind), ``⏳ hang``, ``✅``."""
    detail = kind if outcome == "error" else None if outcome == "pass" else outcome
    return outcome_label(SYMBOLS[outcome], detail, "{outcome} {kind}")


#: The outcome words the HTML page shows instead of emoji symbols, so it reads the same on a
#: machine without an emoji font (where every symbol was seen as an empty box).
OUTCOME_WORDS = {o: o for o in SYMBOLS}


def cell_words(outcome: str, kind: str | None, broken: bool = False) -> str:
    """Plain words for a cell: ``pass``, ``error: pickle``, ``hang``, ``broken case``."""
    if broken:
        return "broken case"
    return outcome_label(OUTCOME_WORDS.get(outcome, outcome), kind if outcome == "error" else None, "{outcome}: {kind}")


def contradiction(rec: dict) -> str:
    """How a result record contradicts its case's expectation: ``expected pass, observed error/pickle``."""
    return (f"expected {outcome_label(rec['expected'], rec.get('expected_kind'))}, "
            f"observed {outcome_label(rec['outcome'], rec.get('kind'))}")


def cell_text(rec: dict | None) -> str:
    """Symbol plus kind (``❌ pickle``) of one result record, ``⚡`` for a pass that warned,
    ``‼`` when it contradicts expectations, ``·`` when there is no record."""
    if rec is None:
        return "·"
    if rec.get("broken"):
        return "🚧 broken"
    text = _outcome_text(rec["outcome"], rec.get("kind"))
    if rec["outcome"] == "pass" and rec.get("warnings"):
        text += " ⚡"
    if not rec.get("matches", True):
        text += " ‼"
    return text


class _Notes:
    """Numbered footnotes shared by every table of one document (warnings, disagreements)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def ref(self, prefix: str, text: str) -> str:
        for key, value in self.items.items():
            if value == text and key.startswith(prefix):
                return key
        key = f"{prefix}{sum(k.startswith(prefix) for k in self.items) + 1}"
        self.items[key] = text
        return key


def _index(matrix: dict) -> dict[tuple[str, str, str], dict]:
    return {(r["case"], r["runner"], r["method"]): r for r in matrix["results"]}


def _case_rows(matrix: dict) -> list[tuple[str, dict]]:
    ids = {r["case"] for r in matrix["results"]}
    cases = matrix["cases"]
    return sorted(((cid, cases.get(cid, {})) for cid in ids),
                  key=lambda item: (item[1].get("family", "unknown"), item[0]))


def _warning_text(rec: dict) -> str:
    return " / ".join(dict.fromkeys(w.strip() for w in rec.get("warnings", []) if w.strip()))


def compat_model(matrix: dict, notes: _Notes | None = None) -> dict:
    """The compatibility view as rows for both renderers.

    Returns:
        ``{"platforms": [...], "rows": [{"id", "meta", "family", "cells": [cell|None, ...]}]}``
        where each cell is the ``compatibility`` entry plus ``text`` (symbol and kind),
        ``source`` (the result record it came from), ``warn`` and ``disagree_note`` (footnote
        keys, or ``None``) and ``tip`` (one line for a tooltip).
    """
    notes = notes if notes is not None else _Notes()
    platforms = matrix["platforms"]
    index = _index(matrix)
    by_runner = {r["id"]: r for r in matrix["runners"]}
    compat = {(c["case"], c["platform"]): c for c in matrix.get("compatibility", [])}
    rows = []
    for cid, meta in _case_rows(matrix):
        cells = []
        for plat in platforms:
            entry = compat.get((cid, plat["id"]))
            if entry is None:
                cells.append(None)
                continue
            src = index.get((cid, entry["runner"], entry["method"]), {})
            cell = dict(entry)
            cell["source"] = src
            cell["text"] = "🚧 broken" if entry.get("broken") else _outcome_text(entry["outcome"], entry["kind"])
            cell["words"] = cell_words(entry["outcome"], entry["kind"], bool(entry.get("broken")))
            warn = _warning_text(src) if entry["outcome"] == "pass" else ""
            cell["warn"] = notes.ref("w", warn) if warn else None
            cell["disagree_note"] = None
            if entry.get("disagree"):
                others = "; ".join(f"{runner_label(by_runner[d['runner']]) if d['runner'] in by_runner else d['runner']}: "
                                   f"{_outcome_text(d['outcome'], d['kind'])}" for d in entry["disagree"])
                cell["disagree_note"] = notes.ref(
                    "d", f"{cid} on {plat['id']} ({entry['method']}): other runners of this platform "
                         f"observed {others}")
            source_label = runner_label(by_runner[entry["runner"]]) if entry["runner"] in by_runner else entry["runner"]
            detail = src.get("root_cause") or src.get("message") or ""
            cell["source_label"] = source_label
            cell["tip"] = (f"{entry['provenance']} on {source_label} ({entry['method']})"
                           + (f": {detail}" if detail else ""))
            cells.append(cell)
        rows.append({"id": cid, "meta": meta, "family": meta.get("family", "unknown"), "cells": cells})
    return {"platforms": platforms, "rows": rows}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cost_model(matrix: dict) -> dict:
    """Median cost of passing cells per runner and start method, and per-case memory costs.

    Medians are taken across the cases that passed (other outcomes stop early and would
    understate the cost). ``memory`` lists every cell of the families whose id mentions
    ``memory`` or ``cost``, where per-case values are the point.

    Returns:
        ``{"fields": COST_FIELDS, "rows": [{"runner", "label", "method", "n", "values": {key: median}}],
        "memory": [{"case", "runner", "label", "method", "outcome", "values": {key: value}}]}``;
        seconds and bytes as recorded.
    """
    runners = matrix["runners"]
    labels = {r["id"]: runner_label(r) for r in runners}
    passed: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for rec in matrix["results"]:
        if rec["outcome"] == "pass" and not rec.get("broken"):
            passed[(rec["runner"], rec["method"])].append(rec)
    rows = []
    for r in runners:
        for m in METHODS:
            recs = passed.get((r["id"], m))
            if not recs:
                continue
            values = {}
            for key, _, _ in COST_FIELDS:
                vals = [x[key] for x in recs if x.get(key) is not None and (x[key] or not key.startswith("worker"))]
                values[key] = _median(vals)
            rows.append({"runner": r["id"], "label": labels[r["id"]], "method": m, "n": len(recs), "values": values})
    memory = []
    mem_cases = {cid for cid, meta in matrix["cases"].items()
                 if "memory" in meta.get("family", "") or "cost" in meta.get("family", "")}
    for rec in matrix["results"]:
        if rec["case"] in mem_cases:
            memory.append({"case": rec["case"], "runner": rec["runner"], "label": labels.get(rec["runner"], rec["runner"]),
                           "method": rec["method"], "outcome": rec["outcome"],
                           "values": {key: rec.get(key) for key, _, _ in COST_FIELDS}})
    return {"fields": COST_FIELDS, "rows": rows, "memory": memory}


def runner_model(matrix: dict, notes: _Notes | None = None) -> list[dict]:
    """The explicit-method view: one table per runner, rows are cases, columns are methods.

    Returns:
        ``[{"runner", "label", "methods", "rows": [{"id", "meta", "family", "cells": [...]}]}]``;
        each cell is the result record plus ``text``, ``warn`` (footnote key or ``None``) and
        ``cost`` (a short cost line for passing cells), or ``None`` when the case was not run.
    """
    notes = notes if notes is not None else _Notes()
    index = _index(matrix)
    out = []
    for runner in matrix["runners"]:
        rid = runner["id"]
        methods = [m for m in METHODS if any(k[1] == rid and k[2] == m for k in index)]
        rows = []
        for cid, meta in _case_rows(matrix):
            if not any((cid, rid, m) in index for m in methods):
                continue
            cells = []
            for m in methods:
                rec = index.get((cid, rid, m))
                if rec is None:
                    cells.append(None)
                    continue
                cell = dict(rec)
                cell["text"] = cell_text(rec)
                cell["words"] = cell_words(rec["outcome"], rec.get("kind"), bool(rec.get("broken")))
                warn = _warning_text(rec) if rec["outcome"] == "pass" else ""
                cell["warn"] = notes.ref("w", warn) if warn else None
                cell["cost"] = ""
                if rec["outcome"] == "pass":
                    parts = [fmt_seconds(rec.get("first_batch_s"))]
                    if rec.get("worker_peak_rss_bytes"):
                        parts.append(fmt_bytes(rec["worker_peak_rss_bytes"]))
                    cell["cost"] = " · ".join(parts)
                cells.append(cell)
            rows.append({"id": cid, "meta": meta, "family": meta.get("family", "unknown"), "cells": cells})
        out.append({"runner": rid, "label": runner_label(runner), "runner_info": runner,
                    "methods": methods, "rows": rows})
    return out


def platform_provenance(plat: dict, quote: Callable[[str], str] = code) -> str:
    """One line on where a compatibility column's cells come from (observed, emulated, predicted).

    Args:
        plat: an entry of the matrix's ``platforms``.
        quote: how a runner id or method is written: a Markdown code span by default;
            ``str`` for a page that escapes the whole line itself.
    """
    if plat["observed_runners"]:
        return "observed on " + ", ".join(quote(r) for r in plat["observed_runners"])
    if plat.get("emulated_runners"):
        return (f"no runner of its own; emulated ({_EMULATED_MARK}) on "
                + ", ".join(quote(r) for r in plat["emulated_runners"])
                + " with its profile (start methods "
                + ", ".join(quote(m) for m in plat["methods"])
                + f"; torch {quote(plat.get('sharing_strategy', 'file_descriptor'))} sharing)")
    return f"no runner; every cell predicted ({_PREDICTED_MARK}) from {plat['default_method']} on another runner"


def _platform_line(plat: dict, matrix: dict) -> str:
    title = PLATFORM_TITLES.get(plat["id"], plat["id"])
    return f"- **{title}** (`{plat['id']}`, default `{plat['default_method']}`): {platform_provenance(plat)}"


def _md_compat_cell(cell: dict | None) -> str:
    if cell is None:
        return "·"
    text = markdown(cell["text"])
    if cell["provenance"] == "predicted":
        text = f"*{text}* {_PREDICTED_MARK}"
    elif cell["provenance"] == "emulated":
        text = f"{text} {_EMULATED_MARK}" + (" ‼" if not cell.get("matches", True) else "")
    elif not cell.get("matches", True):
        text += " ‼"
    if cell["warn"]:
        text += f" ⚡[^{cell['warn']}]"
    if cell["disagree_note"]:
        text += f" ≠[^{cell['disagree_note']}]"
    return text


def _md_runner_cell(cell: dict) -> str:
    """A cell of the explicit view: :func:`cell_text` with its warning footnote, kind escaped."""
    if cell.get("broken"):
        return "🚧 broken"
    text = markdown(_outcome_text(cell["outcome"], cell.get("kind")))
    if cell["outcome"] == "pass" and cell.get("warnings"):
        text += f" ⚡[^{cell['warn']}]" if cell["warn"] else " ⚡"
    if not cell.get("matches", True):
        text += " ‼"
    return text


def _md_compat_table(model: dict, with_fix: bool = True) -> list[str]:
    head = ["Case"] + [f"{PLATFORM_TITLES.get(p['id'], p['id'])} ({p['default_method']})"
                       for p in model["platforms"]]
    if with_fix:
        head.append("Fix")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in model["rows"]:
        cells = [code(row["id"])] + [_md_compat_cell(c) for c in row["cells"]]
        if with_fix:
            fix = row["meta"].get("fix")
            cells.append(code(fix) if fix else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_COMPAT_INTRO = (
    "Each column is what a user gets without choosing a start method: the platform's default "
    "(Linux: `fork` up to Python 3.13, `forkserver` from 3.14; macOS and Windows: `spawn`). "
    "Plain cells were **observed** on a runner of that platform (its OS and Python). "
    f"Cells marked {_EMULATED_MARK} are **emulated**: a Linux runner reproduced that platform's "
    "settings with its profile (`harness run --profile`: start methods, torch sharing strategy, "
    f"temp-path length), which is evidence, but not an observation. *Italic cells marked "
    f"{_PREDICTED_MARK}* are **predicted**: no runner of that platform ran the case, so the outcome is "
    "the same start method observed on another runner. `matrix.json` names the source runner of "
    "every cell in `compatibility[].runner` and its `provenance`."
)


def _legend_line() -> str:
    return ("Legend: " + " · ".join(f"{SYMBOLS[o]} {o}" for o, _ in LEGEND)
            + f" · {_EMULATED_MARK} emulated · *italic* {_PREDICTED_MARK} predicted · ⚡ passed with a hazard warning (footnote) "
              "· ‼ contradicts the case's expectation · ≠ runners of that platform disagree "
              "· 🚧 broken case (its in-process control failed) · · not run.")


def render_markdown(matrix: dict) -> str:
    """``COMPATIBILITY.md``: default view, costs, explicit view per runner, notes, fixes, rejects."""
    notes = _Notes()
    compat = compat_model(matrix, notes)
    out = ["# DataLoader start-method compatibility", ""]
    # No generation time: the committed file must be exactly what the committed shards make.
    out.append(f"Generated by `harness report` from {len(matrix['runners'])} runner(s): "
               + ", ".join(code(r["id"]) for r in matrix["runners"]) + ".")
    carried = [r for r in matrix["runners"] if r.get("carried_over")]
    if carried:
        out.append("Kept unchanged from earlier runs (`harness run --changed`): " + "; ".join(
            f"{r['carried_over']} cell(s) of {code(r['id'])}, the oldest observed {markdown(str(r.get('oldest_observed_utc')))}"
            for r in carried) + ".")
    out += ["", "## What you get by default", "", _COMPAT_INTRO, ""]
    out += [_platform_line(p, matrix) for p in compat["platforms"]]
    out += ["", *_md_compat_table(compat), "", _legend_line(), ""]

    cost = cost_model(matrix)
    if cost["rows"]:
        out += ["## Cost per start method", "",
                "Medians over the cases that passed on each runner. First batch: from creating "
                "the iterator to the first batch. Worker peak RSS counts pages shared with the "
                "parent (fork shares them copy-on-write); USS counts only the worker's own pages. "
                "In-process cells start no worker.", ""]
        head = ["Runner", "Method", "Cases"] + [title for _, title, _ in COST_FIELDS]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in cost["rows"]:
            out.append("| " + " | ".join([markdown(row["label"]), row["method"], str(row["n"])]
                                         + [_fmt(kind, row["values"][key]) for key, _, kind in COST_FIELDS]) + " |")
        out.append("")
    if cost["memory"]:
        out += ["### Memory cases, cell by cell", ""]
        head = ["Case", "Runner", "Method", "Outcome"] + [title for _, title, _ in COST_FIELDS]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in cost["memory"]:
            out.append("| " + " | ".join([code(row["case"]), markdown(row["label"]), row["method"], SYMBOLS[row["outcome"]]]
                                         + [_fmt(kind, row["values"][key]) for key, _, kind in COST_FIELDS]) + " |")
        out.append("")

    out += ["## Every start method, per runner", "",
            "What each runner observed when the start method was chosen explicitly "
            "(`in-process` is the `num_workers=0` control).", ""]
    views = runner_model(matrix, notes)
    for view in views:
        info = view["runner_info"]
        # An HTML block: its text is HTML, not Markdown, on one line (a blank line would end the block).
        summary = html.escape(" ".join(visible(f"{view['label']} ({view['runner']}, default {info['default_method']}, "
                                               f"{len(view['rows'])} cases)").split()))
        out += ["<details open>" if len(views) <= 2 else "<details>", f"<summary>{summary}</summary>", ""]
        head = ["Case", "Family"] + view["methods"]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in view["rows"]:
            cells = [code(row["id"]), markdown(row["family"])]
            cells += ["·" if c is None else _md_runner_cell(c) for c in row["cells"]]
            out.append("| " + " | ".join(cells) + " |")
        out += ["", "</details>", ""]

    fixes = [(cid, meta) for cid, meta in matrix["cases"].items() if meta.get("fix")]
    if fixes:
        out += ["## Fixes", ""]
        for cid, meta in fixes:
            out.append(f"- {code(cid)} → {code(meta['fix'])}: {markdown(meta.get('why', ''))}")
        out.append("")
    if matrix.get("rejected"):
        out += ["## Rejected shards", ""] + [f"- {markdown(r)}" for r in matrix["rejected"]] + [""]
    if notes.items:
        out += ["## Notes", ""]
        for key, text in notes.items.items():
            out.append(f"[^{key}]: {markdown(text)}")
        out.append("")
    return "\n".join(out)


def _counts_table(compat: dict) -> list[str]:
    head = ["Platform (default)", "observed", "emulated", "predicted"] + [SYMBOLS[o] + " " + o for o, _ in LEGEND]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, plat in enumerate(compat["platforms"]):
        cells = [row["cells"][i] for row in compat["rows"] if row["cells"][i] is not None]
        prov = Counter(c["provenance"] for c in cells)
        outcomes = Counter(c["outcome"] for c in cells)
        lines.append("| " + " | ".join(
            [f"{PLATFORM_TITLES.get(plat['id'], plat['id'])} ({plat['default_method']})",
             str(prov["observed"]), str(prov["emulated"]), str(prov["predicted"])]
            + [str(outcomes[o]) for o, _ in LEGEND]) + " |")
    return lines


def render_summary(matrix: dict, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """Compact Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``), at most ``limit_bytes``.

    The full form is the compatibility view plus the list of cells that contradict their
    expectation. When that exceeds ``limit_bytes`` (UTF-8), the short form keeps only the rows
    with a cell that is not ``pass``; when even that is too large, only the per-platform counts
    and as many contradicting cells as fit. GitHub documents the 1 MiB limit per step under
    "Adding a job summary" (workflow commands).

    Raises:
        ValueError: ``limit_bytes`` is too small for even the counts.
    """
    notes = _Notes()
    compat = compat_model(matrix, notes)
    mismatches = [r for r in matrix["results"] if not r.get("matches", True)]
    head = [f"### DataLoader start-method compatibility ({len(compat['rows'])} cases, "
            f"{len(matrix['runners'])} runner(s))", ""]
    if matrix.get("rejected"):
        head += [f"**{len(matrix['rejected'])} shard(s) rejected:**", ""]
        head += [f"- {markdown(r)}" for r in matrix["rejected"]] + [""]
    broken = sorted({(r["case"], r["runner"]) for r in mismatches if r.get("broken")})
    mism = [f"- 🚧 {code(case)} on {code(runner)}: broken case, its in-process control did not pass"
            for case, runner in broken]
    mism += [f"- ‼ {code(r['case'])} [{r['method']}] on {code(r['runner'])}: "
             + markdown(f"{contradiction(r)}: {(r.get('root_cause') or r.get('message') or '')[:300]}")
             for r in mismatches if not r.get("broken")]
    tail = ([f"**{len(mismatches)} observed cell(s) contradict their expectation:**", ""] + mism + [""]
            if mismatches else ["No observed cell contradicts its expectation.", ""])
    foot = [f"{_EMULATED_MARK} cells are emulated with a platform profile on Linux; *italic* "
            f"{_PREDICTED_MARK} cells are predicted from the same start method on another runner. "
            "The full report (Markdown, HTML, JSON, JUnit, heatmap) is in the report artifact.", ""]

    def fits(text: str) -> bool:
        return len(text.encode("utf-8")) <= limit_bytes

    def footnotes(rows: list[dict]) -> list[str]:
        keys = [k for row in rows for c in row["cells"] if c is not None
                for k in (c["warn"], c["disagree_note"]) if k]
        return [f"[^{k}]: {markdown(notes.items[k])}" for k in dict.fromkeys(keys)] + ([""] if keys else [])

    full = "\n".join(head + _md_compat_table(compat, with_fix=False) + [""] + tail
                     + footnotes(compat["rows"]) + foot)
    if fits(full):
        return full
    short_model = {"platforms": compat["platforms"],
                   "rows": [r for r in compat["rows"]
                            if any(c is not None and c["outcome"] != "pass" for c in r["cells"])]}
    short = "\n".join(head + ["Short form: only cases with a cell that is not ✅ pass.", ""]
                      + _md_compat_table(short_model, with_fix=False) + [""] + tail
                      + footnotes(short_model["rows"]) + foot)
    if fits(short):
        return short
    counts = head + ["Short form: counts per platform only.", ""] + _counts_table(compat) + [""]
    base = "\n".join(counts + foot)
    if not fits(base):
        raise ValueError(f"summary limit {limit_bytes} bytes is too small for the counts table")
    lines = list(counts)
    if mismatches:
        lines += [f"**{len(mismatches)} observed cell(s) contradict their expectation** (first ones):", ""]
        for line in mism:
            if not fits("\n".join(lines + [line, "- …", ""] + foot)):
                lines.append("- …")
                break
            lines.append(line)
        lines.append("")
    return "\n".join(lines + foot) if fits("\n".join(lines + foot)) else base


def _finalize(value: object) -> object:
    """Every ``{{ value }}`` of the page: strings spelled out by :func:`visible` (then escaped)."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return visible(value)
    return value


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("html")),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=_finalize,
)


def render_html(matrix: dict, heatmap: str | None = None) -> str:
    """``matrix.html``: a self-contained page (inline CSS, no scripts); every message escaped.

    Args:
        matrix: the merged matrix document.
        heatmap: file name of the heatmap image next to the page, or ``None`` when none was drawn.
    """
    notes = _Notes()
    compat = compat_model(matrix, notes)
    views = runner_model(matrix, notes)
    return _ENV.get_template("matrix.html.j2").render(
        matrix=matrix, compat=compat, views=views, cost=cost_model(matrix), notes=notes.items,
        symbols=SYMBOLS, legend=LEGEND, titles=PLATFORM_TITLES, fmt=_fmt, heatmap=heatmap,
        predicted_mark=_PREDICTED_MARK, emulated_mark=_EMULATED_MARK, words=OUTCOME_WORDS,
        provenance=lambda plat: platform_provenance(plat, quote=str),
    )
