"""Classify what a cell process left behind into an outcome, a kind and a root cause.

The parent of a ``DataLoader`` often sees only ``DataLoader worker (pid(s) ...) exited
unexpectedly``; the decisive error is in the worker's stderr, which the cell shares. We
classify by mechanism, not by one Python version's wording: Python 3.14 raises
``PicklingError`` where 3.11 raised ``AttributeError`` (CPython gh-122213 also adds
``__notes__`` such as ``when serializing dict item 'transform'``), so every pattern below
accepts both spellings, and the real text is kept in ``message`` and ``root_cause``.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

__all__ = ["Observation", "Verdict", "classify", "decisive_stderr_line"]


@dataclass
class Observation:
    """Everything the parent saw of one cell.

    Attributes:
        returncode: the cell process's exit status; negative is ``-signal`` (POSIX).
        timed_out: the watchdog killed the cell after its timeout.
        result: the cell's result dict (see :mod:`harness._cell`), or ``None`` if it wrote none.
        stderr: the cell's stderr, which its workers share.
    """

    returncode: int | None
    timed_out: bool
    result: dict | None
    stderr: str


@dataclass
class Verdict:
    """``outcome`` (see :mod:`harness._outcomes`), ``kind`` for errors, first ``message`` line,
    and the decisive ``root_cause`` line."""

    outcome: str
    kind: str | None
    message: str
    root_cause: str


# (kind, pattern) in priority order; the first pattern found in the text decides.
_KIND_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("bootstrap", re.compile(r"before the current process\s+has finished its bootstrapping phase|bootstrapping phase")),
    ("main-attribute", re.compile(r"Can't get attribute '[^']+' on <module '__(?:mp_)?main__'")),
    ("context-mix", re.compile(r"SemLock created in a \w+ context is being shared with a process in a \w+ context|"
                               r"A SemLock created in a fork context")),
    ("cuda-reinit", re.compile(r"Cannot re-initialize CUDA in forked subprocess")),
    ("daemonic", re.compile(r"daemonic processes are not allowed to have children")),
    # torch's file_descriptor sharing strategy: recvmsg got no descriptor (EMFILE in the
    # receiver), or torch's own "Too many open files" hint (torch/utils/data/dataloader.py).
    ("fd-limit", re.compile(r"received 0 items of ancdata|Too many open files")),
    ("pickle", re.compile(
        r"Can't pickle local object|Can't pickle <|Can't get local object|"
        r"cannot pickle '[^']+' object|[Cc]an't pickle|attribute lookup \S+ on \S+ failed|"
        r"PicklingError|is not picklable|cannot be pickled|Pickling an AuthenticationString")),
]

_WORKER_EXITED = re.compile(r"DataLoader worker \(pid\(s\)? [^)]*\) exited unexpectedly|exited unexpectedly with exit code")
_WORKER_SIGNAL = re.compile(r"DataLoader worker \(pid \d+\) is killed by signal: ([^.\n]+)")
# torch's worker signal handlers print "ERROR: Unexpected segmentation fault encountered in worker."
# (torch/csrc/DataLoader.cpp); faulthandler prints "Fatal Python error: Segmentation fault".
_FATAL = re.compile(r"ERROR: Unexpected [\w -]+ encountered in worker\.|Fatal Python error: [^\n]+")
_WORKER_CAUGHT = re.compile(r"Caught (\w+) in DataLoader worker process \d+")
_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?(?:\w*Error|\w*Exception|\w*Warning|KeyboardInterrupt|SystemExit)\b.*$|"
                       r"^_pickle\.PicklingError.*$")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _kind_of(text: str) -> tuple[str | None, str | None]:
    """The first matching kind, and the line it matched on."""
    for kind, pat in _KIND_PATTERNS:
        m = pat.search(text)
        if m:
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            return kind, text[start : end if end != -1 else None].strip()
    return None, None


def decisive_stderr_line(stderr: str) -> tuple[str | None, str]:
    """The worker's own decisive error from ``stderr``: ``(kind or None, line)``.

    Looks for a known mechanism first (bootstrapping phase, ``Can't get attribute``, ...),
    then for the last exception line of the last traceback. Returns ``(None, "")`` when
    stderr holds no error.
    """
    kind, line = _kind_of(stderr)
    if kind:
        # A multi-line message (the bootstrapping RuntimeError) matches on a later line; start
        # the root cause at the exception line that opens it, up to three lines above.
        lines = stderr.splitlines()
        for idx in range(len(lines) - 1, -1, -1):
            if line and line in lines[idx]:
                for back in range(idx, max(-1, idx - 4), -1):
                    if _EXC_LINE.match(lines[back].strip()):
                        return kind, " ".join(x.strip() for x in lines[back : idx + 1] if x.strip())
                return kind, lines[idx].strip()
        return kind, line or ""
    last = ""
    for cand in stderr.splitlines():
        if _EXC_LINE.match(cand.strip()):
            last = cand.strip()
    return None, last


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def classify(obs: Observation) -> Verdict:
    """Turn an :class:`Observation` into a :class:`Verdict`.

    Rules, in order:
        * watchdog timeout → ``hang``;
        * no result and a negative return code → ``crash`` (the cell's main process died by a
          signal); no result otherwise → ``error``/``other`` with the last stderr error;
        * ``wrong`` / ``skipped`` statuses pass through with their one-line reason;
        * a raised exception → ``error`` with a kind: the exception's own mechanism when the
          parent raised it (``pickle`` ...), else the worker's decisive stderr line when the
          parent only saw "exited unexpectedly" (``bootstrap``, ``main-attribute``, else
          ``worker-died``), ``worker-exception`` when torch re-raised a worker's exception.
    """
    res = obs.result
    if obs.timed_out:
        _, line = decisive_stderr_line(obs.stderr)
        return Verdict("hang", None, "timed out; process group killed", line)
    if res is None:
        if obs.returncode is not None and obs.returncode < 0:
            name = _signal_name(-obs.returncode)
            return Verdict("crash", None, f"cell process killed by {name}", f"killed by {name}")
        kind, line = decisive_stderr_line(obs.stderr)
        msg = f"cell process exited with code {obs.returncode} without a result"
        return Verdict("error", kind or "other", msg, line or msg)
    status = res.get("status")
    message = _first_line(res.get("message", ""))
    if status == "returned":
        return Verdict("pass", None, "", "")
    if status == "wrong":
        return Verdict("wrong", None, message, message)
    if status == "skipped":
        return Verdict("skipped", None, message, message)
    if status == "import-failed":
        line = f"{res.get('exc_type', 'Error')}: {message}"
        return Verdict("error", "import", line, line)
    # status == "raised"
    text = "\n".join([res.get("message", ""), *res.get("notes", [])])
    exc_type = res.get("exc_type", "")
    headline = f"{exc_type}: {message}" if message else exc_type
    sig = _WORKER_SIGNAL.search(text)
    if sig:
        return Verdict("error", "worker-died", headline, f"worker killed by signal: {sig.group(1)}")
    if _WORKER_EXITED.search(text):
        kind, line = decisive_stderr_line(obs.stderr)
        if kind in ("bootstrap", "main-attribute", "pickle", "context-mix", "cuda-reinit", "daemonic", "fd-limit"):
            return Verdict("error", kind, headline, line)
        fatal = _FATAL.search(obs.stderr)
        if fatal:  # faulthandler's report of a worker killed by a signal (PYTHONFAULTHANDLER=1)
            line = fatal.group(0).strip()
        return Verdict("error", "worker-died", headline, line or headline)
    caught = _WORKER_CAUGHT.search(text)
    if caught:
        kind, line = _kind_of(text)
        if kind in ("cuda-reinit", "context-mix", "daemonic", "fd-limit"):
            return Verdict("error", kind, headline, line)
        # The original exception is the last exception line of the worker's traceback.
        _, original = decisive_stderr_line(res.get("message", ""))
        return Verdict("error", "worker-exception", headline, original or headline)
    kind, line = _kind_of(f"{exc_type}: {text}")
    if kind:
        return Verdict("error", kind, headline, headline)
    return Verdict("error", "other", headline, headline)
