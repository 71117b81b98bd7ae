"""Cross-platform reproduction harness for PyTorch ``DataLoader`` worker start-up.

Runs a catalogue of good and bad ``DataLoader`` patterns under every multiprocessing start
method (``fork``, ``spawn``, ``forkserver``) and in-process (``num_workers=0``), and merges
the results into one compatibility matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported on first use, below
    from harness._pytest_plugin import assert_spawn_safe

__version__ = "0.1.0"

__all__ = ["__version__", "assert_spawn_safe"]


def __getattr__(name: str) -> object:
    # Lazy, so ``import harness`` stays light (no torch) until the guard is used.
    if name == "assert_spawn_safe":
        from harness._pytest_plugin import assert_spawn_safe

        return assert_spawn_safe
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
