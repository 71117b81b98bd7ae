"""Rendering: Markdown and HTML lead with the default view, mark predictions, show costs and
warnings, escape messages; the job summary stays under its limit; the heatmap is optional."""

from __future__ import annotations

import re
import statistics
import struct
import sys
from pathlib import Path

import pytest
from _shards import derive, linux_shard, windows_shard, write

from harness.report.heatmap import render_heatmap
from harness.report.markdown import render_markdown
from harness.report.merge import merge
from harness.report.page import render_html
from harness.report.summary import render_summary
from harness.report.views import fmt_bytes, fmt_seconds

WARNED = "dataset-open-file-lazy"  # its in-process control really passed with a ResourceWarning


@pytest.fixture(scope="module")
def matrix() -> dict:
    linux = linux_shard()
    return merge([(Path("linux.json"), linux), (Path("windows.json"), windows_shard(linux))])


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_units():
    assert fmt_seconds(None) == "–" and fmt_seconds(0.0641) == "64 ms" and fmt_seconds(0.0012) == "1.2 ms"
    assert fmt_seconds(7.5184) == "7.52 s"
    assert fmt_bytes(0) == "–" and fmt_bytes(163033088) == "155 MiB" and fmt_bytes(4513792) == "4.3 MiB"
    assert fmt_bytes(3 * 2**30) == "3.00 GiB"


def test_markdown_leads_with_the_default_view_and_marks_predictions(matrix):
    md = render_markdown(matrix)
    headings = re.findall(r"^## (.+)$", md, flags=re.M)
    assert headings[0] == "What you get by default"
    assert headings.index("Every start method, per runner") > headings.index("Cost per start method")
    table = [ln for ln in _section(md, "What you get by default").splitlines() if ln.startswith("| `")]
    row = next(ln for ln in table if ln.startswith("| `transform-lambda` "))
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    # columns: case, linux<=3.13 (observed fork), linux>=3.14 (predicted), macOS (predicted), Windows (observed)
    assert cells[1] == "✅"
    assert cells[2] == "*❌ pickle* †" and cells[3] == "*❌ pickle* †"
    assert cells[4] == "❌ pickle"
    assert "† predicted" in md


def test_warning_text_reaches_a_footnote(matrix):
    md = render_markdown(matrix)
    rec = next(r for r in matrix["results"] if r["case"] == WARNED and r["method"] == "in-process")
    assert rec["outcome"] == "pass" and rec["warnings"]
    row = next(ln for ln in md.splitlines() if ln.startswith(f"| `{WARNED}` | resources | "))
    key = re.search(r"⚡\[\^(w\d+)\]", row).group(1)
    note = next(ln for ln in md.splitlines() if ln.startswith(f"[^{key}]: "))
    assert "ResourceWarning: unclosed file" in note and "&lt;_io.BufferedReader" in note
    html = render_html(matrix)
    assert f'id="{key}"' in html and "ResourceWarning: unclosed file &lt;_io.BufferedReader" in html


def test_cost_table_shows_medians_of_passing_cells_in_human_units(matrix):
    md = render_markdown(matrix)
    linux = linux_shard()
    fork = [r for r in linux["results"] if r["method"] == "fork" and r["outcome"] == "pass"]
    row = next(ln for ln in _section(md, "Cost per start method").splitlines()
               if ln.startswith("| linux py3.11 torch2.13.0 | fork |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == str(len(fork))
    assert cells[3] == fmt_seconds(statistics.median(r["first_batch_s"] for r in fork))
    assert cells[5] == fmt_bytes(statistics.median(r["worker_peak_rss_bytes"] for r in fork))
    assert cells[5].endswith("MiB") and cells[6].endswith("MiB")
    # fork workers share the parent's pages: their unique memory is far below their RSS.
    assert statistics.median(r["worker_peak_uss_bytes"] for r in fork) < statistics.median(
        r["worker_peak_rss_bytes"] for r in fork) / 4


def test_html_leads_with_default_view_marks_predicted_and_escapes(matrix):
    html = render_html(matrix)
    assert html.index('id="default"') < html.index('id="cost"') < html.index('id="explicit"')
    default = html[html.index('id="default"'):html.index('id="cost"')]
    predicted = re.findall(r'<td class="cell [a-z-]+ predicted"', default)
    observed = re.findall(r'<td class="cell [a-z-]+ observed[ "]', default)
    n = len({r["case"] for r in matrix["results"]})
    assert len(predicted) == 2 * n and len(observed) == 2 * n
    assert "<script" not in html and "<style>" in html


def test_html_needs_no_emoji_font(matrix):
    """Every outcome is shown in words: a machine without an emoji font showed only empty boxes."""
    html = render_html(matrix)
    emoji = [ch for ch in html if (ord(ch) >= 0x2190 or ch == "‼") and ch not in "†‡≠·–—…≤≥→←"]
    assert not emoji, sorted(set(emoji))
    assert "error: pickle" in html and ">pass<" in html.replace("\n", "")


def test_summary_full_then_short_forms(matrix):
    full = render_summary(matrix)
    assert len(full.encode()) < 8000 and "| `transform-lambda` |" in full and "| `transform-toplevel-def` |" in full
    short = render_summary(matrix, limit_bytes=len(full.encode()) - 1)
    assert len(short.encode()) <= len(full.encode()) - 1
    assert "Short form" in short and "| `transform-lambda` |" in short
    assert "| `transform-toplevel-def` |" not in short  # passes everywhere: dropped in the short form
    limit = len(short.encode()) - 1
    counts = render_summary(matrix, limit_bytes=limit)
    assert len(counts.encode()) <= limit and "counts per platform" in counts
    assert "| Windows (spawn) | 8 | 0 | 0 |" in counts  # 8 cases observed on Windows, none emulated or predicted
    with pytest.raises(ValueError):
        render_summary(matrix, limit_bytes=100)


def test_report_summary_option_appends(tmp_path, cli):
    write(tmp_path / "shards" / "linux.json", linux_shard())
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step output\n", encoding="utf-8")
    assert cli.main("report", "--shards", str(tmp_path / "shards"), "--out", str(tmp_path / "out"),
                    "--summary", str(summary)).returncode == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step output\n### DataLoader start-method compatibility")
    assert "No observed cell contradicts its expectation." in text


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_heatmap_png(matrix, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "matrix.png"
    assert render_heatmap(matrix, out) is True
    width, height = _png_size(out)
    n = len({r["case"] for r in matrix["results"]})
    assert width > height and height > 40 * n  # one row per case, readable at 130 dpi


def test_report_without_matplotlib_skips_png_with_a_note(tmp_path, monkeypatch, cli):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    out = tmp_path / "out"
    out.mkdir()
    (out / "matrix.png").write_bytes(b"stale")
    write(tmp_path / "shards" / "linux.json", linux_shard())
    rc, _, err = cli.main("report", "--shards", str(tmp_path / "shards"), "--out", str(out))
    assert rc == 0
    assert "matrix.png skipped: matplotlib is not installed" in err
    assert not (out / "matrix.png").exists()
    assert "<img" not in (out / "matrix.html").read_text(encoding="utf-8")
    assert (out / "junit.xml").exists() and (out / "COMPATIBILITY.md").exists()


def test_disagreement_and_broken_cases_are_spelled_out():
    old = derive(linux_shard(), os_name="linux", python="3.10.14", torch="2.9.1+cpu")
    for rec in old["results"]:
        if rec["case"] == "transform-lambda" and rec["method"] == "fork":
            rec.update(outcome="hang", kind=None, matches=False)
        if rec["case"] == "transform-local-def":
            rec.update(broken=True, matches=False)
    matrix = merge([(Path("old.json"), old), (Path("new.json"), linux_shard())])
    for text in (render_markdown(matrix), render_summary(matrix)):
        row = next(ln for ln in text.splitlines() if ln.startswith("| `transform-lambda` |"))
        key = re.search(r"≠\[\^(d\d+)\]", row).group(1)
        note = next(ln for ln in text.splitlines() if ln.startswith(f"[^{key}]: "))
        assert "linux py3.10 torch2.9.1: ⏳ hang" in note
    summary = render_summary(matrix)
    assert "🚧 `transform-local-def` on `linux-x86_64-py3.10-torch2.9.1+cpu`: broken case" in summary
    assert "‼ `transform-lambda` [fork] on `linux-x86_64-py3.10-torch2.9.1+cpu`: expected pass, observed hang" in summary
