"""Notebooks as input: an ``.ipynb`` executed in a real Jupyter kernel, as a user runs it.

* :mod:`.driver`: ``python driver.py NOTEBOOK STATE``, the script a cell process runs (as any
  user script, :func:`harness.inspect.reproduce.reproduce`): it starts an ipykernel with
  nbclient, applies the cell's start method in the kernel before the notebook's first cell,
  runs every cell, and records which one is running in STATE;
* :mod:`.cells`: where a notebook's code lies (cell N, line M) and the ``extra`` check.

nbclient and ipykernel come with the optional extra ``notebook``
(``pip install 'dataloader-start-harness[notebook]'``).
"""

from __future__ import annotations

__all__ = ["NOTEBOOK_EXTRA_HINT", "require_notebook_extra"]

NOTEBOOK_EXTRA_HINT = "pip install 'dataloader-start-harness[notebook]'"


def require_notebook_extra(what: str) -> None:
    """Raise ``UsageError`` naming ``what`` when nbclient, nbformat or ipykernel is missing.

    Raises:
        UsageError: one line naming the missing package and the extra that installs it.
    """
    import importlib.util

    from harness.errors import UsageError

    for module in ("nbclient", "nbformat", "ipykernel"):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"{what}: running a notebook needs {module}; install it with {NOTEBOOK_EXTRA_HINT}")
