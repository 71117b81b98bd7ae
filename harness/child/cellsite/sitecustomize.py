"""Start-up hook for every new interpreter inside a cell: spawn workers, the forkserver, helpers.

The cell runner (:func:`harness.run.plan.cell_env`) puts this directory first on ``PYTHONPATH``
of each cell, so Python's :mod:`site` imports this module at start-up in every interpreter the
cell's code starts. It changes nothing a case could observe, except where a platform profile
asks for it, and then hands over to the ``sitecustomize`` it shadows, if there is one.

1. **Worker stderr that always reaches the cell.** On Windows, ``multiprocessing`` creates
   spawn children without inheriting handles (``_winapi.CreateProcess(..., False, ...)`` in
   ``multiprocessing/popen_spawn_win32.py``). When the parent's standard streams are
   redirected files, as they are in a cell, the child's ``sys.stderr`` can be ``None``: the
   bootstrapping ``RuntimeError`` or the ``Can't get attribute`` traceback would vanish, and
   with it the root cause. When ``sys.stderr`` is ``None`` or unusable, it is opened on the
   cell's stderr file (``HARNESS_CELL_STDERR``), in append mode, and file descriptor 2 too, so
   C-level messages (torch's "Unexpected segmentation fault encountered in worker",
   faulthandler) land there as well.
   ``HARNESS_SIMULATE_LOST_STDERR=1`` makes a spawn child on any OS start as such a Windows
   child does (``sys.stderr`` ``None``, descriptor 2 closed), for the test that checks this.
2. **The profile's sharing strategy.** ``HARNESS_SHARING_STRATEGY`` (``file_system`` for the
   macOS and Windows profiles) is applied as soon as ``torch.multiprocessing`` is imported, so
   a spawn or forkserver worker shares tensors the way it would on that platform.
3. **Memory peaks reported at exit.** With ``HARNESS_CELL_PEAKS`` set (Linux), every process
   reports its own peak RSS and USS when it ends (:mod:`_harness_cell_peaks`, beside this file),
   so the harness need not read them from outside many times.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

# ``typing`` is not imported at run time: this runs at the start of every interpreter of a cell.
# Type checkers treat any name ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import TextIO


def _usable(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.fileno() >= 0 and not stream.closed
    except (AttributeError, OSError, ValueError):
        return False


def _is_spawn_child() -> bool:
    return "--multiprocessing-fork" in sys.argv


def _fix_stderr() -> None:
    if os.environ.get("HARNESS_SIMULATE_LOST_STDERR") == "1" and _is_spawn_child():
        # Both are None in such a Windows child.
        sys.stderr = sys.__stderr__ = None  # type: ignore[misc]  # typeshed: __stderr__ is Final
        try:
            os.close(2)
        except OSError:
            pass
    path = os.environ.get("HARNESS_CELL_STDERR")
    if not path or _usable(sys.stderr):
        return
    try:
        stream = open(path, "a", encoding="utf-8", errors="backslashreplace", buffering=1)  # noqa: SIM115
    except OSError:
        return
    try:
        os.dup2(stream.fileno(), 2)
    except OSError:
        pass
    # The stream stands for the original stderr too.
    sys.stderr = sys.__stderr__ = stream  # type: ignore[misc]  # typeshed: __stderr__ is Final


class _SetSharingStrategy(importlib.abc.MetaPathFinder):
    """Runs ``torch.multiprocessing.set_sharing_strategy`` right after that module is loaded."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy

    def find_spec(self, name: str, path: Sequence[str] | None,  # noqa: ARG002 - the finder protocol
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "torch.multiprocessing":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader, strategy = spec.loader, self.strategy

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                loader.exec_module(module)
                module.set_sharing_strategy(strategy)

        spec.loader = _Loader()
        return spec


def _chain() -> None:
    """Import the ``sitecustomize`` this one shadows (a distribution's own), if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_fix_stderr()
if os.environ.get("HARNESS_SHARING_STRATEGY"):
    if "torch.multiprocessing" in sys.modules:
        sys.modules["torch.multiprocessing"].set_sharing_strategy(os.environ["HARNESS_SHARING_STRATEGY"])
    else:
        sys.meta_path.insert(0, _SetSharingStrategy(os.environ["HARNESS_SHARING_STRATEGY"]))
if os.environ.get("HARNESS_CELL_PEAKS"):
    try:
        import _harness_cell_peaks  # type: ignore[import-not-found]  # a sibling found on the cell's PYTHONPATH

        _harness_cell_peaks.install()
    except Exception:  # noqa: BLE001, S110 - a missing report falls back to sampling
        pass
_chain()
