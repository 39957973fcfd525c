"""Spearman on tables and Fisher-z: parity with SciPy / causal-learn, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr

from dpcg.errors import StatisticInputError
from dpcg.stats import table_from_codes
from dpcg.stats.fisherz import fisher_z, partial_correlation
from dpcg.stats.spearman import (
    conditional_spearman_z,
    spearman_rho_a,
    spearman_rho_a_sensitivity,
    spearman_rho_blocks,
)


@pytest.mark.parametrize("seed", range(6))
def test_spearman_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    x = rng.integers(0, 4, n)
    y = (x + rng.integers(0, 3, n)) % 5
    t = table_from_codes(x, y, None, 4, 5)
    assert spearman_rho_blocks(t)[0] == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    c = (n + 1) / 2
    ref = 12 * np.sum((rankdata(x) - c) * (rankdata(y) - c)) / (n * (n * n - 1))
    assert spearman_rho_a(t) == pytest.approx(ref, abs=1e-12)


def test_rho_a_equals_spearman_without_ties() -> None:
    rng = np.random.default_rng(1)
    n = 40
    x = rng.permutation(n)
    y = rng.permutation(n)
    t = table_from_codes(x, y, None, n, n)
    assert spearman_rho_a(t) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


def test_conditional_spearman_is_per_stratum_rank_statistic() -> None:
    rng = np.random.default_rng(2)
    n = 200
    s = rng.integers(0, 3, n)
    x = rng.integers(0, 3, n)
    y = (x + s + rng.integers(0, 2, n)) % 4
    t = table_from_codes(x, y, s, 3, 4, 3)
    num = 0.0
    var = 0.0
    for b in range(3):
        m = s == b
        k = int(m.sum())
        a = rankdata(x[m]) - (k + 1) / 2
        c = rankdata(y[m]) - (k + 1) / 2
        num += float(np.sum(a * c))
        var += float(np.sum(a * a) * np.sum(c * c) / (k - 1))
    assert conditional_spearman_z(t) == pytest.approx(num / np.sqrt(var), rel=1e-12)


def test_conditional_spearman_calibrated_under_null() -> None:
    rng = np.random.default_rng(4)
    zs = []
    for _ in range(300):
        n = 300
        s = rng.integers(0, 3, n)
        x = rng.integers(0, 3, n)
        y = rng.integers(0, 2, n)
        zs.append(conditional_spearman_z(table_from_codes(x, y, s, 3, 2, 3)))
    assert 0.85 < float(np.std(zs)) < 1.15


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 50))
def test_spearman_properties(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    y = rng.integers(0, 3, n)
    s = rng.integers(0, 2, n)
    perm = rng.permutation(n)
    t = table_from_codes(x, y, s, 4, 3, 2)
    tp = table_from_codes(x[perm], y[perm], s[perm], 4, 3, 2)
    ts = table_from_codes(y, x, s, 3, 4, 2)
    for f in (conditional_spearman_z,):
        assert f(tp) == pytest.approx(f(t), abs=1e-12)
        assert f(ts) == pytest.approx(f(t), abs=1e-12)
    u = table_from_codes(x, y, None, 4, 3)
    assert abs(spearman_rho_a(u)) <= 1 + 1e-12


def test_rho_a_sensitivity_value() -> None:
    assert spearman_rho_a_sensitivity(100_000) * 100_000 == pytest.approx(9.0, rel=1e-4)
    with pytest.raises(StatisticInputError):
        spearman_rho_a_sensitivity(1)


@pytest.mark.oracle
@pytest.mark.parametrize("S", [(), (2,), (2, 3)])
def test_fisher_z_matches_causal_learn(S: tuple[int, ...]) -> None:
    cit = pytest.importorskip("causallearn.utils.cit")
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, 500))
    v[1] += 0.15 * v[0] + v[2]
    r = fisher_z(v, 0, 1, S)
    assert r.pvalue == pytest.approx(cit.CIT(v.T, "fisherz")(0, 1, list(S)), abs=1e-9)


def test_fisher_z_known_value() -> None:
    rng = np.random.default_rng(1)
    v = rng.normal(size=(2, 103))
    r = float(np.corrcoef(v[0], v[1])[0, 1])
    res = fisher_z(v, 0, 1)
    assert res.partial_correlation == pytest.approx(r, abs=1e-12)
    assert res.z == pytest.approx(np.arctanh(r) * np.sqrt(100), abs=1e-10)


def test_fisher_z_bad_input() -> None:
    v = np.ones((3, 20))
    with pytest.raises(StatisticInputError, match="constant"):
        partial_correlation(v, 0, 1, ())
    w = np.random.default_rng(0).normal(size=(3, 20))
    w[0, 3] = np.nan
    with pytest.raises(StatisticInputError, match="NaN"):
        fisher_z(w, 0, 1)
    with pytest.raises(StatisticInputError, match="float"):
        fisher_z(np.zeros((3, 20), dtype=int), 0, 1)
