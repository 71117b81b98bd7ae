"""``python -m harness.inspect.diagnose_child SPEC``: the process ``harness diagnose`` runs user code in.

SPEC is a JSON object: ``target``, ``method``, ``num_workers``, ``memory_bytes`` (address space
this process may map beyond what it has once torch is imported, or ``null``), ``result`` (the
file to write the outcome to) and ``stage`` (a file rewritten with each step, so the parent can
say what a killed child was doing). The parent (:func:`harness.inspect.diagnose_command.run_child`)
starts it in its own session or process group and kills its whole tree on timeout or when it ends.

The result file is written once, atomically, as ``{"kind": ...}``:

* ``diagnosis``: ``{"diagnosis": ...}`` (:func:`harness.inspect.diagnose.diagnosis_to_child`);
* ``target-error``: ``{"message": ...}``, the target cannot be built (exit 2 in the parent);
* ``memory``: ``{"message": ...}``, a ``MemoryError`` escaped (the memory bound was reached);
* ``error``: ``{"message": ...}``, anything else that escaped (a harness bug).

SIGINT is ignored here: the terminal's Ctrl-C reaches only the parent (this process has its
own session), which kills this tree; so every ``KeyboardInterrupt`` seen here was raised by
the user's code, and is a finding or a target error like any other exception.

Then the process ends at once with ``os._exit(0)``, so a thread or an ``atexit`` hook the
user's code left behind cannot keep it alive. No result file means the user's code ended the
process (``os._exit``, a signal, a crash).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from harness.child.fileio import write_atomic


def _limit_memory(extra_bytes: int | None) -> None:
    """Cap this process's address space at what it maps now plus ``extra_bytes`` (POSIX)."""
    if not extra_bytes or sys.platform == "win32":
        return
    import resource

    import psutil

    limit = psutil.Process().memory_info().vms + extra_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _write(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data).encode("utf-8"))


def main(argv: list[str]) -> dict[str, Any]:
    """Diagnose the target in SPEC (``argv[0]``) and return the result to write.

    Raises:
        MemoryError: the memory bound was reached outside the user's code.
        BaseException: anything else that escaped (a harness bug); the caller writes both as
            a result.
    """
    spec = json.loads(argv[0])
    stage_path = Path(spec["stage"])

    def stage(text: str) -> None:
        try:
            stage_path.write_text(text, encoding="utf-8")
        except OSError:
            pass

    stage("starting")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch  # noqa: F401 - mapped before the memory bound is measured

    from harness.inspect.diagnose import diagnose, diagnosis_to_child
    from harness.inspect.target import TargetError, load_target

    _limit_memory(spec.get("memory_bytes"))
    try:
        obj = load_target(spec["target"], progress=stage)
        result = diagnose(obj, method=spec["method"], num_workers=spec.get("num_workers"),
                          target=spec["target"], progress=stage)
    except TargetError as exc:
        return {"kind": "target-error", "message": str(exc)}
    return {"kind": "diagnosis", "diagnosis": diagnosis_to_child(result)}


if __name__ == "__main__":
    from harness.inspect.walker import first_line

    result_path = Path(json.loads(sys.argv[1])["result"])
    try:
        outcome = main(sys.argv[1:])
    except MemoryError as exc:
        outcome = {"kind": "memory", "message": f"MemoryError: {first_line(exc)}"}
    except BaseException as exc:  # noqa: BLE001 - report, never a traceback
        outcome = {"kind": "error", "message": f"internal error: {type(exc).__name__}: {first_line(exc)}"}
    status = 0
    try:
        _write(result_path, outcome)
    except BaseException:  # noqa: BLE001 - no result file: the parent reports this exit status
        status = 70  # EX_SOFTWARE
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed or replaced stream
            pass
    os._exit(status)
