"""Full marginal contingency tables of discrete columns, and sub-tables by summation.

A *marginal* over the variables ``V = (v_1, ..., v_k)`` (sorted, distinct) is the
``c_{v_1} x ... x c_{v_k}`` array of counts of every combination of their categories,
over the **declared** cardinalities (every cell, observed or not: the shape is public,
from the schema alone). Under replace-one neighbours one row moves one unit of count
from one cell to another (or leaves the table unchanged), so the table's L2 sensitivity
is ``sqrt(2)`` and its L1 sensitivity 2, whatever ``k`` (proof note
``docs/privacy/algorithm-marginal-pc.md``; property test
``tests/stats/test_marginals.py``).

Sub-tables are sums over axes (post-processing of a released table); :func:`strata_view`
reshapes a marginal into the ``(strata, c_x, c_y)`` layout the G^2 tests read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError

__all__ = ["COUNT_TABLE_L2", "cells", "joint_table_l2", "marginal_counts", "marginals_of_pairs",
           "strata_view", "sub_table"]

#: L2 sensitivity of a full count table under replace-one (one count -1, another +1).
COUNT_TABLE_L2 = math.sqrt(2.0)


def joint_table_l2(tables: int) -> float:
    """L2 sensitivity under replace-one of ``tables`` full count tables (any variable
    sets, repeats allowed) concatenated into one vector: ``sqrt(2 tables)`` (one row moves
    at most one count out of and one into each table), as the smallest float whose
    square is at least ``2 tables`` exactly (never below the true value)."""
    if isinstance(tables, bool) or not isinstance(tables, int) or tables < 1:
        raise StatisticInputError(f"tables: expected an integer >= 1, got {tables!r}")
    d = math.sqrt(2.0 * tables)
    while Fraction(d) ** 2 < 2 * tables:
        d = math.nextafter(d, math.inf)
    return d


def _check_vars(variables: Sequence[int], p: int) -> tuple[int, ...]:
    vs = tuple(int(v) for v in variables)
    if not vs or len(set(vs)) != len(vs) or any(v < 0 or v >= p for v in vs):
        raise StatisticInputError(f"variables: expected distinct indices in [0, {p}), got "
                                  f"{list(vs)}")
    return vs


def cells(cardinalities: Sequence[int], variables: Sequence[int]) -> int:
    """Number of cells of the marginal over ``variables`` (public: from the schema)."""
    return math.prod(int(cardinalities[v]) for v in variables)


def marginal_counts(codes: NDArray[np.integer], cardinalities: Sequence[int],
                    variables: Sequence[int]) -> NDArray[np.int64]:
    """The full count table over ``variables`` (in the order given) of the ``(p, n)``
    category ``codes`` (validated by the data layer against ``cardinalities``): an int64
    array of shape ``(c_v for v in variables)``; one vectorised ``bincount``."""
    arr = np.asarray(codes)
    vs = _check_vars(variables, arr.shape[0])
    shape = tuple(int(cardinalities[v]) for v in vs)
    key = np.zeros(arr.shape[1], dtype=np.int64)
    for v, c in zip(vs, shape, strict=True):
        key *= c
        key += arr[v]
    flat = np.bincount(key, minlength=math.prod(shape))
    return flat.astype(np.int64, copy=False).reshape(shape)


def marginals_of_pairs(codes: NDArray[np.integer], cardinalities: Sequence[int],
                       pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int],
                                                                 NDArray[np.int64]]:
    """The 2-way tables of ``pairs`` (``x < y``), grouped by ``x``: one ``bincount`` per
    first variable over all its partners (no per-pair pass over the rows)."""
    arr = np.asarray(codes)
    by_x: dict[int, list[int]] = {}
    for x, y in pairs:
        by_x.setdefault(int(x), []).append(int(y))
    out: dict[tuple[int, int], NDArray[np.int64]] = {}
    for x, ys in by_x.items():
        cx = int(cardinalities[x])
        sizes = [cx * int(cardinalities[y]) for y in ys]
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        cy = np.array([int(cardinalities[y]) for y in ys], dtype=np.int64)
        keys = (arr[x].astype(np.int64)[None, :] * cy[:, None]
                + arr[ys].astype(np.int64) + offsets[:, None])
        flat = np.bincount(keys.ravel(), minlength=int(sum(sizes)))
        for y, off, size in zip(ys, offsets, sizes, strict=True):
            out[(x, y)] = flat[off:off + size].astype(np.int64).reshape(
                cx, int(cardinalities[y]))
    return out


def sub_table(table: NDArray[np.floating] | NDArray[np.integer], variables: Sequence[int],
              keep: Sequence[int]) -> NDArray[np.float64]:
    """The marginal over ``keep`` (a subset of ``variables``, in the order given) of a
    table over ``variables``: sum over the other axes, then the axes in ``keep``'s order."""
    vs = list(variables)
    try:
        axes_keep = [vs.index(v) for v in keep]
    except ValueError:
        raise StatisticInputError(f"keep: {list(keep)} is not a subset of {vs}") from None
    drop = tuple(i for i in range(len(vs)) if i not in axes_keep)
    arr = np.asarray(table, dtype=np.float64)
    summed = arr.sum(axis=drop) if drop else arr
    remaining = [i for i in range(len(vs)) if i in axes_keep]
    order = [remaining.index(a) for a in axes_keep]
    return np.transpose(summed, order)


def strata_view(table: NDArray[np.float64], variables: Sequence[int], x: int, y: int,
                S: Sequence[int]) -> NDArray[np.float64]:
    """``(prod c_S, c_x, c_y)`` counts of ``x`` and ``y`` per configuration of ``S``
    (all configurations, observed or not) from a table over ``variables`` that holds
    ``{x, y} u S``."""
    sub = sub_table(table, variables, (*S, x, y))
    cx, cy = sub.shape[-2], sub.shape[-1]
    return sub.reshape(-1, cx, cy)
