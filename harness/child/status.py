"""What a cell reports about its own run: the result statuses, their policy, the result file's shape.

The cell process (:mod:`harness.child.cell`) writes one of these statuses in its result file;
the classifier (:mod:`harness.classify.classifier`) turns status, exit code and stderr into an
outcome and a kind. Both read the statuses and the predicates below, so the two sides cannot
drift apart. Like regrtest's ``result.State`` these are plain strings, not an ``enum``: the
module imports nothing at all, because every cell process imports it before the case runs.

The statuses (also the ``evidence.status`` enum of ``harness/schemas/shard.schema.json``):

* :data:`RETURNED`: the case's ``run(cell)`` returned, or its script ended (``sys.exit(0)``
  included; ``system_exit`` then says so).
* :data:`RAISED`: the case raised; the exception fields say what.
* :data:`WRONG`: the case raised :class:`harness.case.Wrong`: it ran, the data was wrong.
* :data:`SKIPPED`: the case raised :class:`harness.case.Skip`: a precondition is missing.
* :data:`IMPORT_FAILED`: a module case failed to import (the case is broken, not a finding).
"""

from __future__ import annotations

# ``typing`` stays unimported at run time (see the module docstring); type checkers treat
# any name ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    class CellResult(TypedDict, total=False):
        """The result file a cell writes (JSON). Fields a case controls are ``object``.

        ``status`` and ``warnings`` are always there; ``duration_s``, ``first_batch_s`` and
        ``batches`` whenever the case was started; the exception fields (``exc_type``,
        ``message``, ``notes``, ``traceback``) with every status but :data:`RETURNED`;
        ``system_exit`` when a script ended with ``sys.exit(0)``; ``require_check`` for a
        catalogue case (one with no checked batch is never a pass).
        """

        status: str
        warnings: list[str]
        exc_type: str
        message: str
        notes: list[str]
        traceback: str
        duration_s: float
        first_batch_s: object  # the case's ``cell.first_batch_s``: it may set anything
        batches: object  # the case's ``cell.batches``: likewise
        require_check: bool
        system_exit: bool
        problems: list[dict[str, object]]  # harness reproduce: the culprits, named after the case ended


__all__ = [
    "IMPORT_FAILED",
    "RAISED",
    "RETURNED",
    "SKIPPED",
    "STATUSES",
    "WRONG",
    "is_broken_case",
    "is_case_verdict",
]

RETURNED = "returned"
RAISED = "raised"
WRONG = "wrong"
SKIPPED = "skipped"
IMPORT_FAILED = "import-failed"

#: Every status, in the order of the module docstring.
STATUSES = (RETURNED, RAISED, WRONG, SKIPPED, IMPORT_FAILED)


def is_case_verdict(status: str | None) -> bool:
    """Whether the case judged its own run (:data:`WRONG` or :data:`SKIPPED`, raised through
    :mod:`harness.case`): the outcome is that status, with the exception's message as the reason."""
    return status in (WRONG, SKIPPED)


def is_broken_case(status: str | None) -> bool:
    """Whether the status says the case itself cannot run (:data:`IMPORT_FAILED`): a broken
    case, never a finding about a start method."""
    return status == IMPORT_FAILED
