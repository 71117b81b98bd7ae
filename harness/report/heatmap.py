"""``matrix.png``: the matrix as a heatmap, faster to read than the table.

Left panel: the compatibility view (rows are cases, one column per platform default); predicted
cells are drawn lighter and hatched. Right panel: every start method on one runner per platform
(the newest observed there). Colour is the outcome, the label in a cell is the error kind.

matplotlib is an optional extra (``pip install 'dataloader-start-harness[plot]'``); without it
:func:`render_heatmap` draws nothing and says so.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness._escape import visible
from harness.child.fileio import write_atomic
from harness.classify.outcomes import METHODS
from harness.report import JSONObject

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

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


def _explicit_runners(matrix: JSONObject) -> list[JSONObject]:
    """One runner per platform column (the newest observed there, else the newest emulating
    it), in column order."""
    by_id = {r["id"]: r for r in matrix["runners"]}
    chosen = []
    for p in matrix["platforms"]:
        ids = p["observed_runners"] or p.get("emulated_runners", [])
        if ids and by_id[ids[0]] not in chosen:
            chosen.append(by_id[ids[0]])
    return chosen or matrix["runners"][:1]


@dataclass(frozen=True)
class _Layout:
    """Rows and columns of the picture, in data units (one cell is 1 × 1)."""

    cases: list[str]  # rows, by family then id
    families: list[str]  # each row's family
    platforms: list[JSONObject]  # left panel: one column per platform default
    explicit: list[JSONObject]  # right panel: one runner per platform
    columns: list[tuple[JSONObject, str]]  # right panel: (runner, start method) per column

    @property
    def rows(self) -> int:
        return len(self.cases)

    @property
    def left_width(self) -> int:
        return len(self.platforms)

    @property
    def right_x(self) -> float:
        return self.left_width + _GAP

    @property
    def width(self) -> float:
        return self.right_x + len(self.columns)


_GAP = 0.7  # between the panels
_HEADER = 3.4  # rows of space above the first case for titles and column labels
_UNIT_W, _UNIT_H = 0.8, 0.3  # inches per column, per row


def _layout(matrix: JSONObject) -> _Layout:
    index = {(r["case"], r["runner"], r["method"]) for r in matrix["results"]}
    family = {cid: meta.get("family", "") for cid, meta in matrix["cases"].items()}
    cases = sorted({r["case"] for r in matrix["results"]}, key=lambda c: (family.get(c, ""), c))
    explicit = _explicit_runners(matrix)
    columns = [(r, m) for r in explicit for m in METHODS if any((c, r["id"], m) in index for c in cases)]
    return _Layout(cases, [family.get(c, "") for c in cases], matrix["platforms"], explicit, columns)


def _figure(plt: Any, lay: _Layout) -> tuple[Figure, Axes]:
    """A figure sized to the grid: case ids on the left, a row of titles above, the legend below."""
    label_w = 0.3 + 0.062 * max((len(c) for c in lay.cases), default=10)
    fig_w = label_w + _UNIT_W * lay.width + 0.3
    fig_h = _UNIT_H * (lay.rows + _HEADER) + 0.55
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((label_w / fig_w, 0.5 / fig_h, _UNIT_W * lay.width / fig_w,
                       _UNIT_H * (lay.rows + _HEADER) / fig_h))
    return fig, ax


def _draw_cell(ax: Axes, col: float, row: int, cell: JSONObject | None, provenance: str) -> None:
    """One square: the outcome's colour (lighter and hatched unless observed), the label on it."""
    from matplotlib.patches import Rectangle

    if cell is None:
        ax.add_patch(Rectangle((col, row), 1, 1, facecolor="white", edgecolor="#d0d7de", linewidth=0.6))
        ax.text(col + 0.5, row + 0.5, "·", ha="center", va="center", fontsize=8, color="#8c959f")
        return
    outcome, broken = cell["outcome"], bool(cell.get("broken"))
    base = COLOURS["broken" if broken else outcome]
    face = _lighter(base) if provenance != "observed" else base
    ax.add_patch(Rectangle((col, row), 1, 1, facecolor=face, edgecolor="white", linewidth=1.2,
                           hatch={"predicted": "////", "emulated": "...."}.get(provenance)))
    label = _label(outcome, cell["kind"], broken)
    if label:
        dark = outcome in ("skipped", "unsupported", "wrong", "hang") or provenance != "observed"
        ax.text(col + 0.5, row + 0.5, _plain(label), ha="center", va="center", fontsize=6.5,
                color="#1b1f24" if dark else "white", style="italic" if provenance == "predicted" else "normal")


def _draw_cells(ax: Axes, lay: _Layout, matrix: JSONObject) -> None:
    """Each case's row: its compatibility cells on the left, its explicit cells on the right."""
    index = {(r["case"], r["runner"], r["method"]): r for r in matrix["results"]}
    compat = {(c["case"], c["platform"]): c for c in matrix["compatibility"]}
    for i, cid in enumerate(lay.cases):
        for j, plat in enumerate(lay.platforms):
            cell = compat.get((cid, plat["id"]))
            _draw_cell(ax, j, i, cell, cell["provenance"] if cell is not None else "observed")
        for j, (runner, method) in enumerate(lay.columns):
            _draw_cell(ax, lay.right_x + j, i, index.get((cid, runner["id"], method)),
                       "emulated" if runner.get("emulates") else "observed")


def _draw_frame(ax: Axes, lay: _Layout) -> None:
    """A thin rule between families across both panels, the case ids, no axes of numbers."""
    for i in range(1, lay.rows):
        if lay.families[i] != lay.families[i - 1]:
            for a, b in ((0, lay.left_width), (lay.right_x, lay.width)):
                ax.plot([a, b], [i, i], color="#1b1f24", linewidth=0.9, clip_on=False, zorder=3)
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.rows, -_HEADER)
    ax.set_xticks([])
    ax.set_yticks([i + 0.5 for i in range(lay.rows)], [_plain(c) for c in lay.cases], fontsize=7.5)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _draw_headers(ax: Axes, lay: _Layout) -> None:
    """Panel titles and column headers, drawn in data coordinates above row 0."""
    ax.text(lay.left_width / 2, -_HEADER + 0.2, "What you get by default", ha="center", va="top", fontsize=9,
            weight="bold")
    for j, plat in enumerate(lay.platforms):
        pid: str = plat["id"]
        text = _SHORT_TITLES.get(pid, pid) + "\n" + plat["default_method"]
        if not plat["observed_runners"]:
            text += "\n(emulated)" if plat.get("emulated_runners") else "\n(predicted)"
        ax.text(j + 0.5, -0.15, text, ha="center", va="bottom", fontsize=6.8,
                style="normal" if plat["observed_runners"] else "italic")
    if not lay.columns:
        return
    ax.text(lay.right_x + len(lay.columns) / 2, -_HEADER + 0.2, "Every start method (one runner per platform)",
            ha="center", va="top", fontsize=9, weight="bold")
    col = lay.right_x
    for r in lay.explicit:
        span = sum(1 for rr, _ in lay.columns if rr is r)
        if col > lay.right_x:
            ax.plot([col, col], [-1.6, lay.rows], color="#1b1f24", linewidth=1.0, clip_on=False)
        as_ = f" as {r['emulates']}" if r.get("emulates") else ""
        ax.text(col + span / 2, -1.25, _plain(f"{r['os']}{as_} py{'.'.join(r['python'].split('.')[:2])}\n"
                                              f"torch {r['torch'].split('+')[0]}"), ha="center", va="bottom", fontsize=6.8)
        col += span
    for j, (_, m) in enumerate(lay.columns):
        ax.text(lay.right_x + j + 0.5, -0.15, m, ha="center", va="bottom", fontsize=6.8)


def _draw_legend(fig: Figure) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=COLOURS[o], label=o) for o in
               ("pass", "wrong", "error", "hang", "crash", "unsupported", "skipped", "broken")]
    handles.append(Patch(facecolor=_lighter(COLOURS["pass"]), hatch="....", label="emulated"))
    handles.append(Patch(facecolor=_lighter(COLOURS["pass"]), hatch="////", label="predicted"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=6.8, frameon=False,
               bbox_to_anchor=(0.5, 0.0), handlelength=1.2, columnspacing=1.0)


def _save(plt: Any, fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` atomically (a temporary file in the same folder, then a rename),
    with the permissions a new file gets under the umask; close the figure either way."""
    def draw(tmp: str) -> None:
        with warnings.catch_warnings():  # a case id in a script no font has is drawn as boxes, quietly
            warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
            fig.savefig(tmp, dpi=130, format="png")

    try:
        write_atomic(path, draw)
    finally:
        plt.close(fig)


def _pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the Agg backend (no display), or ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def render_heatmap(matrix: JSONObject, path: Path) -> bool:
    """Draw the heatmap of ``matrix`` to the PNG file ``path`` (written atomically).

    Returns:
        ``True`` when the file was written; ``False`` when matplotlib is not installed (then
        nothing is written and a stale ``path`` is removed, so no old picture outlives its data).
    """
    path = Path(path)
    plt = _pyplot()
    if plt is None:
        path.unlink(missing_ok=True)
        return False
    lay = _layout(matrix)
    fig, ax = _figure(plt, lay)
    _draw_cells(ax, lay, matrix)
    _draw_frame(ax, lay)
    _draw_headers(ax, lay)
    _draw_legend(fig)
    _save(plt, fig, path)
    return True
