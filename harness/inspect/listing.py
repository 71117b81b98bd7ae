"""``harness list``: the catalogue as a table or as JSON (read without importing any case)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness._progress import say
from harness.catalogue.discover import open_catalogue

__all__ = ["list_cases"]


def list_cases(as_json: bool = False, catalogue_dir: Path | list[Path] | None = None) -> int:
    """Print the cases; 0 when every module was read, 2 when any could not be (each is named on
    stderr in one line, and the readable cases are still listed).

    Raises:
        CatalogueError: the catalogue cannot be opened (a missing directory, a bad ``[tool.harness]``).
    """
    cat = open_catalogue(catalogue_dir)
    for line in cat.errors:
        say(line, command="list")
    if as_json:
        json.dump([c.to_json() for c in cat.cases], sys.stdout, indent=1)
        print()
        return 2 if cat.errors else 0
    from rich.console import Console
    from rich.table import Table

    n_cases, n_families = len(cat.cases), len({c.family for c in cat.cases})
    table = Table(title=f"{n_cases} case{'' if n_cases == 1 else 's'} in {n_families} "
                        f"famil{'y' if n_families == 1 else 'ies'}")
    for col in ("id", "family", "fork", "spawn", "forkserver", "fix"):
        table.add_column(col)
    for c in sorted(cat.cases, key=lambda c: (c.family, c.id)):
        table.add_row(c.id, c.family, c.expect["fork"], c.expect["spawn"], c.expect["forkserver"], c.fix or "")
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    return 2 if cat.errors else 0
