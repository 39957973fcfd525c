"""Result type and protocol shared by every conditional-independence test.

A CI test answers one question, "is X independent of Y given S?", for column indices
of a dataset. Non-private tests (:mod:`dpcg.citests.nonprivate`) return the exact
statistic and p-value; private tests may return ``None`` for quantities they do not
release.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dpcg.errors import CITestError


@dataclass(frozen=True)
class CIResult:
    """The outcome of one CI test.

    * ``independent``: the decision (``True`` = independence not rejected).
    * ``statistic``: the test statistic on its own scale (G^2, chi^2, z, ...), or
      ``None`` if the test does not release it.
    * ``pvalue``: the p-value, or ``None`` if the test does not release one.
    """

    independent: bool
    statistic: float | None
    pvalue: float | None


@runtime_checkable
class CITest(Protocol):
    """Anything that decides ``X _||_ Y | S`` for column indices ``x``, ``y``, ``S``."""

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        """Test ``x _||_ y | S`` (column indices; ``S`` may be empty)."""
        ...


def validate_query(x: object, y: object, S: object, p: int) -> tuple[int, int, tuple[int, ...]]:
    """Check a test query against ``p`` columns; return it normalised.

    Raises :class:`CITestError` naming the offending argument: indices must be ints in
    ``[0, p)``, ``x != y``, and ``S`` a tuple of distinct indices not containing ``x``
    or ``y``.
    """
    # Fast path for the common case (plain ints, a tuple of distinct plain ints); any
    # other input, valid or not, takes the checks below, which raise the errors.
    if type(x) is int and type(y) is int and type(S) is tuple and x != y \
            and 0 <= x < p and 0 <= y < p:
        for s in S:
            if type(s) is not int or not 0 <= s < p or s in (x, y):
                break
        else:
            if len(S) < 2 or len(set(S)) == len(S):
                return x, y, S

    def _index(name: str, v: object) -> int:
        if isinstance(v, bool):
            raise CITestError(f"{name} must be a column index (int), got {v!r}")
        try:
            i = operator.index(v)  # type: ignore[arg-type]
        except TypeError:
            raise CITestError(f"{name} must be a column index (int), got {v!r}") from None
        if not 0 <= i < p:
            raise CITestError(f"{name}={i} is not a column index in [0, {p})")
        return int(i)

    xi = _index("x", x)
    yi = _index("y", y)
    if xi == yi:
        raise CITestError(f"x and y must differ, both are {xi}")
    if not isinstance(S, tuple | list):
        raise CITestError(f"S must be a tuple of column indices, got {S!r}")
    Si = tuple(_index("S", s) for s in S)
    if len(set(Si)) != len(Si):
        raise CITestError(f"S={Si} contains a repeated column")
    if xi in Si or yi in Si:
        raise CITestError(f"S={Si} must not contain x={xi} or y={yi}")
    return xi, yi, Si
