"""``python driver.py NOTEBOOK STATE``: run a notebook in a real Jupyter kernel, cell by cell.

Runs as a user script in a cell process (``harness reproduce NOTEBOOK.ipynb``): the harness's
containment (process group, the containment token in every descendant's environment, the
watchdog) covers the kernel, which jupyter_client starts in a session of its own, and the
kernel's workers. The kernel is this interpreter's ipykernel (kernel name ``python3``), started
in the notebook's folder, with its standard error inherited: a worker's own traceback
(``Can't get attribute 'X' on <module '__main__' (built-in)>``) reaches the kernel's console,
which is this process's standard error, where the classifier reads it.

Before the notebook's first cell, the kernel runs one hidden cell that applies the cell's
start method (``HARNESS_CELL_METHOD``: ``multiprocessing.set_start_method(method,
force=True)``); a platform profile's sharing strategy reaches the kernel as it reaches every
interpreter of a cell (the start-up hook in ``PYTHONPATH``). The kernel's connection files
and IPython's history go to folders under this cell's ``TMPDIR``, removed with the cell.

STATE is rewritten with ``{"cell": N}`` before each code cell runs (N: the 1-based index
among all the notebook's cells, markdown included), then ``{"cell": N, "done": true}`` when
every cell ran, or ``{"cell": N, "error": ...}`` when cell N raised: the cell's traceback
(colours removed) is then written to standard error, and the driver raises the cell's own
exception again (its class where it is a built-in one, else one of the same name; the same
message), so the cell process records what a script that raised it would.

This module runs in the cell and imports nothing of the harness.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

SETUP = (
    "import multiprocessing as _harness_mp, os as _harness_os\n"
    "if _harness_os.environ.get('HARNESS_CELL_METHOD', 'in-process') != 'in-process':\n"
    "    _harness_mp.set_start_method(_harness_os.environ['HARNESS_CELL_METHOD'], force=True)\n"
    "del _harness_mp, _harness_os\n"
)

#: Run last in the kernel: what the notebook's ``harness.case`` cell checked (a catalogue
#: notebook case calls ``current_cell().check(...)`` in the kernel), printed for the driver.
REPORT = (
    "import sys as _harness_sys, json as _harness_json\n"
    "_harness_c = getattr(_harness_sys.modules.get('harness.case'), '_CURRENT', None)\n"
    "if _harness_c is not None:\n"
    "    print('__HARNESS_CELL__' + _harness_json.dumps({'batches': _harness_c.batches,"
    " 'first_batch_s': _harness_c.first_batch_s}))\n"
    "del _harness_sys, _harness_json, _harness_c\n"
)
_MARK = "__HARNESS_CELL__"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _write_state(path: str, state: dict[str, object]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """Run the notebook ``argv[0]``, recording progress in ``argv[1]``; the exit status.

    With ``argv[2]`` (a JSON object: ``result``, ``names``, ``method``, ``num_workers``,
    ``timeout_s``), the kernel then diagnoses the named objects of the notebook (every
    ``DataLoader`` when ``names`` is empty), also after a cell failed
    (:func:`harness.notebook.kernel.in_kernel.diagnose_main`), and the run ends normally.

    Raises:
        BaseException: the exception of the cell that failed (see the module docstring),
            when not diagnosing.
    """
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, DeadKernelError
    except ImportError as exc:  # a catalogue notebook case on a runner without the extra
        from harness.case import Skip

        raise Skip(f"running a notebook needs the notebook extra ({exc.name} is missing)") from None

    path = argv[0]
    state_path = argv[1] if len(argv) > 1 else os.path.join(tempfile.mkdtemp(prefix="harness-notebook-"), "state.json")
    diagnosis = json.loads(argv[2]) if len(argv) > 2 else None
    os.environ.setdefault("JUPYTER_RUNTIME_DIR", tempfile.mkdtemp(prefix="jupyter-runtime-"))
    os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="ipython-"))
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    nb = nbformat.read(path, as_version=4)
    original = len(nb.cells)
    nb.cells.insert(0, nbformat.v4.new_code_cell(SETUP))
    state: dict[str, object] = {"cell": None, "cells": original}

    def on_cell_execute(cell: object, cell_index: int) -> None:
        state["cell"] = cell_index if cell_index > 0 else None  # index 0 is the setup cell
        _write_state(state_path, state)

    client = NotebookClient(nb, timeout=None, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}},
                            on_cell_execute=on_cell_execute)
    failure: BaseException | None = None
    with client.setup_kernel():
        try:
            for index, cell in enumerate(list(nb.cells)):
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
        except CellExecutionError as exc:
            text = _ANSI.sub("", str(exc))
            state["error"] = f"{exc.ename}: {exc.evalue}"
            _write_state(state_path, state)
            sys.stderr.write(_traceback(text, exc.ename, exc.evalue))
            sys.stderr.flush()
            failure = _same_exception(exc.ename, _ANSI.sub("", exc.evalue or ""))
        except DeadKernelError as exc:
            state["error"] = f"DeadKernelError: {exc}"
            _write_state(state_path, state)
            sys.stderr.write(f"the kernel died while running cell {state['cell']}: {exc}\n")
            return 1
        if diagnosis is not None:
            code = ("from harness.notebook.kernel.in_kernel import diagnose_main as _harness_diagnose\n"
                    f"_harness_diagnose({json.dumps(diagnosis)!r}, {path!r})\n"
                    "del _harness_diagnose\n")
            nb.cells.append(nbformat.v4.new_code_cell(code))
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            return 0
        if failure is None:
            nb.cells.append(nbformat.v4.new_code_cell(REPORT))
            _report_checks(client, nb.cells[-1], len(nb.cells) - 1)
    if failure is not None:
        raise failure
    state["done"] = True
    _write_state(state_path, state)
    return 0


def _report_checks(client: object, cell: object, index: int) -> None:
    """Give this process's ``harness.case`` cell what the kernel's checked (batches, first
    batch time), so that a catalogue notebook case that checked its loader is not ``unchecked``."""
    client.execute_cell(cell, index)  # type: ignore[attr-defined]
    for output in cell.get("outputs", []):  # type: ignore[attr-defined]
        for line in str(output.get("text", "")).splitlines():
            if line.startswith(_MARK):
                data = json.loads(line[len(_MARK):])
                from harness.case import current_cell

                here = current_cell()
                here.batches = int(data.get("batches") or 0)
                here.first_batch_s = data.get("first_batch_s")


def _same_exception(ename: str, evalue: str) -> BaseException:
    """An exception of the cell's class (a built-in one), or of a class of the same name."""
    import builtins

    if ename in ("Wrong", "Skip", "harness.case.Wrong", "harness.case.Skip"):
        import harness.case

        return getattr(harness.case, ename.rsplit(".", 1)[-1])(evalue)  # type: ignore[no-any-return]
    cls = getattr(builtins, ename, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)) or issubclass(cls, (SystemExit, KeyboardInterrupt)):
        cls = type(ename.rsplit(".", 1)[-1], (Exception,), {"__module__": ename.rpartition(".")[0] or "builtins"})
    try:
        made: BaseException = cls(evalue)
        return made
    except Exception:  # noqa: BLE001 - a built-in exception with another signature
        return RuntimeError(f"{ename}: {evalue}")


def _traceback(text: str, ename: str, evalue: str) -> str:
    """The cell's traceback as Python prints an uncaught one: the frames, then ``Type: value``."""
    lines = [line for line in text.splitlines() if not line.startswith(("An error occurred while executing",
                                                                        "------------------"))]
    body = "\n".join(lines).strip("\n")
    last = f"{ename}: {evalue}" if evalue else ename
    if not body.rstrip().endswith(last):
        body += "\n" + last
    return "Traceback (most recent call last):\n" + body + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
