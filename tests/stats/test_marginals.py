"""Full marginal tables: counts, sub-tables by summation, and the replace-one L2
sensitivity sqrt(2) of a count table (property test; docs/privacy/algorithm-marginal-pc.md)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.errors import StatisticInputError
from dpcg.stats.marginals import (
    COUNT_TABLE_L2,
    cells,
    joint_table_l2,
    marginal_counts,
    marginals_of_pairs,
    strata_view,
    sub_table,
)


@st.composite
def neighbours(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """Codes of 1-5 columns with declared cardinalities 1-4, 1-30 rows, a neighbour that
    replaces one row by any row, and a marginal's variables (any order)."""
    p = draw(st.integers(1, 5))
    cards = draw(st.lists(st.integers(1, 4), min_size=p, max_size=p))
    n = draw(st.integers(1, 30))
    rows = [[draw(st.integers(0, c - 1)) for c in cards] for _ in range(n)]
    codes = np.array(rows, dtype=np.uint8).T.copy()
    other = codes.copy()
    i = draw(st.integers(0, n - 1))
    other[:, i] = [draw(st.integers(0, c - 1)) for c in cards]
    k = draw(st.integers(1, p))
    variables = draw(st.permutations(range(p)))[:k]
    return codes, other, cards, list(variables)


@settings(max_examples=300, deadline=None)
@given(neighbours())
def test_a_count_table_moves_by_at_most_sqrt2_under_replace_one(
        case: tuple[np.ndarray, np.ndarray, list[int], list[int]]) -> None:
    codes, other, cards, variables = case
    a = marginal_counts(codes, cards, variables)
    b = marginal_counts(other, cards, variables)
    diff = (a - b).ravel()
    l2 = math.sqrt(float(np.dot(diff, diff)))
    assert l2 <= COUNT_TABLE_L2 + 1e-12
    assert l2 in (0.0, pytest.approx(COUNT_TABLE_L2))  # one unit moved, or nothing
    assert a.shape == tuple(cards[v] for v in variables)  # public shape, every cell
    assert int(a.sum()) == codes.shape[1]


@st.composite
def joint_neighbours(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, list[int],
                                               list[list[int]]]:
    """As :func:`neighbours`, with 1-12 marginals (any variable sets, repeats allowed)."""
    codes, other, cards, _ = draw(neighbours())
    p = len(cards)
    tables = draw(st.lists(st.lists(st.integers(0, p - 1), min_size=1, max_size=p,
                                    unique=True), min_size=1, max_size=12))
    return codes, other, cards, tables


@settings(max_examples=300, deadline=None)
@given(joint_neighbours())
def test_a_joint_release_of_tables_moves_by_at_most_sqrt_2t_under_replace_one(
        case: tuple[np.ndarray, np.ndarray, list[int], list[list[int]]]) -> None:
    """The sensitivity of Marginal-PC's one release per level: the concatenated count
    vector of T tables moves by at most sqrt(2 T) in L2 (exactly sqrt(2 k), k the tables
    on which the replaced row and its replacement differ)."""
    codes, other, cards, tables = case
    a = np.concatenate([marginal_counts(codes, cards, t).ravel() for t in tables])
    b = np.concatenate([marginal_counts(other, cards, t).ravel() for t in tables])
    sq = int(np.dot(a - b, a - b))  # integer counts: the squared norm is exact
    assert sq <= 2 * len(tables)
    assert Fraction(joint_table_l2(len(tables))) ** 2 >= sq
    i = int(np.flatnonzero((codes != other).any(axis=0))[0]) if (codes != other).any() else 0
    moved = sum(1 for t in tables if (codes[t, i] != other[t, i]).any())
    assert sq == 2 * moved


@pytest.mark.parametrize("tables", [1, 2, 3, 7, 190, 19_900, 10**6 + 1])
def test_joint_l2_is_never_below_sqrt_2t(tables: int) -> None:
    d = joint_table_l2(tables)
    assert Fraction(d) ** 2 >= 2 * tables
    assert d == pytest.approx(math.sqrt(2 * tables), rel=1e-15)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "3"])
def test_joint_l2_refuses_bad_counts(bad: object) -> None:
    with pytest.raises(StatisticInputError, match="tables"):
        joint_table_l2(bad)  # type: ignore[arg-type]


def test_the_joint_bound_is_attained() -> None:
    codes = np.array([[0, 1, 1], [0, 0, 1]], dtype=np.uint8)
    other = codes.copy()
    other[:, 0] = [1, 1]  # the row differs on both variables: every table moves
    tables = [[0], [1], [0, 1], [1, 0]]
    a = np.concatenate([marginal_counts(codes, [2, 2], t).ravel() for t in tables])
    b = np.concatenate([marginal_counts(other, [2, 2], t).ravel() for t in tables])
    assert math.isclose(float(np.linalg.norm(a - b)), joint_table_l2(len(tables)))


def test_the_bound_is_attained() -> None:
    codes = np.array([[0, 1, 1], [0, 0, 1]], dtype=np.uint8)
    other = codes.copy()
    other[:, 0] = [1, 1]
    d = (marginal_counts(codes, [2, 2], [0, 1]) - marginal_counts(other, [2, 2], [0, 1]))
    assert math.isclose(float(np.linalg.norm(d.ravel())), COUNT_TABLE_L2)


def test_counts_sub_tables_and_strata_agree_with_a_direct_count() -> None:
    rng = np.random.default_rng(3)
    cards = [2, 3, 4, 2]
    codes = np.stack([rng.integers(0, c, 500) for c in cards]).astype(np.uint8)
    full = marginal_counts(codes, cards, [0, 1, 2, 3])
    direct = np.zeros(cards, dtype=np.int64)
    np.add.at(direct, tuple(codes), 1)
    assert np.array_equal(full, direct)
    assert np.array_equal(sub_table(full, [0, 1, 2, 3], [2, 0]),
                          marginal_counts(codes, cards, [2, 0]))
    view = strata_view(full.astype(float), [0, 1, 2, 3], 1, 3, (0, 2))
    assert view.shape == (2 * 4, 3, 2)
    assert np.array_equal(view, marginal_counts(codes, cards, [0, 2, 1, 3]).reshape(8, 3, 2))
    pairs = marginals_of_pairs(codes, cards, [(0, 1), (0, 3), (1, 2)])
    for (x, y), t in pairs.items():
        assert np.array_equal(t, marginal_counts(codes, cards, [x, y]))
    assert cells(cards, [1, 2]) == 12


def test_bad_variables_are_refused() -> None:
    codes = np.zeros((2, 3), dtype=np.uint8)
    for bad in ([], [0, 0], [2], [-1]):
        with pytest.raises(StatisticInputError):
            marginal_counts(codes, [2, 2], bad)
    with pytest.raises(StatisticInputError):
        sub_table(np.zeros((2, 2)), [0, 1], [3])
