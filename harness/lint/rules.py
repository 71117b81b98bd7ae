"""The rule codes of ``harness lint``: stable, one per mechanism.

A rule says what the source shows; which catalogue case it stands for, its fix, and where it
breaks come from the catalogue (``CASE['matches']['static']``, :mod:`harness.inspect.hints`)
and its committed observations (:mod:`harness.report.breaks`), never from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "selected"]


@dataclass(frozen=True)
class Rule:
    """One rule.

    Attributes:
        code: ``HL`` and three digits; never reused.
        name: a short kebab-case name (SARIF's ``name``).
        level: ``error`` or ``warning`` (a hazard: fails only on some Pythons).
        summary: one sentence.
    """

    code: str
    name: str
    level: str
    summary: str


RULES: dict[str, Rule] = {r.code: r for r in (
    Rule("HL101", "lambda-reaches-worker", "error",
         "A lambda reaches a DataLoader worker: spawn and forkserver cannot pickle it."),
    Rule("HL102", "local-function-reaches-worker", "error",
         "A function defined inside a function reaches a DataLoader worker: it pickles by a "
         "'<locals>' name no worker can import."),
    Rule("HL103", "local-class-reaches-worker", "error",
         "A class defined inside a function (or its instance, or a member) reaches a DataLoader "
         "worker: it pickles by a '<locals>' name no worker can import."),
    Rule("HL201", "dataset-holds-resource", "error",
         "A Dataset stores in __init__ something that cannot be pickled: an open file, a "
         "connection, a lock, a generator, a module, a library handle."),
    Rule("HL202", "dataset-holds-itertools", "warning",
         "A Dataset stores in __init__ an itertools iterator: pickled up to Python 3.13, "
         "refused from 3.14."),
    Rule("HL301", "worker-start-without-main-guard", "error",
         "A script starts worker processes outside 'if __name__ == \"__main__\":': spawn and "
         "forkserver workers import it again."),
    Rule("HL302", "definition-under-main-guard", "error",
         "A function or class defined under the main guard reaches a worker: a spawned worker "
         "imports the script as __mp_main__, where that block never ran."),
    Rule("HL303", "notebook-definition-reaches-worker", "error",
         "A function or class defined in a notebook reaches a worker: a spawned worker cannot "
         "import the kernel's __main__."),
)}

_CODE = re.compile(r"^HL[0-9]{0,3}$")


def selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """Whether ``code`` is on: it starts with an entry of ``select`` (all when empty) and with
    none of ``ignore`` (``HL1`` selects ``HL101`` to ``HL199``, as ruff's prefixes do)."""
    if select and not any(code.startswith(s) for s in select):
        return False
    return not any(code.startswith(i) for i in ignore)


def check_codes(codes: tuple[str, ...], where: str) -> tuple[str, ...]:
    """``codes`` when each is a rule code or prefix (``HL``, ``HL1``, ``HL101``).

    Raises:
        ValueError: one is not, naming it and ``where``.
    """
    for code in codes:
        if not _CODE.match(code) or not any(r.startswith(code) for r in RULES):
            raise ValueError(f"{where}: {code!r} is no rule code or prefix (rules: {', '.join(RULES)})")
    return codes
