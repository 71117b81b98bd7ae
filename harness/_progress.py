"""Progress display for ``harness run``: a rich bar with ETA on a terminal, quiet lines in CI.

The ETA weighs cells by their expected length (:func:`harness.run.schedule.estimate`), not by
their count: a spawn cell takes ten times a fork cell, and longest-first scheduling runs the
long ones first, so a count-based rate would promise far too much at the start.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

from harness._escape import terminal
from harness.classify.outcomes import outcome_label

if TYPE_CHECKING:  # pragma: no cover - rich is imported only for a terminal
    from rich.progress import Progress as RichProgress
    from rich.progress import Task, TaskID

__all__ = ["Progress", "say"]

#: In CI, one summary line each time this fraction of the expected work is done.
CI_STEP = 0.1


def say(text: str, *, command: str | None = None, stream: TextIO | None = None) -> bool:
    """Print one line of the harness's output: the one printer of every ``harness`` command.

    The line is made safe for a terminal and kept on one line
    (:func:`harness._escape.terminal` with ``one_line``): names and messages may come from
    user code or another machine's shard.

    Output never stops a command: a closed pipe (``harness run 2>&1 | head -1``) or any other
    error writing it is swallowed.

    Args:
        text: what to say.
        command: say it as a message of that ``harness`` command,
            ``harness <command>: <text>`` (``""``: ``harness: <text>``); ``None``: the text alone.
        stream: where to write it (default: ``sys.stderr`` at the time of the call).

    Returns:
        Whether the line was written.
    """
    stream = sys.stderr if stream is None else stream
    if command is not None:
        text = f"harness{' ' if command else ''}{command}: {text}"
    try:
        print(terminal(text, one_line=True), file=stream, flush=True)
        return True
    except (OSError, ValueError):
        _silence(stream)
        return False


def _silence(stream: TextIO) -> None:
    """Point a broken stream's file descriptor at the null device, so that the interpreter's
    final flush cannot fail too (which would make the exit status 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _line(rec: dict[str, Any]) -> str:
    outcome = outcome_label(rec["outcome"], rec.get("kind"), "{outcome} ({kind})")
    mark = "" if rec["matches"] else "  <-- expected " + rec["expected"]
    dur = rec.get("wall_s")
    took = f" {dur:.1f}s" if dur is not None else ""
    return terminal(f"{rec['case']} [{rec['method']}]: {outcome}{took}{mark}", one_line=True)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """Context manager reporting each finished cell.

    * On an interactive terminal (and not in CI): a rich progress bar with the cell count,
      elapsed time and ETA; cells that contradict their expectation are printed above it.
    * In CI (``CI`` set): only contradicting cells, plus one summary line per
      :data:`CI_STEP` of the expected work, so logs stay short.
    * Otherwise (a pipe, a file): one plain line per cell.

    Args:
        total: number of cells to run.
        expected_s: expected seconds of each cell, in any order (default: 1 s each); only
            their sum and each finished cell's share matter.
        done: cells already finished (a resumed run), shown as done.
        jobs: cells run at once, for the ETA before the first cell ends.
    """

    def __init__(self, total: int, expected_s: list[float] | None = None, done: int = 0,
                 jobs: int = 1) -> None:
        self.total = total + done
        self.done = done
        self.work_total = sum(expected_s) if expected_s else float(total)
        self.work_done = 0.0
        self.jobs = max(1, jobs)
        self.ci = bool(os.environ.get("CI"))
        self.interactive = sys.stderr.isatty() and not self.ci
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        self._t0 = time.monotonic()
        self._next_ci = CI_STEP
        self._quiet = False

    def eta_s(self) -> float | None:
        """Seconds left: the expected work still to do at the work rate so far.

        Before the first cell ends, the expected work over ``jobs``; ``None`` with nothing
        expected.
        """
        elapsed = time.monotonic() - self._t0
        left = max(0.0, self.work_total - self.work_done)
        if self.work_done <= 0 or elapsed <= 0:
            return left / self.jobs if self.work_total else None
        return left * elapsed / self.work_done

    def __enter__(self) -> Progress:
        self._t0 = time.monotonic()
        if self.interactive:
            from rich.console import Console
            from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
            from rich.text import Text

            outer = self

            class _Eta(ProgressColumn):
                """The ETA, recomputed at every refresh (it grows while a long cell runs)."""

                def render(self, task: Task) -> Text:  # noqa: ARG002 - one task
                    eta = outer.eta_s()
                    return Text(f"ETA {_clock(eta) if eta is not None else '?'}", style="cyan")

            self._bar = RichProgress(
                TextColumn("[bold]cells"), BarColumn(), TextColumn("{task.fields[cells]}"),
                TimeElapsedColumn(), _Eta(), TextColumn("{task.description}", markup=False),
                transient=False, refresh_per_second=4, console=Console(stderr=True),
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=max(self.work_total, 1e-9),
                                            cells=f"{self.done}/{self.total}")
        return self

    def advance(self, rec: dict[str, Any], expected_s: float = 1.0) -> None:
        """Record one finished cell that was expected to take ``expected_s`` seconds.

        Output errors (a closed stderr pipe) end the display, never the run.
        """
        self.done += 1
        self.work_done += expected_s
        if self._quiet:
            return
        try:
            self._show(rec)
        except (OSError, ValueError):
            self._quiet = True
            _silence(sys.stderr)

    def _show(self, rec: dict[str, Any]) -> None:
        eta = self.eta_s()
        eta_text = _clock(eta) if eta is not None else "?"
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.work_done, description=_line(rec),
                             cells=f"{self.done}/{self.total}")
            if not rec["matches"]:
                self._bar.console.print(_line(rec), style="red", markup=False, highlight=False)
        elif self.ci:
            if not rec["matches"]:
                print(f"[{self.done}/{self.total}] {_line(rec)}", file=sys.stderr, flush=True)
            frac = self.work_done / self.work_total if self.work_total else 1.0
            if frac >= self._next_ci and self.done < self.total:
                while self._next_ci <= frac:
                    self._next_ci += CI_STEP
                elapsed = time.monotonic() - self._t0
                say(f"{self.done}/{self.total} cells, {_clock(elapsed)} elapsed, about {eta_text} left",
                    command="run")
        else:
            print(f"[{self.done}/{self.total}] {_line(rec)}", file=sys.stderr, flush=True)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            try:
                self._bar.__exit__(exc_type, exc, tb)
            except (OSError, ValueError):
                self._quiet = True
