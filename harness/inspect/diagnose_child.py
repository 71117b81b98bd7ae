"""``python -m harness.inspect.diagnose_child SPEC``: the process ``harness diagnose`` runs user code in.

SPEC is a JSON object: ``targets`` (diagnosed one after the other, in this one process: one
torch import for all of them), ``method``, ``num_workers``, ``memory_bytes`` (address space
this process may map beyond what it has once torch is imported, or ``null``), ``results`` (for
each target, the file to write its outcome to) and ``stages`` (for each target, a file
rewritten with each step, so the parent can say what a killed child was doing). The parent
waits for each result in turn, with the timeout of one target, and starts a new child for the
targets after one that hung or ended the process. The parent (:func:`harness.inspect.diagnose_command.run_children`)
starts it in its own session or process group and kills its whole tree on timeout or when it ends.

Each result file is written once, atomically, as ``{"kind": ...}``:

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
import signal
import sys
from pathlib import Path
from typing import Any

from harness.child.ending import flush_and_exit
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


def _stage_writer(path: Path) -> Any:
    def stage(text: str) -> None:
        try:
            path.write_text(text, encoding="utf-8")
        except OSError:
            pass

    return stage


def diagnose_one(spec: dict[str, Any], target: str, stage: Any) -> dict[str, Any]:
    """Diagnose one target; the result to write.

    Raises:
        MemoryError: the memory bound was reached outside the user's code.
        BaseException: anything else that escaped (a harness bug).
    """
    from harness.inspect.diagnose import diagnose, diagnosis_to_child
    from harness.inspect.target import TargetError, load_target

    try:
        obj = load_target(target, progress=stage)
        result = diagnose(obj, method=spec["method"], num_workers=spec.get("num_workers"),
                          target=target, progress=stage)
    except TargetError as exc:
        return {"kind": "target-error", "message": str(exc)}
    return {"kind": "diagnosis", "diagnosis": diagnosis_to_child(result)}


def main(argv: list[str]) -> None:
    """Diagnose every target in SPEC (``argv[0]``), writing each result as it is known."""
    from harness.inspect.walker import first_line

    spec = json.loads(argv[0])
    stages = [_stage_writer(Path(p)) for p in spec["stages"]]
    stages[0]("starting")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch  # noqa: F401 - mapped before the memory bound is measured

    import harness.inspect.diagnose  # noqa: F401 - imported once, before the first target's clock

    _limit_memory(spec.get("memory_bytes"))
    for target, result_path, stage in zip(spec["targets"], spec["results"], stages, strict=True):
        stage("starting")
        try:
            outcome = diagnose_one(spec, target, stage)
        except MemoryError as exc:
            outcome = {"kind": "memory", "message": f"MemoryError: {first_line(exc)}"}
        except BaseException as exc:  # noqa: BLE001 - report, never a traceback
            outcome = {"kind": "error", "message": f"internal error: {type(exc).__name__}: {first_line(exc)}"}
        _write(Path(result_path), outcome)
        del outcome


if __name__ == "__main__":
    status = 0
    try:
        main(sys.argv[1:])
    except BaseException:  # noqa: BLE001 - a result file not written: the parent reports this exit status
        status = 70  # EX_SOFTWARE
    flush_and_exit(status)
