"""Reading the fields of a JSON object that crossed a process boundary, with one-line errors.

The cell request (:mod:`harness.child.request`) and the warm template's messages
(:mod:`harness.child.warm_protocol`) are rebuilt from decoded JSON on the other side. These
helpers check what arrived against what the class declares, so a mismatch between the two
sides (a field one side no longer sends, or one it does not know yet) fails at once, naming
the message and the field, instead of deep inside the child.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TypeVar

__all__ = ["MessageError", "as_object", "optional", "required", "string_map", "strings"]

_T = TypeVar("_T")


class MessageError(ValueError):
    """A JSON message that cannot be read: not an object, or a missing, unknown or mistyped
    field. The text is one line naming the message and the field."""


def as_object(data: object, what: str, known: Collection[str]) -> Mapping[str, object]:
    """``data`` as a JSON object whose keys are all in ``known``.

    Args:
        what: the message's name in errors (``cell request``, ``template message 'ready'``).

    Raises:
        MessageError: ``data`` is not an object, or it has a key not in ``known``.
    """
    if not isinstance(data, Mapping):
        raise MessageError(f"{what}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise MessageError(f"{what}: unknown field {unknown[0]!r}")
    return data


def _typed(data: Mapping[str, object], name: str, kind: type[_T], what: str) -> _T:
    value = data[name]
    # JSON has no separate integers and booleans in Python: True must not pass for an int.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise MessageError(
            f"{what}: field {name!r} must be {kind.__name__}, got {type(value).__name__}"
        )
    return value


def required(data: Mapping[str, object], name: str, kind: type[_T], what: str) -> _T:
    """``data[name]``, which must be a ``kind``.

    Raises:
        MessageError: it is missing, or not a ``kind``.
    """
    if name not in data:
        raise MessageError(f"{what}: missing field {name!r}")
    return _typed(data, name, kind, what)


def optional(data: Mapping[str, object], name: str, kind: type[_T], default: _T, what: str) -> _T:
    """``data[name]`` as a ``kind``, or ``default`` when it is absent.

    Raises:
        MessageError: it is present but not a ``kind``.
    """
    return required(data, name, kind, what) if name in data else default


def strings(
    data: Mapping[str, object], name: str, what: str, default: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """``data[name]``, a list of strings, as a tuple; ``default`` when absent (``None``: required).

    Raises:
        MessageError: it is missing (without a default), or not a list of strings.
    """
    if default is not None and name not in data:
        return default
    values = required(data, name, list, what)
    out = tuple(v for v in values if isinstance(v, str))
    if len(out) != len(values):
        raise MessageError(f"{what}: field {name!r} must hold only strings")
    return out


def string_map(data: Mapping[str, object], name: str, what: str) -> dict[str, str]:
    """``data[name]``, an object whose values are all strings (an environment).

    Raises:
        MessageError: it is missing, or not such an object.
    """
    value = required(data, name, dict, what)
    out = {str(k): v for k, v in value.items() if isinstance(v, str)}
    if len(out) != len(value):
        raise MessageError(f"{what}: field {name!r} must map names to strings")
    return out
