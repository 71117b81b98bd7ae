"""Outcome taxonomy of a cell (one case under one start method on one runner).

::

    outcome
    ├── pass          every expected batch arrived with the right content
    ├── wrong         the run finished, but the data was wrong (duplicates, same RNG stream, ...)
    ├── error         an exception reached the case; ``kind`` says which mechanism:
    │   ├── pickle            the parent could not pickle the dataset/collate_fn/worker_init_fn
    │   ├── main-attribute    a worker could not find a name on ``__mp_main__`` / ``__main__``
    │   ├── bootstrap         a worker re-ran unguarded ``__main__`` code and started processes
    │   │                     during its bootstrapping phase
    │   ├── worker-died       a worker exited (or was killed) without a Python traceback the
    │   │                     parent could read
    │   ├── worker-exception  a worker raised; torch re-raised it in the parent
    │   ├── context-mix       a primitive from one multiprocessing context used in another
    │   ├── cuda-reinit       CUDA initialised in the parent, then used in a forked worker
    │   ├── daemonic          a DataLoader started inside a daemonic process
    │   ├── fd-limit          the open-file limit ran out while tensors crossed processes
    │   │                     (torch's ``file_descriptor`` sharing strategy)
    │   ├── import            the case itself failed to import (a broken case, not a finding)
    │   ├── unchecked         the case returned without a batch checked (``cell.check`` or
    │   │                     ``cell.iterate`` never ran, or ``sys.exit`` ended it first): a
    │   │                     broken case, never a ``pass``
    │   └── other
    ├── hang          the watchdog's timeout expired; the process group was killed
    ├── crash         the cell's main process died by a signal
    ├── unsupported   the start method does not exist on this platform
    └── skipped       a precondition (such as CUDA) is missing
"""

from __future__ import annotations

__all__ = [
    "OUTCOMES",
    "KINDS",
    "METHODS",
    "IN_PROCESS",
    "SYMBOLS",
    "matches_expectation",
    "outcome_label",
]

OUTCOMES = ("pass", "wrong", "error", "hang", "crash", "unsupported", "skipped")
KINDS = (
    "pickle",
    "main-attribute",
    "bootstrap",
    "worker-died",
    "worker-exception",
    "context-mix",
    "cuda-reinit",
    "daemonic",
    "fd-limit",
    "import",
    "unchecked",
    "other",
)
IN_PROCESS = "in-process"
#: Matrix columns, in display order. ``in-process`` is ``num_workers=0``, the control.
METHODS = (IN_PROCESS, "fork", "spawn", "forkserver")

#: Short symbols used in the Markdown table and the HTML page.
SYMBOLS = {
    "pass": "✅",
    "wrong": "⚠️",
    "error": "❌",
    "hang": "⏳",
    "crash": "💥",
    "unsupported": "➖",
    "skipped": "⏭️",
}


def matches_expectation(outcome: str, kind: str | None, expected: str, expected_kind: str | None) -> bool:
    """Whether an observed ``outcome``/``kind`` agrees with a case's expectation for that cell.

    ``skipped`` and ``unsupported`` never contradict an expectation. Where ``expected_kind``
    names a kind for an ``error`` cell, the kind must match too.
    """
    if outcome in ("skipped", "unsupported"):
        return True
    if outcome != expected:
        return False
    return not (outcome == "error" and expected_kind and kind != expected_kind)


def outcome_label(outcome: str, kind: str | None, form: str = "{outcome}/{kind}") -> str:
    """An outcome with the kind that qualifies it: the one spelling every output shares.

    Args:
        outcome: the outcome as shown: its name (``error``) or its symbol (``❌``).
        kind: what qualifies it (the ``kind`` of an ``error``); ``None`` or ``""`` for none.
        form: how the two are joined when there is a kind (``str.format`` fields ``outcome``
            and ``kind``). The spellings in use: ``"{outcome}/{kind}"``, ``error/pickle``
            (reports, JUnit, ``harness explain``); ``"{outcome} ({kind})"``, ``error (pickle)``
            (progress lines, ``harness reproduce``); ``"{outcome}: {kind}"``, ``error: pickle``
            (the HTML page's words); ``"{outcome} {kind}"``, ``❌ pickle`` (a symbol and its
            kind in the Markdown tables).

    Returns:
        ``form`` filled in, or ``outcome`` alone when ``kind`` is empty.
    """
    return form.format(outcome=outcome, kind=kind) if kind else outcome
