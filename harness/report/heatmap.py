"""``matrix.png``: the matrix as a heatmap, faster to read than the table.

Left panel: the compatibility view (rows are cases, one column per platform default); predicted
cells are drawn lighter and hatched. Right panel: every start method on one runner per platform
(the newest observed there). Colour is the outcome, the label in a cell is the error kind.

matplotlib is an optional extra (``pip install 'dataloader-start-harness[plot]'``); without it
:func:`render_heatmap` draws nothing and says so.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

from harness._escape import visible
from harness._fileio import replace_file
from harness._outcomes import METHODS

__all__ = ["COLOURS", "MISSING_NOTE", "render_heatmap"]

#: Outcome colours (shared with the HTML page's hues, stronger so they survive hatching).
COLOURS = {
    "pass": "#2da44e",
    "wrong": "#d4a72c",
    "error": "#cf222e",
    "hang": "#fb8f44",
    "crash": "#8250df",
    "unsupported": "#afb8c1",
    "skipped": "#d0d7de",
    "broken": "#6e7781",
}

MISSING_NOTE = ("matrix.png skipped: matplotlib is not installed "
                "(pip install 'dataloader-start-harness[plot]')")

_SHORT_TITLES = {
    "linux-py<=3.13": "Linux\nPy ≤ 3.13",
    "linux-py>=3.14": "Linux\nPy ≥ 3.14",
    "macos": "macOS",
    "windows": "Windows",
}

_KIND_LABELS = {
    "pickle": "pickle",
    "main-attribute": "main-attr",
    "bootstrap": "bootstrap",
    "worker-died": "died",
    "worker-exception": "worker-exc",
    "context-mix": "ctx-mix",
    "cuda-reinit": "cuda",
    "daemonic": "daemonic",
    "import": "import",
    "other": "other",
}


def _lighter(hex_colour: str, amount: float = 0.55) -> tuple[float, float, float]:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _plain(text: str) -> str:
    """Shard text as matplotlib draws it literally: no mathtext (``$``), no lone surrogate."""
    return visible(text).replace("$", r"\$")


def _label(outcome: str, kind: str | None, broken: bool) -> str:
    if broken:
        return "broken"
    if outcome == "pass":
        return ""
    if outcome == "error":
        return _KIND_LABELS.get(kind or "", kind or "error")
    if outcome == "unsupported":
        return "n/a"
    return outcome


def _explicit_runners(matrix: dict) -> list[dict]:
    """One runner per platform column (the newest observed there, else the newest emulating
    it), in column order."""
    by_id = {r["id"]: r for r in matrix["runners"]}
    chosen = []
    for p in matrix["platforms"]:
        ids = p["observed_runners"] or p.get("emulated_runners", [])
        if ids and by_id[ids[0]] not in chosen:
            chosen.append(by_id[ids[0]])
    return chosen or matrix["runners"][:1]


def render_heatmap(matrix: dict, path: Path) -> bool:
    """Draw the heatmap of ``matrix`` to the PNG file ``path`` (written atomically).

    Returns:
        ``True`` when the file was written; ``False`` when matplotlib is not installed (then
        nothing is written and a stale ``path`` is removed, so no old picture outlives its data).
    """
    path = Path(path)
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
    except ImportError:
        path.unlink(missing_ok=True)
        return False

    index = {(r["case"], r["runner"], r["method"]): r for r in matrix["results"]}
    compat = {(c["case"], c["platform"]): c for c in matrix["compatibility"]}
    cases = sorted({r["case"] for r in matrix["results"]},
                   key=lambda c: (matrix["cases"].get(c, {}).get("family", ""), c))
    platforms = matrix["platforms"]
    explicit = _explicit_runners(matrix)
    ex_cols = [(r, m) for r in explicit for m in METHODS
               if any((c, r["id"], m) in index for c in cases)]

    n = len(cases)
    left_w = len(platforms)
    gap = 0.7
    x0_right = left_w + gap
    width = x0_right + len(ex_cols)
    header = 3.4  # rows of space above the first case for titles and column labels
    unit_w, unit_h = 0.8, 0.3  # inches per column, per row
    label_w = 0.3 + 0.062 * max((len(c) for c in cases), default=10)
    fig_w = label_w + unit_w * width + 0.3
    fig_h = unit_h * (n + header) + 0.55
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((label_w / fig_w, 0.5 / fig_h, unit_w * width / fig_w, unit_h * (n + header) / fig_h))

    def draw(col: float, row: int, outcome: str | None, kind: str | None, broken: bool,
             provenance: str = "observed") -> None:
        if outcome is None:
            ax.add_patch(Rectangle((col, row), 1, 1, facecolor="white", edgecolor="#d0d7de", linewidth=0.6))
            ax.text(col + 0.5, row + 0.5, "·", ha="center", va="center", fontsize=8, color="#8c959f")
            return
        predicted = provenance == "predicted"
        base = COLOURS["broken" if broken else outcome]
        face = _lighter(base) if provenance != "observed" else base
        ax.add_patch(Rectangle((col, row), 1, 1, facecolor=face, edgecolor="white", linewidth=1.2,
                               hatch={"predicted": "////", "emulated": "...."}.get(provenance)))
        label = _label(outcome, kind, broken)
        if label:
            dark = outcome in ("skipped", "unsupported", "wrong", "hang") or provenance != "observed"
            ax.text(col + 0.5, row + 0.5, _plain(label), ha="center", va="center", fontsize=6.5,
                    color="#1b1f24" if dark else "white", style="italic" if predicted else "normal")

    for i, cid in enumerate(cases):
        for j, plat in enumerate(platforms):
            c = compat.get((cid, plat["id"]))
            if c is None:
                draw(j, i, None, None, False)
            else:
                draw(j, i, c["outcome"], c["kind"], bool(c.get("broken")), c["provenance"])
        for j, (runner, method) in enumerate(ex_cols):
            rec = index.get((cid, runner["id"], method))
            if rec is None:
                draw(x0_right + j, i, None, None, False)
            else:
                draw(x0_right + j, i, rec["outcome"], rec["kind"], bool(rec.get("broken")),
                     "emulated" if runner.get("emulates") else "observed")

    # A thin rule between families, across both panels.
    families = [matrix["cases"].get(c, {}).get("family", "") for c in cases]
    for i in range(1, n):
        if families[i] != families[i - 1]:
            for a, b in ((0, left_w), (x0_right, width)):
                ax.plot([a, b], [i, i], color="#1b1f24", linewidth=0.9, clip_on=False, zorder=3)
    ax.set_xlim(0, width)
    ax.set_ylim(n, -header)
    ax.set_xticks([])
    ax.set_yticks([i + 0.5 for i in range(n)], [_plain(c) for c in cases], fontsize=7.5)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    # Column headers, drawn in data coordinates above row 0.
    ax.text(left_w / 2, -header + 0.2, "What you get by default", ha="center", va="top", fontsize=9, weight="bold")
    for j, plat in enumerate(platforms):
        text = _SHORT_TITLES.get(plat["id"], plat["id"]) + "\n" + plat["default_method"]
        if not plat["observed_runners"]:
            text += "\n(emulated)" if plat.get("emulated_runners") else "\n(predicted)"
        ax.text(j + 0.5, -0.15, text, ha="center", va="bottom", fontsize=6.8,
                style="normal" if plat["observed_runners"] else "italic")
    if ex_cols:
        ax.text(x0_right + len(ex_cols) / 2, -header + 0.2, "Every start method (one runner per platform)",
                ha="center", va="top", fontsize=9, weight="bold")
        col = x0_right
        for r in explicit:
            span = sum(1 for rr, _ in ex_cols if rr is r)
            if col > x0_right:
                ax.plot([col, col], [-1.6, n], color="#1b1f24", linewidth=1.0, clip_on=False)
            as_ = f" as {r['emulates']}" if r.get("emulates") else ""
            ax.text(col + span / 2, -1.25, _plain(f"{r['os']}{as_} py{'.'.join(r['python'].split('.')[:2])}\n"
                                                  f"torch {r['torch'].split('+')[0]}"), ha="center", va="bottom", fontsize=6.8)
            col += span
        for j, (_, m) in enumerate(ex_cols):
            ax.text(x0_right + j + 0.5, -0.15, m, ha="center", va="bottom", fontsize=6.8)

    handles = [Patch(facecolor=COLOURS[o], label=o) for o in
               ("pass", "wrong", "error", "hang", "crash", "unsupported", "skipped", "broken")]
    handles.append(Patch(facecolor=_lighter(COLOURS["pass"]), hatch="....", label="emulated"))
    handles.append(Patch(facecolor=_lighter(COLOURS["pass"]), hatch="////", label="predicted"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=6.8, frameon=False,
               bbox_to_anchor=(0.5, 0.0), handlelength=1.2, columnspacing=1.0)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        with warnings.catch_warnings():  # a case id in a script no font has is drawn as boxes, quietly
            warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
            fig.savefig(tmp, dpi=130)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        replace_file(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True
