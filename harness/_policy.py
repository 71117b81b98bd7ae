"""The one platform policy table: which start methods exist, and which is the default.

Sources:
    * CPython ``multiprocessing`` docs, "Contexts and start methods": Windows has only
      ``spawn``; macOS defaults to ``spawn`` since Python 3.8; POSIX defaults to ``fork``
      until 3.13 and to ``forkserver`` from 3.14 (gh-84559).
    * PyTorch ``torch.utils.data`` docs, "Platform-specific behaviors".
"""

from __future__ import annotations

import multiprocessing
import platform
import sys
from dataclasses import dataclass

__all__ = [
    "PLATFORMS",
    "Platform",
    "available_methods",
    "current_os",
    "default_method",
    "platform_of",
    "platform_of_runner",
    "python_of",
    "resolve_method_alias",
]


@dataclass(frozen=True)
class Platform:
    """One column of the compatibility view.

    Attributes:
        id: ``linux-py<=3.13``, ``linux-py>=3.14``, ``macos`` or ``windows``.
        os: ``linux``, ``macos`` or ``windows``.
        default_method: the start method a user gets without asking.
        methods: the start methods that exist there.
        python_min: lowest Python (major, minor) this column covers, inclusive.
        python_max: highest Python (major, minor) this column covers, inclusive.
    """

    id: str
    os: str
    default_method: str
    methods: tuple[str, ...]
    python_min: tuple[int, int] = (3, 0)
    python_max: tuple[int, int] = (3, 99)

    def covers(self, os_name: str, python: tuple[int, int]) -> bool:
        """Whether a runner with this ``os_name`` and ``python`` (major, minor) is this column."""
        return os_name == self.os and self.python_min <= python <= self.python_max


PLATFORMS: tuple[Platform, ...] = (
    Platform("linux-py<=3.13", "linux", "fork", ("fork", "spawn", "forkserver"), python_max=(3, 13)),
    Platform("linux-py>=3.14", "linux", "forkserver", ("fork", "spawn", "forkserver"), python_min=(3, 14)),
    Platform("macos", "macos", "spawn", ("fork", "spawn", "forkserver"), python_min=(3, 8)),
    Platform("windows", "windows", "spawn", ("spawn",)),
)

_ALIASES = {
    "windows": "windows",
    "macos": "macos",
    "linux": "linux-py<=3.13",
    "linux-py3.13": "linux-py<=3.13",
    "linux-py3.14": "linux-py>=3.14",
}


def current_os() -> str:
    """This machine's OS as ``linux``, ``macos`` or ``windows`` (others map to ``linux``)."""
    name = sys.platform
    if name.startswith("win"):
        return "windows"
    if name == "darwin":
        return "macos"
    return "linux"


def platform_of(os_name: str, python: tuple[int, int]) -> Platform:
    """The policy column for a runner.

    Raises:
        ValueError: no column covers ``os_name`` at that Python version.
    """
    for plat in PLATFORMS:
        if plat.covers(os_name, python):
            return plat
    raise ValueError(f"no platform policy for os={os_name!r} python={python}")


def python_of(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string such as ``"3.14.0rc2"``.

    Raises:
        ValueError: the string does not start with ``major.minor``.
    """
    major, minor = version.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or "x")


def platform_of_runner(runner: dict) -> Platform | None:
    """The policy column a shard's ``runner`` object belongs to, or ``None`` if none covers it."""
    try:
        return platform_of(runner["os"], python_of(runner["python"]))
    except (KeyError, ValueError):
        return None


def available_methods() -> list[str]:
    """Start methods this interpreter offers (``multiprocessing.get_all_start_methods``)."""
    return list(multiprocessing.get_all_start_methods())


def default_method() -> str:
    """The start method this interpreter uses when none is set (from the policy table)."""
    return platform_of(current_os(), sys.version_info[:2]).default_method


def resolve_method_alias(name: str) -> str:
    """Map ``fork``/``spawn``/``forkserver`` to themselves, and a platform alias to its default.

    Platform aliases: ``windows``, ``macos``, ``linux``, ``linux-py3.13``, ``linux-py3.14``,
    and any platform id of :data:`PLATFORMS`.

    Raises:
        ValueError: ``name`` is neither a start method nor a known platform.
    """
    if name in ("fork", "spawn", "forkserver"):
        return name
    plat_id = _ALIASES.get(name, name)
    for plat in PLATFORMS:
        if plat.id == plat_id:
            return plat.default_method
    known = ["fork", "spawn", "forkserver", *_ALIASES, *(p.id for p in PLATFORMS)]
    raise ValueError(f"unknown start method or platform {name!r} (choose from {', '.join(dict.fromkeys(known))})")


def machine_arch() -> str:
    """Normalised CPU architecture: ``x86_64``, ``arm64``, ..."""
    arch = platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(arch, arch)
