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

from harness.notebook import require_notebook_extra

__all__ = ["DRIVER", "NotebookRun"]

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
        return cls(notebook.resolve(), Path(tempfile.mkdtemp(prefix="harness-notebook-")))

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
            shutil.rmtree(self.folder, ignore_errors=True)
        cell = data.get("cell") if isinstance(data, dict) else None
        return cell if isinstance(cell, int) else None
