"""Property tests of the PrivGCM / PrivCRT sensitivity bounds on neighbouring datasets.

Replace-one: D and D' share rows 0..n-2 and differ arbitrarily in the last row.
Declared: ||R(D) - R(D')||_1 <= c_lambda(lam) (GCM residual products, whole vector) and
|T_j(D) - T_j(D')| <= crt_sensitivity(B_r, lam, n) for every j (CRT statistic); the lemmas
of docs/privacy/privgcm.md (range, stability, the exact identity and the bound on U) are
checked on the way.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpcg.citests.crt import (
    crt_sensitivity,
    crt_sensitivity_paper,
    crt_statistics,
    rank_scores,
)
from dpcg.citests.gcm import c_lambda, c_lambda_paper
from dpcg.regression import KernelRidge, rbf_kernel

#: The source checkout (the proof notes are docs, not package data).
ROOT = Path(__file__).resolve().parents[2]


def _products(xs: np.ndarray, ys: np.ndarray, z: np.ndarray, h: float, lam: float) -> np.ndarray:
    fac = KernelRidge(h, lam).factor(z)
    r = fac.residuals(np.column_stack([xs, ys]))
    return r[:, 0] * r[:, 1]


def _neighbour(g: np.random.Generator, x: np.ndarray, y: np.ndarray, z: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x2, y2, z2 = x.copy(), y.copy(), z.copy()
    x2[-1] = g.choice([-1.0, 1.0, g.uniform(-1, 1)])
    y2[-1] = g.choice([-1.0, 1.0, g.uniform(-1, 1)])
    # the new point either sits on top of other points or far away
    z2[-1] = z[g.integers(len(z) - 1)] if g.uniform() < 0.5 else g.uniform(-2, 2, z.shape[1])
    return x2, y2, z2


def _dataset(g: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # adversarial flavour: clustered z, extreme targets of aligned sign
    k = int(g.integers(1, 4))
    centres = g.uniform(-1, 1, (k, d))
    z = centres[g.integers(k, size=n)] + g.uniform(0, 0.3) * g.normal(size=(n, d))
    sign = g.choice([-1.0, 1.0], size=n)
    x = np.clip(sign * g.uniform(0.5, 1.0, n), -1, 1)
    y = np.clip(sign * g.choice([-1.0, 1.0]) * g.uniform(0.5, 1.0, n), -1, 1)
    return x, y, z


def _pointwise_fit_bound(lam: float, n: int) -> float:
    a = 1.0 + 1.0 / math.sqrt(lam)
    return 2.0 * a / (lam * n)


@pytest.mark.parametrize("lam", [0.01, 0.05, 0.3, 1.0, 4.0, 20.0])
def test_residual_product_l1_sensitivity(lam: float) -> None:
    g = np.random.default_rng(int(lam * 1000))
    worst = 0.0
    a = 1.0 + 1.0 / math.sqrt(lam)
    for _ in range(150):
        n = int(g.integers(2, 30))
        d = int(g.integers(1, 3))
        h = float(g.choice([0.1, 0.5, 2.0]))
        x, y, z = _dataset(g, n, d)
        x2, y2, z2 = _neighbour(g, x, y, z)
        R = _products(x, y, z, h, lam)
        R2 = _products(x2, y2, z2, h, lam)
        l1 = float(np.abs(R - R2).sum())
        assert l1 <= c_lambda(lam) * (1 + 1e-9)
        worst = max(worst, l1 / c_lambda(lam))
        # Lemma A: every in-sample residual is bounded by a = 1 + lam^-1/2.
        fac, fac2 = KernelRidge(h, lam).factor(z), KernelRidge(h, lam).factor(z2)
        r, r2 = fac.residuals(x), fac2.residuals(x2)
        assert np.all(np.abs(r) <= a + 1e-12)
        # Lemma B: |f_D(z) - f_D'(z)| <= 2 a / (lam n) at the shared rows.
        assert np.all(np.abs(r[:-1] - r2[:-1]) <= 2 * a / (lam * n) * (1 + 1e-9))
        # Lemma C (exact identity) and Lemma D (U <= a^2 / (n lam)).
        pts = np.vstack([z, z2[-1:]])
        coef = np.zeros(n + 1)
        coef[:n] -= fac.coefficients(x)
        a2 = fac2.coefficients(x2)
        coef[: n - 1] += a2[: n - 1]
        coef[n] += a2[n - 1]
        K = rbf_kernel(pts, pts, h)
        delta = K @ coef  # Delta = f_D' - f_D at z_1..z_n, z'_n
        U = float(np.sum(delta[: n - 1] ** 2))
        lhs = U + n * lam * float(coef @ K @ coef)
        rhs = float(delta[n] * r2[-1] - delta[n - 1] * r[-1])
        assert lhs == pytest.approx(rhs, rel=1e-6, abs=1e-10)
        assert a * a / (n * lam) * (1 + 1e-9) >= U
    assert worst > 0.0


def test_tightened_constants_never_exceed_the_papers() -> None:
    for lam in np.geomspace(1e-3, 1e3, 61):
        assert c_lambda(lam) <= c_lambda_paper(lam) * (1 + 1e-12)
        assert crt_sensitivity(0.7, lam, 10) <= crt_sensitivity_paper(0.7, lam, 10) * (1 + 1e-12)
    assert c_lambda(1.0) == pytest.approx(12.0)
    assert c_lambda_paper(1.0) == pytest.approx(24.0)


def test_residual_product_sensitivity_hill_climb() -> None:
    """Local search for a bad neighbour pair at lam = 1 stays below the bound."""
    g = np.random.default_rng(7)
    lam, h, n = 1.0, 1.0, 8
    x, y, z = _dataset(g, n, 1)
    best = (x, y, z, *_neighbour(g, x, y, z))

    def gap(c: tuple[np.ndarray, ...]) -> float:
        return float(np.abs(_products(c[0], c[1], c[2], h, lam)
                            - _products(c[3], c[4], c[5], h, lam)).sum())

    score = gap(best)
    for _ in range(300):
        cand = [a.copy() for a in best]
        which = int(g.integers(6))
        if which in (0, 1, 3, 4):
            i = int(g.integers(n)) if which in (0, 1) else n - 1
            cand[which][i] = float(np.clip(cand[which][i] + g.normal(0, 0.5), -1, 1))
            if which in (0, 1):  # shared rows move together
                cand[which + 3][i] = cand[which][i] if i < n - 1 else cand[which + 3][i]
        else:
            i = int(g.integers(n))
            step = g.normal(0, 0.3, z.shape[1])
            cand[which][i] += step
            if which == 2 and i < n - 1:
                cand[5][i] = cand[2][i]
        s = gap(tuple(cand))
        if s > score:
            best, score = tuple(cand), s  # type: ignore[assignment]
    assert score <= c_lambda(lam)


@pytest.mark.parametrize("lam", [0.05, 0.5, 2.0, 10.0])
def test_crt_statistic_sensitivity(lam: float) -> None:
    g = np.random.default_rng(11 + int(100 * lam))
    for _ in range(150):
        n = int(g.integers(2, 30))
        d = int(g.integers(1, 3))
        m = int(g.integers(1, 6))
        B = float(g.choice([0.5, 1.0, 3.0]))
        h = float(g.choice([0.2, 1.0]))
        _, y, z = _dataset(g, n, d)
        rx = g.normal(0, 2.0, (m + 1, n))
        _, y2, z2 = _neighbour(g, y, y, z)
        rx2 = rx.copy()
        rx2[:, -1] = g.choice([-10.0, 10.0, 0.0], size=m + 1)  # replaced row's resamples too
        ry = KernelRidge(h, lam).factor(z).residuals(y)
        ry2 = KernelRidge(h, lam).factor(z2).residuals(y2)
        T = crt_statistics(rx, ry, B)
        T2 = crt_statistics(rx2, ry2, B)
        bound = crt_sensitivity(B, lam, n)
        assert np.all(np.abs(T - T2) <= bound * (1 + 1e-9))
        # two-sided queries |T_j| and the rank scores: score sensitivity <= 1
        s, s2 = rank_scores(np.abs(T), bound), rank_scores(np.abs(T2), bound)
        assert np.all(np.abs(s - s2) <= 1.0 + 1e-9)


def test_rank_scores_sensitivity_on_arbitrary_queries() -> None:
    """Sorting is 1-Lipschitz in sup norm, so scores move by at most 1."""
    g = np.random.default_rng(3)
    for _ in range(2000):
        k = int(g.integers(2, 12))
        delta = float(g.uniform(0.01, 1))
        q = g.normal(size=k) * g.choice([0.01, 1.0])
        q2 = q + g.uniform(-delta, delta, size=k)
        assert np.all(np.abs(rank_scores(q, delta) - rank_scores(q2, delta)) <= 1 + 1e-12)
    # the true rank scores 0
    q = np.array([0.3, 0.9, 0.1, 0.5])
    s = rank_scores(q, 0.1)
    assert s[2] == 0.0
    assert np.all(s <= 0)


def test_c_lambda_formula() -> None:
    assert c_lambda_paper(1.0) == pytest.approx(2 * 4 * 3)
    assert c_lambda_paper(0.25) == pytest.approx(2 * 9 * 9)
    assert c_lambda(0.25) == pytest.approx(2 * 9 + 2 * 3 * 2)  # 2a^2 + 2a/sqrt(lam)
    assert c_lambda(100.0) == pytest.approx(2 * 1.21 + 4 * 1.21 / 100)  # 2a^2 + 4a^2/lam
    assert crt_sensitivity_paper(1.0, 1.0, 10) == pytest.approx(2 * 2 * 2 / 10)
    assert crt_sensitivity(1.0, 1.0, 10) == pytest.approx(2 * 3 / 10)
    assert crt_sensitivity(1.0, 100.0, 10) == pytest.approx(1.1 * 2 * 1.01 / 10)


def test_registry_specs_on_canonical_input() -> None:
    """The ready-to-register specs hold on random discrete neighbours (as the audits
    would check them)."""
    from dpcg.citests.continuous_specs import CRT_STATISTIC_SPEC, GCM_SUM_SPEC

    g = np.random.default_rng(5)
    for spec in (CRT_STATISTIC_SPEC, GCM_SUM_SPEC):
        worst = 0.0
        for _ in range(200):
            n = int(g.integers(2, 25))
            cx, cy, k = (int(v) for v in g.integers(2, 5, size=3))
            x, y, s = g.integers(0, cx, n), g.integers(0, cy, n), g.integers(0, k, n)
            x2, y2, s2 = x.copy(), y.copy(), s.copy()
            i = int(g.integers(n))
            x2[i], y2[i], s2[i] = g.integers(0, cx), g.integers(0, cy), g.integers(0, k)
            pub = {"n": n, "cx": cx, "cy": cy}
            diff = abs(spec.evaluate(x, y, s, **pub) - spec.evaluate(x2, y2, s2, **pub))
            assert diff <= spec.bound(**pub) * (1 + 1e-9)
            worst = max(worst, diff / spec.bound(**pub))
        assert worst > 0.0
        assert (ROOT / spec.proof_note).exists()
