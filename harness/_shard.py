"""Shards: one runner's results as JSON, written atomically and validated on read.

Shape (``harness/schemas/shard.schema.json``)::

    {"schema_version": 1, "complete": bool, "runner": {...}, "results": [{...}, ...]}
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import jsonschema

from harness import __version__
from harness._fileio import replace_file
from harness._policy import Platform, available_methods, current_os, default_method, machine_arch

__all__ = [
    "SCHEMA_VERSION",
    "ShardError",
    "read_shard",
    "replace_file",
    "runner_info",
    "schema",
    "shard_filename",
    "write_json_atomic",
]

SCHEMA_VERSION = 1
_SCHEMA_DIR = Path(__file__).with_name("schemas")


class ShardError(Exception):
    """A shard that cannot be used; ``str()`` is one line naming the file and the reason."""


@cache
def schema(name: str = "shard") -> dict:
    """The published JSON Schema ``harness/schemas/<name>.schema.json``."""
    return json.loads((_SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _git_commit() -> str | None:
    try:
        # The checkout the run happens in (nox installs the project into site-packages).
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def runner_info(emulating: Platform | None = None, **extra) -> dict:
    """Describe this machine as a shard's ``runner`` object; ``extra`` keys are added.

    Args:
        emulating: the platform profile the run emulates (:data:`harness._policy.PROFILES`),
            or ``None``. An emulating runner keeps its real ``os`` and adds ``emulates`` (the
            platform id) and ``profile`` (what was emulated); its ``start_methods`` and
            ``default_method`` are the emulated platform's, and its id ends in ``-as-<id>``.
    """
    os_name = current_os()
    arch = machine_arch()
    py = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    torch = _torch_version()
    rid = f"{os_name}-{arch}-py{sys.version_info.major}.{sys.version_info.minor}-torch{torch}"
    if emulating is not None:
        rid += f"-as-{emulating.id}"
    info = {
        "id": rid,
        "os": os_name,
        "arch": arch,
        "python": py,
        "python_implementation": platform.python_implementation(),
        "torch": torch,
        "start_methods": available_methods(emulating),
        "default_method": default_method(emulating),
        "harness_version": __version__,
        "git_commit": _git_commit(),
        "started_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu_count": os.cpu_count() or 1,
    }
    if emulating is not None:
        info["emulates"] = emulating.id
        info["profile"] = {
            "id": emulating.id,
            "methods": list(emulating.methods),
            "sharing_strategy": emulating.sharing_strategy,
            "temp_dir_chars": emulating.temp_dir_chars,
        }
    info.update(extra)
    return info


def shard_filename(runner: dict) -> str:
    """File name for a runner's shard, from its os, arch, Python and torch versions."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", runner["id"]) + ".json"


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` through a temp file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be read by others
        replace_file(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_shard(path: Path) -> dict:
    """Read and validate one shard.

    Raises:
        ShardError: unreadable, not JSON (or truncated), a foreign JSON document, an unknown
            ``schema_version``, or a schema violation. The message is one line naming ``path``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ShardError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ShardError(f"{path}: invalid or truncated JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "schema_version" not in data or "runner" not in data:
        raise ShardError(f"{path}: not a harness shard (no schema_version/runner)")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ShardError(f"{path}: unsupported schema_version {data['schema_version']!r} "
                         f"(this harness reads {SCHEMA_VERSION})")
    validator = jsonschema.Draft202012Validator(schema("shard"))
    err = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ShardError(f"{path}: schema violation at {where}: {err.message}")
    return data
