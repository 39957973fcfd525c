"""The G-test on noisy tables (dpcg.citests.noisy_g2): its type-I error on null data
stays in band at every noise level, it keeps power on dependent data, it is the G-test
at zero noise, and bad input is refused with the project's exception."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from dpcg.citests.noisy_g2 import g2_statistic, noisy_g2_test
from dpcg.errors import CITestError

ALPHA = 0.05


def _tables(rng: np.random.Generator, reps: int, n: int, dependent: bool
            ) -> np.ndarray:
    """``reps`` (3, 3, 4) tables of x, y given z (skewed margins, n rows each)."""
    out = np.zeros((reps, 3, 3, 4))
    for r in range(reps):
        z = rng.choice(3, n, p=[0.6, 0.3, 0.1])
        x = (rng.random(n) < 0.2 + 0.2 * z).astype(int) + (rng.random(n) < 0.1)
        y = rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05])
        if dependent:
            y = np.where(rng.random(n) < 0.3, x, y)
        np.add.at(out[r], (z, x, y), 1)
    return out


@pytest.mark.parametrize("sigma", [0.0, 20.0, 150.0, 600.0])
def test_type_one_error_is_in_band_on_null_data(sigma: float) -> None:
    rng = np.random.default_rng(int(sigma) + 1)
    reps = 300
    tables = _tables(rng, reps, 20_000, dependent=False)
    rejected = 0
    for r in range(reps):
        noisy = tables[r] + rng.normal(0.0, sigma, tables[r].shape)
        rejected += not noisy_g2_test(noisy, sigma ** 2, ALPHA, seed=(r,)).independent
    # 300 tests at alpha 0.05: the binomial 99.9% band is about [4, 29]
    assert 3 <= rejected <= 30, rejected


def test_power_on_dependent_data_falls_with_the_noise_but_stays() -> None:
    rng = np.random.default_rng(7)
    tables = _tables(rng, 40, 20_000, dependent=True)
    for sigma in (0.0, 150.0):
        found = sum(not noisy_g2_test(t + rng.normal(0.0, sigma, t.shape), sigma ** 2,
                                      ALPHA, seed=(i,)).independent
                    for i, t in enumerate(tables))
        assert found >= 38, (sigma, found)


def test_zero_noise_is_the_g_test() -> None:
    rng = np.random.default_rng(2)
    t = _tables(rng, 1, 5_000, dependent=True)[0]
    e = t.sum(axis=2, keepdims=True) * t.sum(axis=1, keepdims=True) / t.sum(
        axis=(1, 2), keepdims=True)
    g2 = 2.0 * float(np.sum(np.where(t > 0, t * np.log(np.where(t > 0, t, 1) / e), 0.0)))
    assert float(g2_statistic(t)) == pytest.approx(g2, rel=1e-9)
    res = noisy_g2_test(t, 0.0, ALPHA, draws=999)
    assert res.statistic == pytest.approx(g2, rel=1e-9)
    assert res.pvalue == pytest.approx(max(chi2.sf(g2, 3 * 2 * 3), 1 / 1000), abs=0.01)


def test_negative_counts_are_projected_and_empty_tables_are_independent() -> None:
    t = np.full((2, 2, 2), -5.0)
    res = noisy_g2_test(t, 100.0, ALPHA)
    assert res.independent
    assert res.pvalue == 1.0
    assert res.strata == 0


@pytest.mark.parametrize("args", [
    (np.zeros((2, 2)), 1.0, ALPHA), (np.full((1, 2, 2), np.nan), 1.0, ALPHA),
    (np.ones((1, 2, 2)), -1.0, ALPHA), (np.ones((1, 2, 2)), float("inf"), ALPHA),
    (np.ones((1, 2, 2)), 1.0, 0.0), (np.ones((1, 2, 2)), 1.0, 1.5)])
def test_bad_input_is_refused(args: tuple[np.ndarray, float, float]) -> None:
    with pytest.raises(CITestError):
        noisy_g2_test(*args)
    with pytest.raises(CITestError):
        noisy_g2_test(np.ones((1, 2, 2)), 1.0, ALPHA, draws=0)
