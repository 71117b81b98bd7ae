"""Progress display for ``harness run``: a rich bar with ETA on a terminal, plain lines elsewhere."""

from __future__ import annotations

import os
import sys

__all__ = ["Progress"]


def _line(rec: dict) -> str:
    kind = f" ({rec['kind']})" if rec.get("kind") else ""
    mark = "" if rec["matches"] else "  <-- expected " + rec["expected"]
    dur = rec.get("wall_s")
    took = f" {dur:.1f}s" if dur is not None else ""
    return f"{rec['case']} [{rec['method']}]: {rec['outcome']}{kind}{took}{mark}"


class Progress:
    """Context manager reporting each finished cell.

    On an interactive terminal (and not under CI) it shows a rich progress bar with ETA;
    otherwise it prints one plain line per cell, and in CI (``CI`` set) only the cells that
    contradict their expectation, to keep logs quiet.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.ci = bool(os.environ.get("CI"))
        self.interactive = sys.stderr.isatty() and not self.ci
        self._bar = None
        self._task = None

    def __enter__(self) -> Progress:
        if self.interactive:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(),
                                     TimeRemainingColumn(), TextColumn("{task.description}"),
                                     transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        return self

    def advance(self, rec: dict) -> None:
        """Record one finished cell."""
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=_line(rec))
            if not rec["matches"]:
                self._bar.console.print(f"[red]{_line(rec)}")
        elif not self.ci or not rec["matches"]:
            print(f"[{self.done}/{self.total}] {_line(rec)}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
