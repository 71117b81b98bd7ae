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
