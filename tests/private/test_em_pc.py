"""EM-PC's count utility and the private scores' public parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.citests.private import P_LIPSCHITZ, StatisticSource
from dpcg.private.em_pc import count_utilities

floats = st.floats(min_value=-50, max_value=50, allow_nan=False)


@given(st.lists(floats, min_size=1, max_size=30))
def test_count_utility_is_zero_exactly_at_the_number_of_negative_margins(
    scores: list[float],
) -> None:
    u = count_utilities(np.array(scores))
    assert u.shape == (len(scores) + 1,)
    assert np.all(u <= 0)
    k_neg = sum(1 for s in scores if s < 0)
    k_nonpos = sum(1 for s in scores if s <= 0)
    zeros = set(np.flatnonzero(u == 0).tolist())
    assert zeros  # some k has utility 0
    assert zeros <= set(range(k_neg, k_nonpos + 1))


@settings(max_examples=100, deadline=None)
@given(st.lists(floats, min_size=1, max_size=30), st.data())
def test_count_utility_sensitivity_is_at_most_delta(scores: list[float],
                                                     data: st.DataObject) -> None:
    delta = 0.7
    a = np.array(scores)
    shift = np.array(data.draw(st.lists(st.floats(-delta, delta), min_size=len(scores),
                                        max_size=len(scores))))
    ua = count_utilities(a)
    ub = count_utilities(a + shift)
    assert float(np.max(np.abs(ua - ub))) <= delta + 1e-9


def _source(n: int = 400) -> StatisticSource:
    codes = (np.arange(3 * n).reshape(3, n) % np.array([[2], [3], [2]])).astype(np.uint8)
    return StatisticSource(codes, (2, 3, 2), "kendall-z")


def test_subsample_sensitivity_scales_as_sqrt_n_over_m() -> None:
    src = _source(400)
    for m in (4, 25, 100, 399):
        assert src.sensitivity(m) == pytest.approx(src.sensitivity() * math.sqrt(400 / m))
    sub = src.subset(np.arange(0, 400, 4))
    assert sub.n == 100
    assert sub.sensitivity() == pytest.approx(src.sensitivity(100))


def test_pvalue_score_is_lipschitz_in_abs_z() -> None:
    from scipy.special import erf

    z = np.linspace(0, 6, 20001)
    slope = np.max(np.abs(np.diff(erf(z / math.sqrt(2))) / np.diff(z)))
    assert slope <= P_LIPSCHITZ + 1e-9
    src = StatisticSource(_source().codes, (2, 3, 2), "kendall-p")
    assert src.sensitivity() == pytest.approx(P_LIPSCHITZ * _source().sensitivity())
    assert src.threshold(0, 1, ()) == pytest.approx(0.95)


def test_cmi_threshold_uses_declared_cardinalities() -> None:
    from scipy.stats import chi2

    src = StatisticSource(_source().codes, (2, 3, 2), "cmi")
    assert src.threshold(0, 1, (2,)) == pytest.approx(chi2.isf(0.05, 1 * 2 * 2) / 2)


@pytest.mark.parametrize(
    ("codes", "cards", "match"),
    [
        (np.zeros((2, 10), dtype=np.float64), (2, 2), "integer"),
        (np.full((2, 10), 3, dtype=np.uint8), (2, 2), "outside"),
        (np.zeros((2, 10), dtype=np.uint8), (2, None), "cardinalities"),
        (np.zeros((2, 10), dtype=np.uint8), (2,), "cardinalities"),
    ],
)
def test_source_rejects_bad_input(codes: np.ndarray, cards: tuple[int | None, ...],
                                  match: str) -> None:
    from dpcg.errors import CITestError

    with pytest.raises(CITestError, match=match):
        StatisticSource(codes, cards)
