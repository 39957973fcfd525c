"""A toy statistic with its proven sensitivity: the whole of what adding one takes.

``match-fraction``: the fraction of rows with ``x == y`` (codes compared as integers;
strata ignored), public ``n``. Replacing one row changes the number of matching rows by
at most one, so the replace-one sensitivity is ``1/n`` (proof note:
``tests/testing/toy_statistic.md``). In ``dpcg/stats/registry.py`` (or a module it
imports) it would be one ``register(SPEC)``; here the tests call :func:`registered`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from accounting.relations import Relation
from dpcg.stats.registry import StatisticSpec, _int_param, register, unregister


def match_fraction(x: NDArray[np.integer], y: NDArray[np.integer],
                   strata: NDArray[np.integer], *, n: float) -> float:
    """``#{i : x_i == y_i} / n`` (``n`` public: the declared number of rows)."""
    return float(np.count_nonzero(np.asarray(x) == np.asarray(y))) / _int_param("n", n, 1)


def match_fraction_sensitivity(*, n: float) -> float:
    """``1/n`` under replace-one (``n >= 1``)."""
    return 1.0 / _int_param("n", n, 1)


SPEC = StatisticSpec(
    name="match-fraction",
    relation=Relation.REPLACE_ONE,
    sensitivity=match_fraction_sensitivity,
    assumptions="x and y integer codes compared for equality; strata ignored; n public "
    "(the declared number of rows, n >= 1). Bound 1/n, attained.",
    proof_note="tests/testing/toy_statistic.md",
    statistic=match_fraction,
    public_params=("n",),
)


@contextmanager
def registered(spec: StatisticSpec = SPEC) -> Iterator[StatisticSpec]:
    """``spec`` in the statistic registry for the duration of a test."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name, spec.relation)
