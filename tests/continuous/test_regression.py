"""Kernel ridge regression: direct solve, scikit-learn parity, public-parameter checks."""

from __future__ import annotations

import numpy as np
import pytest

from dpcg.errors import CITestError, DpcgError
from dpcg.regression import (
    LAMBDA_FLOOR,
    KernelRidge,
    check_bandwidth,
    krr_residuals,
    rbf_kernel,
    sklearn_alpha,
)


def _data(n: int = 60, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    z = g.uniform(-1, 1, (n, d))
    v = np.column_stack([np.sin(3 * z[:, 0]), np.cos(2 * z[:, -1])]) + 0.1 * g.normal(size=(n, 2))
    return z, v


def test_kernel_matches_definition() -> None:
    z, _ = _data(7, 3)
    h = 0.7
    K = rbf_kernel(z, z, h)
    direct = np.exp(-((z[:, None, :] - z[None, :, :]) ** 2).sum(-1) / (2 * h * h))
    np.testing.assert_allclose(K, direct, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.diag(K), 1.0)


@pytest.mark.parametrize("lam", [LAMBDA_FLOOR, 0.01, 0.3, 2.0])
def test_residuals_match_direct_solve(lam: float) -> None:
    z, v = _data()
    n = z.shape[0]
    fac = KernelRidge(0.5, lam).factor(z)
    K = rbf_kernel(z, z, 0.5)
    alpha = np.linalg.solve(K + n * lam * np.eye(n), v)
    np.testing.assert_allclose(fac.coefficients(v), alpha, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fac.residuals(v), v - K @ alpha, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fac.fitted(v[:, 0]), K @ alpha[:, 0], rtol=1e-7, atol=1e-9)
    # one factorisation serves both columns: same as solving them separately
    np.testing.assert_allclose(fac.residuals(v[:, 1]), fac.residuals(v)[:, 1])


def test_objective_is_minimised() -> None:
    """alpha = (K + n lam I)^-1 v minimises (1/n)||K a - v||^2 + lam a'Ka."""
    z, v = _data(30, 1)
    n, lam = 30, 0.05
    K = rbf_kernel(z, z, 0.4)
    fac = KernelRidge(0.4, lam).factor(z)
    a = fac.coefficients(v[:, 0])

    def obj(c: np.ndarray) -> float:
        r = K @ c - v[:, 0]
        return float(r @ r / n + lam * c @ K @ c)

    g = np.random.default_rng(1)
    base = obj(a)
    for _ in range(20):
        assert obj(a + 1e-3 * g.normal(size=n)) >= base - 1e-12


def test_empty_conditioning_set() -> None:
    n, lam = 10, 0.5
    v = np.linspace(-1, 1, n) ** 2
    res = KernelRidge(1.0, lam).factor(None, n=n).residuals(v)
    np.testing.assert_allclose(res, v - v.sum() / (n * (1 + lam)))


def test_predict_at_training_points_equals_fitted() -> None:
    z, v = _data(25, 2)
    fac = KernelRidge(0.6, 0.1).factor(z)
    np.testing.assert_allclose(fac.predict(v[:, 0], z), fac.fitted(v[:, 0]), atol=1e-10)


def test_sklearn_parity() -> None:
    kr = pytest.importorskip("sklearn.kernel_ridge")
    z, v = _data(80, 2, seed=3)
    n, lam, h = 80, 0.02, 0.5
    model = kr.KernelRidge(alpha=sklearn_alpha(lam, n), kernel="rbf", gamma=1 / (2 * h * h))
    model.fit(z, v[:, 0])
    fac = KernelRidge(h, lam).factor(z)
    np.testing.assert_allclose(model.predict(z), fac.fitted(v[:, 0]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.dual_coef_, fac.coefficients(v[:, 0]), rtol=1e-6, atol=1e-8)
    # Using sklearn's alpha as lam (defect 6) is a different, much weaker regulariser.
    wrong = kr.KernelRidge(alpha=lam, kernel="rbf", gamma=1 / (2 * h * h)).fit(z, v[:, 0])
    assert not np.allclose(wrong.predict(z), fac.fitted(v[:, 0]), atol=1e-3)


@pytest.mark.parametrize("bad", ["median", "scott", lambda z: 1.0, 0.0, -1.0, float("nan"), True])
def test_data_derived_or_invalid_bandwidth_rejected(bad: object) -> None:
    with pytest.raises(CITestError, match="bandwidth"):
        check_bandwidth(bad)
    with pytest.raises(DpcgError):
        KernelRidge(bad, 0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize("lam", [0.0, LAMBDA_FLOOR / 2, -1.0, float("inf"), float("nan")])
def test_lambda_below_floor_rejected(lam: float) -> None:
    with pytest.raises(CITestError, match="lam"):
        KernelRidge(0.5, lam)


def test_custom_floor() -> None:
    KernelRidge(0.5, 0.05, lam_floor=0.01)
    with pytest.raises(CITestError, match="floor"):
        KernelRidge(0.5, 0.005, lam_floor=0.01)


def test_non_finite_targets_rejected() -> None:
    z, v = _data(10, 1)
    v[3, 0] = np.nan
    with pytest.raises(CITestError, match="non-finite"):
        krr_residuals(z, v, bandwidth=0.5, lam=0.1)
