"""Where each case breaks by default: the compatibility view in a small file that ships with the package.

The pytest guard and ``harness diagnose`` run in a user's project, where the repository's
``reports/`` folder is not; they still quote the committed matrix. ``python -m
harness.report.breaks`` merges the committed shards (``reports/shards/``), takes their
compatibility view (:func:`harness.report.platforms.compatibility`: per case and per platform
column, the outcome under that platform's default start method, ``observed``, ``emulated``
or ``predicted``), and writes it to :func:`breaks_file`, ``breaks.json`` in the built-in
catalogue's package (the catalogue's observations stay with the catalogue; the harness names
no case); ``tests/unit/test_breaks.py`` fails when the file is not what the committed shards give.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["breaks_data", "breaks_file", "breaks_for", "default_view_lines", "describe_breaks", "main"]


def breaks_file() -> Path:
    """The packaged view, ``breaks.json`` beside the built-in catalogue's cases: ``{"runners":
    [ids], "cases": {case: [{"platform", "method", "outcome", "kind", "provenance", "runner"}]}}``.

    Raises:
        CatalogueError: the built-in catalogue is not installed.
    """
    from harness.catalogue.discover import default_catalogue_dir

    return default_catalogue_dir() / "breaks.json"

#: How each platform column is named in a finding.
_TITLES = {
    "windows": "Windows",
    "macos": "macOS",
    "linux-py>=3.14": "Linux, Python 3.14+",
    "linux-py<=3.13": "Linux, Python 3.13 and older",
}


def breaks_data(shard_dir: Path) -> dict[str, Any]:
    """The view of the shards in ``shard_dir``, as :data:`BREAKS_FILE` holds it."""
    from harness.report.merge import load_shards, merge
    from harness.report.platforms import compatibility

    shards, rejected = load_shards(shard_dir)
    matrix = merge(shards, rejected)
    cells = compatibility(matrix["runners"], matrix["results"])
    cases: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        cases.setdefault(cell["case"], []).append(
            {k: cell[k] for k in ("platform", "method", "outcome", "kind", "provenance", "runner")})
    return {"runners": sorted(r["id"] for r in matrix["runners"]), "cases": cases}


@functools.lru_cache(maxsize=1)
def _packaged() -> dict[str, Any]:
    from harness.errors import CatalogueError

    try:
        data = json.loads(breaks_file().read_text(encoding="utf-8"))
    except (OSError, ValueError, CatalogueError):
        return {"cases": {}}
    return data if isinstance(data, dict) and isinstance(data.get("cases"), dict) else {"cases": {}}


def breaks_for(case_id: str) -> list[dict[str, Any]]:
    """The packaged cells of ``case_id`` whose outcome is not ``pass`` (``[]``: none, or unknown)."""
    cells = _packaged()["cases"].get(case_id) or []
    return [c for c in cells if isinstance(c, dict) and c.get("outcome") not in ("pass", None)]


def describe_breaks(case_id: str) -> str:
    """``Windows (spawn: error/pickle, emulated); Linux, Python 3.14+ (forkserver: error/pickle,
    observed)``, or ``""`` when the committed matrix shows it failing nowhere by default."""
    parts = []
    for c in breaks_for(case_id):
        outcome = f"{c['outcome']}/{c['kind']}" if c.get("kind") else str(c["outcome"])
        parts.append(f"{_TITLES.get(c['platform'], c['platform'])} ({c['method']}: {outcome}, {c['provenance']})")
    return "; ".join(parts)


def default_view_lines(case_id: str) -> list[str]:
    """The packaged default view of ``case_id``, one line per platform column:
    ``Windows (spawn): error/pickle, emulated on linux-x86_64-py3.11-torch2.13.0+cpu-as-windows``.

    What ``harness explain`` shows where no ``reports/matrix.json`` is at hand (an installed
    package, a user's project); ``[]`` for a case the packaged view does not hold.
    """
    lines = []
    for c in _packaged()["cases"].get(case_id) or []:
        if not isinstance(c, dict) or "platform" not in c:
            continue
        outcome = f"{c.get('outcome')}/{c['kind']}" if c.get("kind") else str(c.get("outcome"))
        lines.append(f"{_TITLES.get(c['platform'], c['platform'])} ({c.get('method')}): {outcome}, "
                     f"{c.get('provenance')} on {c.get('runner')}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.report.breaks [SHARD_DIR]``: rewrite :func:`breaks_file` (default
    shards: ``reports/shards``)."""
    args = sys.argv[1:] if argv is None else argv
    shard_dir = Path(args[0]) if args else Path("reports/shards")
    data = breaks_data(shard_dir)
    path = breaks_file()
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{path}: {len(data['cases'])} cases from {len(data['runners'])} runners")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
