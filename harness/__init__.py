"""Cross-platform reproduction harness for PyTorch ``DataLoader`` worker start-up.

Runs a catalogue of good and bad ``DataLoader`` patterns under every multiprocessing start
method (``fork``, ``spawn``, ``forkserver``) and in-process (``num_workers=0``), and merges
the results into one compatibility matrix.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
