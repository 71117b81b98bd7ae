"""Starting the harness's own child interpreters without the user's folder on ``sys.path``.

``python -m MODULE`` puts the current directory first on ``sys.path`` before anything is
imported, so a user's ``queue.py`` or ``json.py`` beside their script would shadow the
standard library for the harness's own start-up (``import torch`` imports ``queue``), which a
real run of the user's script never does before the user's code does. The harness's children
therefore start with that entry left out: ``-P`` (Python 3.11+, ``sys.flags.safe_path``; see
the CPython docs for ``-P`` and ``PYTHONSAFEPATH``), or on 3.10 a ``-c`` program that drops
``sys.path[0]`` before running the module. The child puts the user's folder on ``sys.path``
itself, when it is about to import the user's code.

A module of :mod:`harness.child`: it imports nothing of the harness outside that package.
"""

from __future__ import annotations

import sys

__all__ = ["module_command"]

#: ``-c`` program for Pythons without ``-P``: drop the current directory, then run the module
#: named in ``sys.argv[1]`` as ``python -m`` would (``alter_sys``: ``sys.argv[0]`` is its file).
_PROGRAM = ("import runpy, sys; del sys.path[0]; sys.argv[:] = sys.argv[1:]; "
            "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


def module_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``python -m module args...`` with this interpreter, without
    the current directory on ``sys.path``.

    Returns:
        ``[sys.executable, "-P", "-m", module, *args]`` on Python 3.11+, else the ``-c`` form.
    """
    if hasattr(sys.flags, "safe_path"):  # -P exists (Python 3.11+)
        return [sys.executable, "-P", "-m", module, *args]
    return [sys.executable, "-c", _PROGRAM, module, *args]
