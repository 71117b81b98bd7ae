"""View models: the merged matrix arranged as the renderers show it.

Every renderer (:mod:`~harness.report.markdown`, :mod:`~harness.report.page`,
:mod:`~harness.report.summary`) reads the same three views, so the Markdown file, the HTML page
and the CI summary cannot disagree on what a cell says:

* :func:`compat_model`: the compatibility view (what a user gets by default on each platform,
  observed, emulated or predicted; see :mod:`harness.report.platforms`);
* :func:`cost_model`: the cost of each start method, and the memory cases cell by cell;
* :func:`runner_model`: every start method, one table per runner.

Footnotes (hazard warnings of passing cells, runners that disagree) are numbered by one
:class:`Notes` per document. The vocabulary of a cell (symbols, words, labels, formatted
seconds and bytes) lives here too; the outcome and its kind are spelled by
:func:`harness.classify.outcomes.outcome_label`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable

from harness._escape import code
from harness.classify.outcomes import METHODS, SYMBOLS, outcome_label
from harness.report import JSONObject

__all__ = [
    "COST_FIELDS",
    "EMULATED_MARK",
    "LEGEND",
    "OUTCOME_WORDS",
    "PLATFORM_TITLES",
    "PREDICTED_MARK",
    "PROVENANCE_MARKS",
    "Notes",
    "cell_text",
    "breaks_model",
    "cell_words",
    "compat_model",
    "contradiction",
    "cost_model",
    "fmt_bytes",
    "fmt_cost",
    "fmt_seconds",
    "outcome_text",
    "platform_provenance",
    "platform_title",
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

#: Cost fields shown per start method: (record key, column title, formatter name).
COST_FIELDS = (
    ("first_batch_s", "first batch", "s"),
    ("duration_s", "duration", "s"),
    ("worker_peak_rss_bytes", "worker peak RSS", "b"),
    ("worker_peak_uss_bytes", "worker peak USS", "b"),
    ("parent_peak_rss_bytes", "parent peak RSS", "b"),
)

#: The mark of a predicted cell (taken from another runner) and of an emulated one (a Linux
#: runner with the platform's profile).
PREDICTED_MARK = "†"
EMULATED_MARK = "‡"
#: How each provenance is marked in Markdown: observed cells are plain.
PROVENANCE_MARKS = {"observed": "", "emulated": EMULATED_MARK, "predicted": PREDICTED_MARK}


def platform_title(plat: JSONObject) -> str:
    """The column title of a platform (an entry of the matrix's ``platforms``): ``macOS``."""
    pid: str = plat["id"]
    return PLATFORM_TITLES.get(pid, pid)


def runner_label(runner: JSONObject) -> str:
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


def fmt_cost(kind: str, value: float | None) -> str:
    """A value of :data:`COST_FIELDS`: ``kind`` ``"s"`` is seconds, anything else bytes."""
    return fmt_seconds(value) if kind == "s" else fmt_bytes(value)


def outcome_text(outcome: str, kind: str | None) -> str:
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


def contradiction(rec: JSONObject) -> str:
    """How a result record contradicts its case's expectation: ``expected pass, observed error/pickle``."""
    return (f"expected {outcome_label(rec['expected'], rec.get('expected_kind'))}, "
            f"observed {outcome_label(rec['outcome'], rec.get('kind'))}")


def cell_text(rec: JSONObject | None) -> str:
    """Symbol plus kind (``❌ pickle``) of one result record, ``⚡`` for a pass that warned,
    ``‼`` when it contradicts expectations, ``·`` when there is no record."""
    if rec is None:
        return "·"
    if rec.get("broken"):
        return "🚧 broken"
    text = outcome_text(rec["outcome"], rec.get("kind"))
    if rec["outcome"] == "pass" and rec.get("warnings"):
        text += " ⚡"
    if not rec.get("matches", True):
        text += " ‼"
    return text


class Notes:
    """Numbered footnotes shared by every table of one document (warnings, disagreements)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def ref(self, prefix: str, text: str) -> str:
        """The key of the note ``text`` (``w1``, ``d2``: ``prefix`` and a number), added when new."""
        for key, value in self.items.items():
            if value == text and key.startswith(prefix):
                return key
        key = f"{prefix}{sum(k.startswith(prefix) for k in self.items) + 1}"
        self.items[key] = text
        return key


def _index(matrix: JSONObject) -> dict[tuple[str, str, str], JSONObject]:
    return {(r["case"], r["runner"], r["method"]): r for r in matrix["results"]}


def _case_rows(matrix: JSONObject) -> list[tuple[str, JSONObject]]:
    ids = {r["case"] for r in matrix["results"]}
    cases = matrix["cases"]
    return sorted(((cid, cases.get(cid, {})) for cid in ids),
                  key=lambda item: (item[1].get("family", "unknown"), item[0]))


def _warning_text(rec: JSONObject) -> str:
    return " / ".join(dict.fromkeys(w.strip() for w in rec.get("warnings", []) if w.strip()))


def compat_model(matrix: JSONObject, notes: Notes | None = None) -> JSONObject:
    """The compatibility view as rows for every renderer.

    Returns:
        ``{"platforms": [...], "rows": [{"id", "meta", "family", "cells": [cell|None, ...]}]}``
        where each cell is the ``compatibility`` entry plus ``text`` (symbol and kind),
        ``source`` (the result record it came from), ``warn`` and ``disagree_note`` (footnote
        keys, or ``None``) and ``tip`` (one line for a tooltip).
    """
    notes = notes if notes is not None else Notes()
    platforms = matrix["platforms"]
    index = _index(matrix)
    by_runner = {r["id"]: r for r in matrix["runners"]}
    compat = {(c["case"], c["platform"]): c for c in matrix.get("compatibility", [])}
    rows = []
    for cid, meta in _case_rows(matrix):
        cells: list[JSONObject | None] = []
        for plat in platforms:
            entry = compat.get((cid, plat["id"]))
            if entry is None:
                cells.append(None)
                continue
            src = index.get((cid, entry["runner"], entry["method"]), {})
            cells.append(_compat_cell(entry, src, by_runner, notes))
        rows.append({"id": cid, "meta": meta, "family": meta.get("family", "unknown"), "cells": cells})
    return {"platforms": platforms, "rows": rows}


#: The platform columns where code that works on Linux up to 3.13 (``fork``) breaks by default.
BREAKING_PLATFORMS = ("linux-py>=3.14", "macos", "windows")
#: Outcomes that mean "it breaks there".
_BROKEN_OUTCOMES = frozenset({"error", "hang", "crash", "wrong"})


def breaks_model(compat: JSONObject) -> JSONObject:
    """What works on Linux up to Python 3.13 and breaks by default elsewhere, from
    :func:`compat_model`: the cases whose cell passes in the ``linux-py<=3.13`` column and
    fails in one of :data:`BREAKING_PLATFORMS`, most common first (the most public reports in
    the case's ``sources``, then the most platforms broken, then the id).

    Returns:
        ``{"platforms": [platform, ...] (those of BREAKING_PLATFORMS the matrix has),
        "rows": [{"id", "meta", "family", "cells": [cell|None, ...], "broken": N}]}``, the
        cells those of :func:`compat_model` for those platforms.
    """
    ids = [p["id"] for p in compat["platforms"]]
    wanted = [i for i, pid in enumerate(ids) if pid in BREAKING_PLATFORMS]
    linux = ids.index("linux-py<=3.13") if "linux-py<=3.13" in ids else None
    rows = []
    for row in compat["rows"]:
        cells = [row["cells"][i] for i in wanted]
        broken = sum(1 for c in cells if c is not None and not c.get("broken") and c["outcome"] in _BROKEN_OUTCOMES)
        base = row["cells"][linux] if linux is not None else None
        if broken and (base is None or base["outcome"] == "pass"):
            rows.append({**row, "cells": cells, "broken": broken})
    rows.sort(key=lambda r: (-len(r["meta"].get("sources") or ()), -r["broken"], r["id"]))
    return {"platforms": [compat["platforms"][i] for i in wanted], "rows": rows}


def _compat_cell(entry: JSONObject, src: JSONObject, by_runner: dict[str, JSONObject], notes: Notes) -> JSONObject:
    """One cell of :func:`compat_model`: the ``compatibility`` entry, ``src`` its result record."""

    def label(runner_id: str) -> str:
        return runner_label(by_runner[runner_id]) if runner_id in by_runner else runner_id

    cell = dict(entry)
    cell["source"] = src
    cell["text"] = "🚧 broken" if entry.get("broken") else outcome_text(entry["outcome"], entry["kind"])
    cell["words"] = cell_words(entry["outcome"], entry["kind"], bool(entry.get("broken")))
    warn = _warning_text(src) if entry["outcome"] == "pass" else ""
    cell["warn"] = notes.ref("w", warn) if warn else None
    cell["disagree_note"] = None
    if entry.get("disagree"):
        others = "; ".join(f"{label(d['runner'])}: {outcome_text(d['outcome'], d['kind'])}" for d in entry["disagree"])
        cell["disagree_note"] = notes.ref(
            "d", f"{entry['case']} on {entry['platform']} ({entry['method']}): other runners of this platform "
                 f"observed {others}")
    detail = src.get("root_cause") or src.get("message") or ""
    cell["source_label"] = label(entry["runner"])
    cell["tip"] = (f"{entry['provenance']} on {cell['source_label']} ({entry['method']})"
                   + (f": {detail}" if detail else ""))
    return cell


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cost_model(matrix: JSONObject) -> JSONObject:
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
    passed: dict[tuple[str, str], list[JSONObject]] = defaultdict(list)
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


def runner_model(matrix: JSONObject, notes: Notes | None = None) -> list[JSONObject]:
    """The explicit-method view: one table per runner, rows are cases, columns are methods.

    Returns:
        ``[{"runner", "label", "methods", "rows": [{"id", "meta", "family", "cells": [...]}]}]``;
        each cell is the result record plus ``text``, ``warn`` (footnote key or ``None``) and
        ``cost`` (a short cost line for passing cells), or ``None`` when the case was not run.
    """
    notes = notes if notes is not None else Notes()
    index = _index(matrix)
    out = []
    for runner in matrix["runners"]:
        rid = runner["id"]
        methods = [m for m in METHODS if any(k[1] == rid and k[2] == m for k in index)]
        rows = []
        for cid, meta in _case_rows(matrix):
            if not any((cid, rid, m) in index for m in methods):
                continue
            cells: list[JSONObject | None] = []
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


def platform_provenance(plat: JSONObject, quote: Callable[[str], str] = code) -> str:
    """One line on where a compatibility column's cells come from (observed, emulated, predicted).

    Args:
        plat: an entry of the matrix's ``platforms``.
        quote: how a runner id or method is written: a Markdown code span by default;
            ``str`` for a page that escapes the whole line itself.
    """
    if plat["observed_runners"]:
        return "observed on " + ", ".join(quote(r) for r in plat["observed_runners"])
    if plat.get("emulated_runners"):
        return (f"no runner of its own; emulated ({EMULATED_MARK}) on "
                + ", ".join(quote(r) for r in plat["emulated_runners"])
                + " with its profile (start methods "
                + ", ".join(quote(m) for m in plat["methods"])
                + f"; torch {quote(plat.get('sharing_strategy', 'file_descriptor'))} sharing)")
    return f"no runner; every cell predicted ({PREDICTED_MARK}) from {plat['default_method']} on another runner"
