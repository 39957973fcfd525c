"""PrivGCM's default ridge parameter (``privgcm_lambda``): a function of public ``n`` and
``eps`` whose shrinkage bias cannot move the null statistic by more than the allowed
drift (docs/privacy/privgcm.md, "The default lam")."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.gcm import (
    DEFAULT_NULL_DRIFT,
    PrivGCMTest,
    c_lambda,
    null_drift_bound,
    privgcm_lambda,
)
from dpcg.errors import CITestError
from dpcg.regression import LAMBDA_FLOOR, KernelRidge, rbf_kernel, rff_frequencies, rff_map

ns = st.integers(min_value=1, max_value=10**9)
epsilons = st.floats(min_value=1e-3, max_value=100.0)


@settings(max_examples=300, deadline=None)
@given(ns, epsilons)
def test_largest_lambda_within_the_drift(n: int, eps: float) -> None:
    lam = privgcm_lambda(n, eps)
    assert LAMBDA_FLOOR <= lam <= 1.0
    if lam > LAMBDA_FLOOR:
        assert null_drift_bound(lam, n, eps) <= DEFAULT_NULL_DRIFT
    if lam < 1.0:  # the largest: a slightly larger lam drifts too far
        assert null_drift_bound(lam * (1 + 1e-9), n, eps) > DEFAULT_NULL_DRIFT * (1 - 1e-9)


@settings(max_examples=200, deadline=None)
@given(ns, ns, epsilons, epsilons)
def test_lambda_falls_with_n_and_eps(n1: int, n2: int, e1: float, e2: float) -> None:
    (n1, n2), (e1, e2) = sorted((n1, n2)), sorted((e1, e2))
    assert privgcm_lambda(n2, e1) <= privgcm_lambda(n1, e1)
    assert privgcm_lambda(n1, e2) <= privgcm_lambda(n1, e1)


def test_known_values_and_rate() -> None:
    # the drift bound at the returned lam is the allowed drift (interior solutions)
    for n, eps in ((500, 1.0), (50_000, 1.0), (50_000, 2.0), (10**6, 5.0)):
        lam = privgcm_lambda(n, eps)
        assert null_drift_bound(lam, n, eps) == pytest.approx(DEFAULT_NULL_DRIFT, rel=1e-9)
    # 100x the rows: lam falls by about 100^(1/4) (c_lam ~ 4 / lam for small lam)
    ratio = privgcm_lambda(10**6, 1.0) / privgcm_lambda(10**8, 1.0)
    assert 2.8 < ratio < 3.4
    # a larger allowed drift or a smaller RKHS bound allows a larger lam
    assert privgcm_lambda(50_000, 1.0, drift=0.2) > privgcm_lambda(50_000, 1.0)
    assert privgcm_lambda(50_000, 1.0, rkhs_norm=0.5) > privgcm_lambda(50_000, 1.0)
    # tiny n * eps: the cap; huge: the floor
    assert privgcm_lambda(1, 1e-3) == 1.0
    assert privgcm_lambda(10**15, 100.0) == LAMBDA_FLOOR


@pytest.mark.parametrize("bad", [
    {"n": 0}, {"n": -3}, {"n": True}, {"n": 2.5}, {"n": "100"},
    {"epsilon": 0.0}, {"epsilon": -1.0}, {"epsilon": math.nan}, {"epsilon": math.inf},
    {"rkhs_norm": 0.0}, {"rkhs_norm": math.nan}, {"drift": -0.1}, {"drift": math.inf},
])
def test_bad_input(bad: dict[str, object]) -> None:
    kw: dict[str, object] = {"n": 1000, "epsilon": 1.0, **bad}
    with pytest.raises(CITestError):
        privgcm_lambda(**kw)  # type: ignore[arg-type]


def _rkhs_function(g: np.random.Generator, z: np.ndarray, h: float
                   ) -> tuple[np.ndarray, float]:
    """Values on ``z`` of ``f = sum_j a_j k(c_j, .)`` and its RKHS norm."""
    centres = g.uniform(-1, 1, (5, z.shape[1]))
    a = g.normal(0, 1, 5)
    norm = math.sqrt(float(a @ rbf_kernel(centres, centres, h) @ a))
    return rbf_kernel(z, centres, h) @ a, norm


@pytest.mark.parametrize("seed", range(20))
def test_shrinkage_bias_within_lam_norm_squared(seed: int) -> None:
    """The lemma the rule rests on: the ridge fit of a noise-free ``f`` in the RKHS
    leaves ``(1/n) ||(I - H) f||^2 <= lam ||f||_H^2``, so the null mean product is at
    most ``lam ||f_x|| ||f_y||`` (Cauchy-Schwarz)."""
    g = np.random.default_rng(seed)
    n, d = int(g.integers(5, 120)), int(g.integers(1, 3))
    h = float(g.uniform(0.2, 1.5))
    lam = float(10 ** g.uniform(-3, 0.5))
    z = g.uniform(-1, 1, (n, d))
    fx, bx = _rkhs_function(g, z, h)
    fy, by = _rkhs_function(g, z, h)
    res = KernelRidge(h, lam).factor(z).residuals(np.stack([fx, fy], axis=1))
    for r, b in ((res[:, 0], bx), (res[:, 1], by)):
        assert float(r @ r) / n <= lam * b * b * (1 + 1e-9) + 1e-12
    assert abs(float(res[:, 0] @ res[:, 1]) / n) <= lam * bx * by * (1 + 1e-9) + 1e-12
    # the same for the random-Fourier-feature ridge, whose RKHS norm is ||b||
    w = rff_frequencies(d, 32, h, seed)
    phi = rff_map(z, w)
    coef = g.normal(0, 1, 32)
    f = phi @ coef
    b_hat = np.linalg.solve(phi.T @ phi + n * lam * np.eye(32), phi.T @ f)
    r = f - phi @ b_hat
    assert float(r @ r) / n <= lam * float(coef @ coef) * (1 + 1e-9) + 1e-12


def test_privgcm_uses_the_rule_by_default_and_an_explicit_lam_otherwise() -> None:
    g = np.random.default_rng(3)
    values = g.uniform(-1, 1, (3, 400))
    bounds = [(-1.0, 1.0)] * 3
    rec = InMemoryRecorder(Budget(10.0))
    session = Session(Budget(10.0), recorder=rec, seed=1)
    t = PrivGCMTest(values, bounds, session, 2.0)
    assert t.krr.lam == privgcm_lambda(400, 2.0)
    assert t.sensitivity == c_lambda(privgcm_lambda(400, 2.0))
    t.test(0, 1, (2,))
    (entry,) = rec.entries
    assert f"lam={privgcm_lambda(400, 2.0)}" in entry.purpose
    assert entry.sensitivity == c_lambda(privgcm_lambda(400, 2.0))
    assert entry.cost.epsilon == Fraction(2.0)
    assert PrivGCMTest(values, bounds, None, 2.0, lam=1.0).krr.lam == 1.0
    with pytest.raises(CITestError):  # the rule validates eps before anything else
        PrivGCMTest(values, bounds, None, 0.0)
