"""``matrix.html``: the matrix as a self-contained page (inline CSS, no scripts).

The page is rendered from ``html/matrix.html.j2`` with the same views as the Markdown document
(:mod:`harness.report.views`). Every shard string is untrusted text: each value is escaped by
jinja2's autoescape (attributes included) after :func:`~harness._escape.visible` has spelled
out control characters and lone surrogates. Outcomes are words rather than emoji symbols, so
the page reads the same on a machine without an emoji font.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import markupsafe

from harness._escape import visible
from harness.report import JSONObject
from harness.report.views import (
    EMULATED_MARK,
    LEGEND,
    OUTCOME_WORDS,
    PLATFORM_TITLES,
    PREDICTED_MARK,
    Notes,
    breaks_model,
    compat_model,
    cost_model,
    fmt_cost,
    platform_provenance,
    runner_model,
)

__all__ = ["render_html"]


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


def _provenance(plat: JSONObject) -> str:
    return platform_provenance(plat, quote=str)


def render_html(matrix: JSONObject, heatmap: str | None = None) -> str:
    """``matrix.html``: a self-contained page (inline CSS, no scripts); every message escaped.

    Args:
        matrix: the merged matrix document.
        heatmap: file name of the heatmap image next to the page, or ``None`` when none was drawn.
    """
    notes = Notes()
    compat = compat_model(matrix, notes)
    views = runner_model(matrix, notes)
    return _ENV.get_template("matrix.html.j2").render(
        matrix=matrix,
        compat=compat,
        breaks=breaks_model(compat),
        views=views,
        cost=cost_model(matrix),
        notes=notes.items,
        legend=LEGEND,
        titles=PLATFORM_TITLES,
        fmt=fmt_cost,
        heatmap=heatmap,
        predicted_mark=PREDICTED_MARK,
        emulated_mark=EMULATED_MARK,
        words=OUTCOME_WORDS,
        provenance=_provenance,
    )
