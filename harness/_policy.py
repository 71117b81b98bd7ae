"""The one platform policy table: which start methods exist, and which is the default.

Each row is also a *platform profile*: the settings that make that platform's workers behave
as they do, which ``harness run --profile``, ``harness reproduce --start-method`` and the pytest
plugin reproduce on another OS (emulation, never called an observation):

* the start methods that exist there, and the default one;
* torch's tensor sharing strategy: ``file_descriptor`` on Linux, ``file_system`` on macOS and
  Windows, where it is the only one (``torch/multiprocessing/__init__.py``);
* the length of the default temp directory: macOS runners put ``TMPDIR`` under
  ``/var/folders/<2>/<28>/T/`` (49 characters), and AF_UNIX socket paths made under it (the
  forkserver's listener, torch's shared-memory manager) must stay within macOS's 104 bytes
  (``sys/un.h``: ``sun_path[104]``; Linux has 108).

Sources:
    * CPython ``multiprocessing`` docs, "Contexts and start methods": Windows has only
      ``spawn``; macOS defaults to ``spawn`` since Python 3.8; POSIX defaults to ``fork``
      until 3.13 and to ``forkserver`` from 3.14 (gh-84559).
    * PyTorch ``torch.utils.data`` docs, "Platform-specific behaviors"; PyTorch
      ``multiprocessing`` docs, "Sharing strategies".
"""

from __future__ import annotations

import multiprocessing
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import UsageError

__all__ = [
    "PLATFORMS",
    "PROFILES",
    "Platform",
    "profile",
    "available_methods",
    "current_os",
    "default_method",
    "emulated_platform_of_runner",
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
        sharing_strategy: torch's default tensor sharing strategy there.
        temp_dir_chars: length (characters) of the default temp directory there, for
            emulating it; ``None`` where it does not matter (no AF_UNIX sockets).
    """

    id: str
    os: str
    default_method: str
    methods: tuple[str, ...]
    python_min: tuple[int, int] = (3, 0)
    python_max: tuple[int, int] = (3, 99)
    sharing_strategy: str = "file_descriptor"
    temp_dir_chars: int | None = None

    def covers(self, os_name: str, python: tuple[int, int]) -> bool:
        """Whether a runner with this ``os_name`` and ``python`` (major, minor) is this column."""
        return os_name == self.os and self.python_min <= python <= self.python_max


PLATFORMS: tuple[Platform, ...] = (
    Platform("linux-py<=3.13", "linux", "fork", ("fork", "spawn", "forkserver"), python_max=(3, 13)),
    Platform("linux-py>=3.14", "linux", "forkserver", ("fork", "spawn", "forkserver"), python_min=(3, 14)),
    Platform("macos", "macos", "spawn", ("fork", "spawn", "forkserver"), python_min=(3, 8),
             sharing_strategy="file_system", temp_dir_chars=49),
    Platform("windows", "windows", "spawn", ("spawn",), sharing_strategy="file_system"),
)

#: Platforms that ``harness run --profile`` emulates on another OS, by profile name.
PROFILES: dict[str, Platform] = {p.id: p for p in PLATFORMS if p.os != "linux"}

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


def platform_of_runner(runner: Mapping[str, object]) -> Platform | None:
    """The policy column a shard's ``runner`` *observes*, or ``None`` if none covers it (or its
    ``os`` or ``python`` is missing or unreadable).

    A runner that emulates another platform (``runner["emulates"]``) observes no column: its
    cells are emulations (:func:`emulated_platform_of_runner`), never observations.
    """
    os_name, python = runner.get("os"), runner.get("python")
    if runner.get("emulates") or not isinstance(os_name, str) or not isinstance(python, str):
        return None
    try:
        return platform_of(os_name, python_of(python))
    except ValueError:
        return None


def emulated_platform_of_runner(runner: Mapping[str, object]) -> Platform | None:
    """The policy column a runner emulates with a platform profile, or ``None``."""
    name = runner.get("emulates")
    return PROFILES.get(name) if isinstance(name, str) else None


def profile(name: str) -> Platform:
    """The platform profile ``name`` (``macos`` or ``windows``).

    Raises:
        UsageError: not a profile; the message lists the choices (also a ``ValueError``).
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown profile {name!r} (choose from {', '.join(PROFILES)})") from None


def available_methods(emulating: Platform | None = None) -> list[str]:
    """Start methods this interpreter offers (``multiprocessing.get_all_start_methods``), or,
    when ``emulating`` a platform, those of them that exist there too."""
    methods = list(multiprocessing.get_all_start_methods())
    return [m for m in methods if emulating is None or m in emulating.methods]


def default_method(emulating: Platform | None = None) -> str:
    """The start method this interpreter (or the ``emulating`` platform) uses when none is set."""
    if emulating is not None:
        return emulating.default_method
    return platform_of(current_os(), sys.version_info[:2]).default_method


def resolve_method_alias(name: str) -> str:
    """Map ``fork``/``spawn``/``forkserver`` to themselves, and a platform alias to its default.

    Platform aliases: ``windows``, ``macos``, ``linux``, ``linux-py3.13``, ``linux-py3.14``,
    and any platform id of :data:`PLATFORMS`.

    Raises:
        UsageError: ``name`` is neither a start method nor a known platform (also a ``ValueError``).
    """
    if name in ("fork", "spawn", "forkserver"):
        return name
    plat_id = _ALIASES.get(name, name)
    for plat in PLATFORMS:
        if plat.id == plat_id:
            return plat.default_method
    known = ["fork", "spawn", "forkserver", *_ALIASES, *(p.id for p in PLATFORMS)]
    raise UsageError(f"unknown start method or platform {name!r} (choose from {', '.join(dict.fromkeys(known))})")


def machine_arch() -> str:
    """Normalised CPU architecture: ``x86_64``, ``arm64``, ..."""
    arch = platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(arch, arch)
