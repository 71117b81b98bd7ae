"""Every error the harness reports, in one tree.

::

    HarnessError                  what went wrong, as one line naming the file or argument
    ├── UsageError                a bad argument, option value or environment variable
    │                             (also a ValueError)
    ├── CatalogueError            a case module, or a catalogue directory, cannot be used
    │   └── ConfigError           the project's [tool.harness] table in pyproject.toml
    ├── ShardError                a shard cannot be read: not a regular file, too large,
    │   │                         not strict JSON, not a shard, another schema version
    │   └── NotAShard             a report's matrix.json among the shards (skipped, not bad)
    ├── SaveError                 a shard cannot be written; the results went elsewhere
    ├── TemplateError             the warm template could not start, fork or went away
    │                             (also a RuntimeError)
    ├── TargetError               a ``harness diagnose`` target cannot be loaded
    └── Interrupted               Ctrl-C, SIGTERM or SIGHUP stopped a command

Catch a branch to handle one class of failure (``except ShardError``), or ``HarnessError``
for all of them. ``str(exc)`` is always one line, the message without any ``harness …:``
prefix: the command line (:func:`harness._cli.main`) catches ``HarnessError`` once, prints it
as ``harness <command>: <message>`` and exits with :attr:`HarnessError.exit_code` (2, or 130
for :class:`Interrupted`).

Not in the tree: :class:`harness.case.Wrong` and :class:`harness.case.Skip`, which a case
raises to report its outcome (a cell's result, not a failure of the harness), and a bug in
the harness itself, which stays a traceback.

This module imports nothing, so any part of the harness may raise from it.
"""

from __future__ import annotations

__all__ = [
    "CatalogueError",
    "ConfigError",
    "HarnessError",
    "Interrupted",
    "NotAShard",
    "SaveError",
    "ShardError",
    "TargetError",
    "TemplateError",
    "UsageError",
]


class HarnessError(Exception):
    """Base of every error the harness reports; ``str()`` is one line naming what failed."""

    #: The ``harness`` command's exit status when this error ends it.
    exit_code: int = 2


class UsageError(HarnessError, ValueError):
    """A bad argument, option value or environment variable (``--start-method plan9``,
    ``HARNESS_TIMEOUT_SCALE=fast``); the message names it.

    Also a :class:`ValueError`, the type these checks raised before the tree existed.
    """


class CatalogueError(HarnessError):
    """A case module or a catalogue directory cannot be used: a syntax error, a ``CASE``
    that breaks the schema, a directory that is missing or cannot be imported as a package,
    a duplicate id, or a selection (``--cases``, ``--families``) that matches nothing."""


class ConfigError(CatalogueError):
    """The ``[tool.harness]`` table of ``pyproject.toml`` is unusable (unreadable, not TOML, an
    unknown key, a value of the wrong type); the message names the file."""


class ShardError(HarnessError):
    """A shard cannot be read: not a regular file, too large, not strict JSON, not a shard,
    an unknown ``schema_version``, or a schema violation; the message names the file."""


class NotAShard(ShardError):
    """The file is a ``matrix.json`` written by ``harness report``, not a shard: skipped with a
    note, never counted as a bad shard."""


class SaveError(HarnessError):
    """A shard cannot be written (a read-only or full disk, a lock that is never freed); the
    message says where the results were saved instead."""


class TemplateError(HarnessError, RuntimeError):
    """The warm template (the process that forks cells with torch already imported) could not
    start, could not fork a cell, or died; cells then start fresh interpreters."""


class TargetError(HarnessError):
    """A ``harness diagnose`` target cannot be loaded: malformed, a missing file or module, an
    import that fails, or an object that is not a ``DataLoader`` or ``Dataset``."""


class Interrupted(HarnessError):
    """Ctrl-C (SIGINT), SIGTERM or SIGHUP stopped a command after it cleaned up; the message
    says what was kept (a partial shard) or stopped."""

    exit_code = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C
