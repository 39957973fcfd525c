"""Neighbouring relations and the explicit conversions between them.

The default relation is replace-one (bounded DP: ``n`` is public). Add/remove is
supported only where a mechanism's proof covers it. Conversions are explicit
functions; nothing converts implicitly. See ``docs/privacy/relations.md``.
"""

from __future__ import annotations

import math
from enum import StrEnum

from accounting.errors import InvalidParameterError


class Relation(StrEnum):
    """A neighbouring relation between datasets."""

    #: D and D' have the same size n and differ in one record (bounded DP).
    REPLACE_ONE = "replace-one"
    #: D' is D with one record added or removed (unbounded DP).
    ADD_REMOVE = "add-remove"

    @classmethod
    def parse(cls, value: str | Relation) -> Relation:
        """Parse a relation from its name (``"replace-one"`` / ``"add-remove"``)."""
        if isinstance(value, Relation):
            return value
        for member in cls:
            if value in (member.value, member.name, member.name.lower()):
                return member
        raise InvalidParameterError(
            "relation", value, "expected 'replace-one' or 'add-remove'"
        )


def _check_nonnegative(name: str, value: float) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidParameterError(name, value, "must be a real number")
    if not math.isfinite(value) or value < 0:
        raise InvalidParameterError(name, value, "must be finite and >= 0")


def sensitivity_add_remove_to_replace_one(sensitivity_ar: float) -> float:
    """Replace-one sensitivity implied by an add/remove sensitivity.

    A replacement is a removal followed by an addition, so by the triangle
    inequality ``Delta_R1 <= 2 Delta_AR`` for a statistic of fixed-size data.
    """
    _check_nonnegative("sensitivity_ar", sensitivity_ar)
    return 2.0 * sensitivity_ar


def epsilon_add_remove_to_replace_one(epsilon_ar: float) -> float:
    """An ``eps``-DP add/remove mechanism is ``2 eps``-DP under replace-one (group privacy)."""
    _check_nonnegative("epsilon_ar", epsilon_ar)
    return 2.0 * epsilon_ar


def convert_sensitivity(sensitivity: float, declared: Relation, target: Relation) -> float:
    """Sensitivity under ``target`` from a bound declared under ``declared``.

    Only the sound direction exists: add/remove -> replace-one doubles the bound.
    Replace-one -> add/remove has no general conversion (the statistic may depend on
    ``n``) and raises.
    """
    _check_nonnegative("sensitivity", sensitivity)
    if declared is target:
        return float(sensitivity)
    if declared is Relation.ADD_REMOVE and target is Relation.REPLACE_ONE:
        return sensitivity_add_remove_to_replace_one(sensitivity)
    raise InvalidParameterError(
        "relation",
        target.value,
        f"a sensitivity declared under {declared.value} does not imply one under "
        f"{target.value}; declare the bound under {target.value} explicitly",
    )
