"""Grouped PrivGCM (``PrivGCMTest(groups=G)``): the release of the ``G`` group sums of the
residual products with L1 sensitivity ``c_lambda_sharp(lam)`` (docs/privacy/privgcm.md,
"Grouped release"), its public hyper-parameter rule, its bad-input handling, and the
type-I error of its NON-private statistic at the default settings (a seeded statistical
test with a documented 99 % band)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.gcm import (
    DEFAULT_GROUPS,
    PrivGCMTest,
    c_lambda,
    c_lambda_sharp,
    check_groups,
    group_sums,
    grouped_bandwidth,
    grouped_lambda,
    grouped_statistic,
)
from dpcg.datasets.sem import unit_noise, unit_noise_bound
from dpcg.errors import CITestError
from dpcg.regression import LAMBDA_FLOOR, KernelRidge, make_ridge

lams = st.floats(min_value=LAMBDA_FLOOR, max_value=100.0)


@given(lams)
def test_sharp_constant_never_exceeds_the_declared_one(lam: float) -> None:
    assert c_lambda_sharp(lam) <= c_lambda(lam) * (1 + 1e-12)


def _neighbours(seed: int, n: int, d: int) -> tuple[np.ndarray, ...]:
    """Adversarial flavour (as tests/continuous/test_sensitivity.py): clustered z,
    extreme aligned targets; the last row replaced by an extreme one."""
    g = np.random.default_rng(seed)
    k = int(g.integers(1, 4))
    centres = g.uniform(-1, 1, (k, d))
    z = centres[g.integers(k, size=n)] + g.uniform(0, 0.3) * g.normal(size=(n, d))
    sign = g.choice([-1.0, 1.0], size=n)
    x = np.clip(sign * g.uniform(0.5, 1.0, n), -1, 1)
    y = np.clip(sign * g.choice([-1.0, 1.0]) * g.uniform(0.5, 1.0, n), -1, 1)
    x2, y2, z2 = x.copy(), y.copy(), z.copy()
    x2[-1], y2[-1] = g.choice([-1.0, 1.0]), g.choice([-1.0, 1.0])
    z2[-1] = z[g.integers(n - 1)] if g.uniform() < 0.5 else g.uniform(-2, 2, d)
    return x, y, z, x2, y2, z2


@settings(max_examples=150, deadline=None)
@given(lam=st.sampled_from([0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 4.0, 20.0]),
       n=st.integers(4, 40), d=st.integers(1, 2), seed=st.integers(0, 2**31 - 1),
       h=st.sampled_from([0.05, 0.1, 0.5, 2.0]), data=st.data())
def test_group_sums_l1_sensitivity(lam: float, n: int, d: int, seed: int, h: float,
                                   data: st.DataObject) -> None:
    """Lemma A' (``|r| <= a*``) and ``||S(D) - S(D')||_1 <= ||R(D) - R(D')||_1 <=
    c_lambda_sharp(lam)`` for every public grouping, the replaced row anywhere."""
    groups = data.draw(st.integers(2, max(2, n // 2)))
    x, y, z, x2, y2, z2 = _neighbours(seed, n, d)
    perm = np.random.default_rng(seed + 1).permutation(n)  # replaced row at any position
    x, y, z, x2, y2, z2 = (v[perm] for v in (x, y, z, x2, y2, z2))
    a_sharp = 1.0 + 0.5 / math.sqrt(lam)
    fac, fac2 = KernelRidge(h, lam).factor(z), KernelRidge(h, lam).factor(z2)
    r, r2 = fac.residuals(np.column_stack([x, y])), fac2.residuals(np.column_stack([x2, y2]))
    assert np.all(np.abs(r) <= a_sharp + 1e-12)
    assert np.all(np.abs(r2) <= a_sharp + 1e-12)
    R, R2 = r[:, 0] * r[:, 1], r2[:, 0] * r2[:, 1]
    l1 = float(np.abs(R - R2).sum())
    l1_groups = float(np.abs(group_sums(R, groups) - group_sums(R2, groups)).sum())
    assert l1_groups <= l1 * (1 + 1e-12) + 1e-12
    assert l1 <= c_lambda_sharp(lam) * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(lam=st.sampled_from([0.01, 0.1, 1.0]), n=st.integers(6, 40),
       seed=st.integers(0, 2**31 - 1))
def test_group_sums_l1_sensitivity_rff(lam: float, n: int, seed: int) -> None:
    """The same bound for the random-Fourier-feature ridge (feature-space form)."""
    x, y, z, x2, y2, z2 = _neighbours(seed, n, 1)
    ridge = make_ridge("rff", 0.3, lam, features=16, feature_seed=seed % 7)
    r = ridge.factor(z, n=n).residuals(np.column_stack([x, y]))
    r2 = ridge.factor(z2, n=n).residuals(np.column_stack([x2, y2]))
    assert np.all(np.abs(r) <= 1.0 + 0.5 / math.sqrt(lam) + 1e-12)
    diff = np.abs(group_sums(r[:, 0] * r[:, 1], 3) - group_sums(r2[:, 0] * r2[:, 1], 3))
    assert float(diff.sum()) <= c_lambda_sharp(lam) * (1 + 1e-9)


def test_group_sums_and_statistic() -> None:
    s = group_sums(np.arange(10.0), 3)
    np.testing.assert_allclose(s, [0 + 3 + 6 + 9, 1 + 4 + 7, 2 + 5 + 8])
    st0 = grouped_statistic(np.ones(5))
    assert (st0.statistic, st0.pvalue) == (0.0, 1.0)
    res = grouped_statistic(np.array([1.0, 2.0, 3.0, 4.0]))
    t = math.sqrt(4) * 2.5 / math.sqrt(np.var([1.0, 2, 3, 4], ddof=1))
    assert res.statistic == pytest.approx(t)
    from scipy.stats import t as student
    assert res.pvalue == pytest.approx(2 * student.sf(t, 3))


def test_public_rule() -> None:
    assert grouped_lambda(1000) == pytest.approx(0.03)
    assert grouped_lambda(10_000) == pytest.approx(0.03)
    assert grouped_lambda(100_000) == pytest.approx(0.03 * 0.1 ** 0.7)
    assert grouped_lambda(10**12) == LAMBDA_FLOOR
    assert grouped_bandwidth(1) == pytest.approx(0.1)
    assert grouped_bandwidth(4) == pytest.approx(0.2)
    for bad in (1.5, True, "3", -1):
        with pytest.raises(CITestError):
            grouped_lambda(bad)  # type: ignore[arg-type]
    for bad_g in (1, 0, 2.0, True, 51):
        with pytest.raises(CITestError):
            check_groups(bad_g, 100)


def test_grouped_release_is_charged_with_the_sharp_constant() -> None:
    g = np.random.default_rng(3)
    values = g.uniform(-1, 1, (4, 400))
    bounds = [(-1.0, 1.0)] * 4
    rec = InMemoryRecorder(Budget(10.0))
    session = Session(Budget(10.0), recorder=rec, seed=1)
    t = PrivGCMTest(values, bounds, session, 2.0, groups=DEFAULT_GROUPS, regression="rff",
                    fit="single")
    assert t.krr.lam == grouped_lambda(400)
    assert t.sensitivity == c_lambda_sharp(grouped_lambda(400))
    assert t.dimension == DEFAULT_GROUPS
    res = t.test(0, 1, (2, 3))
    assert res.pvalue is not None
    assert 0.0 <= res.pvalue <= 1.0
    (entry,) = rec.entries
    assert "20 group sums" in entry.purpose
    assert f"bandwidth={grouped_bandwidth(2)}" in entry.purpose
    assert entry.sensitivity == c_lambda_sharp(grouped_lambda(400))
    assert entry.cost.epsilon == Fraction(2.0)
    assert t.exact(0, 1, (2, 3)).shape == (DEFAULT_GROUPS,)


@pytest.mark.parametrize("kw", [{"groups": 1}, {"groups": 201}, {"groups": 2.5},
                                {"groups": 20, "lam": 1e-4}, {"groups": 20, "bandwidth": -1.0}])
def test_bad_grouped_input_spends_nothing(kw: dict[str, object]) -> None:
    values = np.random.default_rng(0).uniform(-1, 1, (3, 400))
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec, seed=0)
    with pytest.raises(CITestError):
        PrivGCMTest(values, [(-1.0, 1.0)] * 3, session, 1.0, **kw)  # type: ignore[arg-type]
    assert rec.entries == []
    assert session.releases == 0


#: Seeded type-I check of the NON-private single-fit grouped statistic
#: (``fit="single"``; exact group sums, no noise) at its default settings, unit-noise
#: model, n = 4,000 (lam = 0.03, bandwidth 0.1, RFF with 200 features): REPS datasets,
#: rejections must lie in the central 99 % binomial band of alpha = 0.05 ([6, 19] of
#: 200). Deterministic (seeded), so not flaky; it fails if the fits' shrinkage bias moves
#: the statistic's mean by about 0.5 or more.
REPS = 200


@pytest.mark.parametrize("noise", ["unit", "hetero"])
def test_non_private_statistic_holds_its_level(noise: str) -> None:
    n = 4000
    lo, hi = binom.ppf(0.005, REPS, 0.05), binom.ppf(0.995, REPS, 0.05)
    rejections = 0
    for rep in range(REPS):
        ds = unit_noise(n, 1, 2.0, 0.0, 1000 + rep, noise=noise)
        t = PrivGCMTest(ds.values, [(-unit_noise_bound(n), unit_noise_bound(n))] * 3,
                        None, 1.0, groups=DEFAULT_GROUPS, regression="rff", fit="single")
        rejections += t.statistic(t.exact(0, 1, (2,))).pvalue <= 0.05
    assert lo <= rejections <= hi, (rejections, lo, hi)


def test_grouped_sensitivity_audit_row_stays_below_the_sharp_constant() -> None:
    """The audit row "grouped PrivGCM group sums" (audits.sensitivity.gcm_grouped_audit)
    searches the group sums' L1 change against c_lambda_sharp and finds no violation."""
    from audits.sensitivity import Effort, gcm_grouped_audit

    r = gcm_grouped_audit(Effort(restarts=1, steps=40), seed=3)
    assert not r.violated
    assert 0.0 < r.max_ratio <= 1.0
