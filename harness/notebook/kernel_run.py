"""The harness's side of running a notebook: the driver's arguments and what it recorded.

:class:`NotebookRun` makes the folder the driver (:mod:`harness.notebook.kernel.driver`) writes
its progress to, gives the driver's ``argv``, and after the run reads which cell was running
and removes the folder.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.notebook import require_notebook_extra

__all__ = ["DRIVER", "NotebookRun", "diagnose_notebook", "notebook_target"]

#: The script a cell process runs for a notebook.
DRIVER = Path(__file__).resolve().parent / "kernel" / "driver.py"


@dataclass
class NotebookRun:
    """One notebook run's progress file.

    Attributes:
        notebook: the notebook, absolute.
        folder: where the driver writes ``state.json``.
    """

    notebook: Path
    folder: Path

    @classmethod
    def prepare(cls, notebook: Path) -> NotebookRun:
        """Check the extra is installed and the file is a notebook, and make the folder.

        Raises:
            UsageError: nbclient, nbformat or ipykernel is missing, or the file is not a
                notebook nbformat can read (one line naming it).
        """
        from harness.errors import UsageError

        require_notebook_extra(str(notebook))
        import nbformat

        try:
            nbformat.read(str(notebook), as_version=4)
        except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds for a bad file
            raise UsageError(f"{notebook}: not a notebook nbformat can read: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        from harness.run import containment

        folder = Path(tempfile.mkdtemp(prefix="harness-notebook-"))
        containment.track_dir(folder)  # removed by the watchdog if this process is killed
        return cls(notebook.resolve(), folder)

    @property
    def state(self) -> Path:
        return self.folder / "state.json"

    @property
    def argv(self) -> tuple[str, ...]:
        """The driver's arguments: the notebook and the progress file."""
        return (str(self.notebook), str(self.state))

    def finish(self) -> int | None:
        """The 1-based index of the last cell that started (the one that failed or hung), or
        ``None`` when none did; the folder is removed."""
        try:
            data = json.loads(self.state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        finally:
            from harness.run import containment

            shutil.rmtree(self.folder, ignore_errors=True)
            containment.untrack_dir(self.folder)
        cell = data.get("cell") if isinstance(data, dict) else None
        return cell if isinstance(cell, int) else None


def notebook_target(target: str) -> tuple[str, str] | None:
    """``(notebook path, name or "")`` when ``target`` is ``NOTEBOOK.ipynb`` or
    ``NOTEBOOK.ipynb:NAME``, else ``None``."""
    if target.lower().endswith(".ipynb"):
        return target, ""
    path, sep, name = target.rpartition(":")
    if sep and path.lower().endswith(".ipynb") and name:
        return path, name
    return None


def diagnose_notebook(target: str, method: str, num_workers: int | None, timeout_s: float) -> dict[str, Any]:
    """Run the notebook in a contained kernel, then diagnose its loaders there.

    Returns:
        ``{"diagnoses": [...], "errors": [...], "cell_error": text or "", "run": verdict}``;
        the notebook's own cells run under this platform's default start method, as the user
        runs them.

    Raises:
        UsageError: the notebook is missing or unreadable, or the extra is not installed.
    """
    import os

    from harness._options import DEFAULT_WORKERS, resolve_start_method
    from harness.errors import UsageError
    from harness.inspect.reproduce import ScriptSpec, _script_case
    from harness.run.launch import launch_cell

    found = notebook_target(target)
    assert found is not None
    path = Path(found[0])
    if not path.is_file():
        raise UsageError(f"{found[0]}: notebook not found")
    run = NotebookRun.prepare(path)
    result_file = run.folder / "diagnosis.json"
    spec_json = json.dumps({"result": str(result_file), "names": [found[1]] if found[1] else [],
                            "method": method, "num_workers": num_workers, "timeout_s": timeout_s})
    spec = ScriptSpec(case=_script_case(DRIVER), method=resolve_start_method("linux" if os.name != "nt" else "windows"),
                      num_workers=DEFAULT_WORKERS, timeout_s=timeout_s * 4, argv=(*run.argv, spec_json),
                      cwd=os.getcwd())
    try:
        cell_run = launch_cell(spec)
        try:
            data = json.loads(result_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {"diagnoses": [], "errors": [{"name": found[1], "error": _no_result(cell_run)}]}
        state = _state(run)
    finally:
        shutil.rmtree(run.folder, ignore_errors=True)
    out: dict[str, Any] = data if isinstance(data, dict) else {"diagnoses": [], "errors": []}
    out["cell_error"] = f"cell {state.get('cell')} raised {state['error']}" if state.get("error") else ""
    return out


def _state(run: NotebookRun) -> dict[str, Any]:
    try:
        data = json.loads(run.state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _no_result(cell_run: Any) -> str:
    obs = cell_run.observation
    if obs.timed_out:
        return "the notebook did not finish before the timeout; its kernel and workers were killed"
    tail = [line for line in obs.stderr.splitlines() if line.strip()][-1:]
    return f"the notebook's kernel ended before the diagnosis (exit status {obs.returncode})" + (
        f": {tail[0].strip()}" if tail else "")
