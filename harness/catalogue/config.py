"""A project's settings: the ``[tool.harness]`` table of ``pyproject.toml`` in the current directory.

Read the way pytest and ruff read theirs, from the ``pyproject.toml`` of the directory the
command runs in::

    [tool.harness]
    catalogue = ["loader_cases"]   # directories of case modules, relative to this file

    [tool.harness.lint]             # harness lint
    select = ["HL"]                 # rule codes or prefixes (default: all)
    ignore = ["HL202"]
    paths = ["src", "scripts"]      # what a bare `harness lint` checks (default: ".")
    exclude = ["tests/fixtures/*"]  # globs of files left out of folders

``harness run``, ``list``, ``explain`` and ``report`` use the declared catalogue; ``--catalogue
DIR`` (repeatable) overrides it; with neither, the built-in catalogue runs. The table is checked
strictly: an unknown key, a value of the wrong type, an empty list (``catalogue = []`` names no
catalogue; leave the key out for the built-in one) or a path that cannot be resolved (a symlink
loop) is one error line naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from harness.errors import ConfigError

__all__ = ["CONFIG_FILE", "ConfigError", "LintConfig", "ProjectConfig", "catalogue_dirs", "load_config"]

CONFIG_FILE = "pyproject.toml"
#: Largest ``pyproject.toml`` read, in bytes.
MAX_CONFIG_BYTES = 4 << 20
_KEYS = {"catalogue", "lint"}
_LINT_KEYS = ("select", "ignore", "paths", "exclude")


@dataclass(frozen=True)
class LintConfig:
    """The ``[tool.harness.lint]`` settings (each a tuple of strings; empty: not set).

    Attributes:
        select: rule codes or prefixes to report (empty: all).
        ignore: rule codes or prefixes never reported.
        paths: what ``harness lint`` checks when given no path, resolved against the file's
            directory (empty: the current directory).
        exclude: :mod:`fnmatch` globs of files left out when walking folders.
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    paths: tuple[Path, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectConfig:
    """The ``[tool.harness]`` settings of one project.

    Attributes:
        path: the ``pyproject.toml`` read, or ``None`` when there is none (or no table).
        catalogue: catalogue directories, resolved against the file's directory; empty when
            the table does not declare any.
    """

    path: Path | None = None
    catalogue: tuple[Path, ...] = ()
    lint: LintConfig = LintConfig()


def load_config(directory: Path | None = None) -> ProjectConfig:
    """The ``[tool.harness]`` table of ``<directory>/pyproject.toml`` (default: the current directory).

    Raises:
        ConfigError: the file cannot be read or is not TOML, or the table has an unknown key
            or a value of the wrong type.
    """
    base = Path.cwd() if directory is None else Path(directory)
    path = base / CONFIG_FILE
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:  # none, or a dangling symlink: no project settings
        return ProjectConfig()
    except (OSError, ValueError) as exc:  # a symlink loop, no permission to look
        raise ConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(mode):
        return ProjectConfig()
    if not stat.S_ISREG(mode):  # a FIFO would block the read
        raise ConfigError(f"{path}: not a regular file; not read")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    table = data.get("tool", {}).get("harness") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return ProjectConfig()
    where = f"{path}: [tool.harness]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    value = table.get("catalogue", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: 'catalogue' must be a list of directory paths, got {value!r:.80}")
    if "catalogue" in table and not value:
        raise ConfigError(f"{where}: 'catalogue' is empty; name at least one directory of case modules, "
                          "or remove the key to use the built-in catalogue")
    catalogue = tuple(_resolve(path, v) for v in value)
    return ProjectConfig(path=path, catalogue=catalogue, lint=_lint_table(path, table.get("lint", {})))


def _lint_table(path: Path, table: object) -> LintConfig:
    """``[tool.harness.lint]``, checked strictly.

    Raises:
        ConfigError: not a table, an unknown key, a value that is not a list of strings, or a
            rule code that names no rule.
    """
    from harness.lint.rules import check_codes

    where = f"{path}: [tool.harness.lint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(_LINT_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_LINT_KEYS)})")
    values: dict[str, tuple[str, ...]] = {}
    for key in _LINT_KEYS:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where}: {key!r} must be a list of strings, got {value!r:.80}")
        values[key] = tuple(value)
    try:
        check_codes(values["select"], f"{where} select")
        check_codes(values["ignore"], f"{where} ignore")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    paths = tuple(path.parent / p for p in values["paths"])
    return LintConfig(values["select"], values["ignore"], paths, values["exclude"])


def _resolve(path: Path, entry: str) -> Path:
    """The catalogue directory ``entry`` of ``path``'s table, absolute.

    Raises:
        ConfigError: it cannot be resolved (a symlink loop, a NUL character).
    """
    try:
        return (path.parent / entry).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        reason = getattr(exc, "strerror", None) or str(exc).split(":")[0]
        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            reason = "a symlink loop"
        raise ConfigError(f"{path}: [tool.harness] catalogue {entry!r:.200}: cannot be resolved ({reason})") from None


def catalogue_dirs(cli: list[Path] | None, directory: Path | None = None) -> list[Path] | None:
    """The catalogue directories a command uses: ``--catalogue`` when given, else the project's
    ``[tool.harness] catalogue``, else ``None`` (the built-in catalogue).

    Raises:
        ConfigError: the project's ``pyproject.toml`` is unusable (only read without ``--catalogue``).
    """
    if cli:
        return [Path(p) for p in cli]
    declared = load_config(directory).catalogue
    return list(declared) or None
