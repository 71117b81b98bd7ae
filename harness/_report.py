"""``harness report``: merge shards → write matrix.json, COMPATIBILITY.md and matrix.html."""

from __future__ import annotations

import sys
from pathlib import Path

from harness._merge import load_shards, merge
from harness._render import render_html, render_markdown
from harness._shard import write_json_atomic

__all__ = ["write_report"]


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_report(shard_dir: Path, out_dir: Path) -> int:
    """Merge every shard in ``shard_dir`` and write the report files into ``out_dir``.

    Returns:
        0 when every shard was valid and every cell matched its expectation; 1 when some
        observed cell contradicts its expectation; 2 when any shard was rejected (each is
        named on stderr) or no valid shard was found. The report still covers the valid shards.
    """
    shards, rejected = load_shards(Path(shard_dir))
    for line in rejected:
        print(f"harness report: rejected {line}", file=sys.stderr)
    if not shards:
        print(f"harness report: no valid shard in {shard_dir}; run 'harness run' first", file=sys.stderr)
        return 2
    matrix = merge(shards, rejected)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "matrix.json", matrix)
    _write_text(out / "COMPATIBILITY.md", render_markdown(matrix))
    _write_text(out / "matrix.html", render_html(matrix))
    mismatches = [r for r in matrix["results"] if not r["matches"]]
    print(f"harness report: {len(shards)} shard(s), {len(matrix['results'])} cells, "
          f"{len(mismatches)} contradict expectations → {out}/matrix.json, COMPATIBILITY.md, matrix.html")
    if rejected:
        return 2
    return 1 if mismatches else 0
