"""The non-private GCM's GCV-tuned regressions (dpcg.citests.ridge_cv)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.citests.gcm import GCMTest, gcm_statistic
from dpcg.citests.ridge_cv import (
    DEFAULT_CV_BANDWIDTHS,
    DEFAULT_CV_LAMBDAS,
    GCVRidge,
    constant_spectrum,
    gcv_select,
    krr_spectrum,
    rff_spectrum,
)
from dpcg.datasets.sem import shah_peters, shah_peters_bounds
from dpcg.errors import CITestError, DpcgError
from dpcg.regression import make_ridge, rbf_kernel, rff_frequencies, rff_map

LAMS = (1e-6, 1e-4, 1e-2, 1.0)


def _hat(kind: str, z: np.ndarray, h: float, lam: float, features: int = 40) -> np.ndarray:
    """The smoother matrix built directly from its definition."""
    n = z.shape[0]
    if kind == "krr":
        K = rbf_kernel(z, z, h)
        out: np.ndarray = K @ np.linalg.inv(K + n * lam * np.eye(n))
        return out
    phi = rff_map(z, rff_frequencies(z.shape[1], features, h, 0))
    hat: np.ndarray = phi @ np.linalg.solve(phi.T @ phi + n * lam * np.eye(features), phi.T)
    return hat


def _brute_gcv(kind: str, z: np.ndarray, v: np.ndarray, h: float) -> list[float]:
    n = z.shape[0]
    scores = []
    for lam in LAMS:
        H = _hat(kind, z, h, lam)
        r = v - H @ v
        dof = n - np.trace(H)
        scores.append(n * float(r @ r) / dof**2 if dof >= 1 else math.inf)
    return scores


@settings(max_examples=40, deadline=None)
@given(n=st.integers(12, 40), d=st.integers(1, 2), seed=st.integers(0, 2**31 - 1),
       h=st.sampled_from((0.1, 0.3, 1.0)), kind=st.sampled_from(("krr", "rff")))
def test_spectral_gcv_matches_the_smoother_matrix(n: int, d: int, seed: int, h: float,
                                                  kind: str) -> None:
    g = np.random.default_rng(seed)
    z = g.uniform(-1, 1, (n, d))
    v = np.sin(3 * z[:, 0]) + 0.3 * g.standard_normal(n)
    spec = krr_spectrum(z, h) if kind == "krr" else rff_spectrum(z, h, 40, 0)
    best, score, res = gcv_select(spec, v[:, None], LAMS)
    ref = _brute_gcv(kind, z, v, h)
    assert score[0] == pytest.approx(min(ref), rel=1e-6)
    assert ref[int(best[0])] == pytest.approx(min(ref), rel=1e-6)  # ties may pick either
    # the residuals are those of the fixed ridge at the chosen parameters
    ridge = make_ridge(kind, h, LAMS[int(best[0])], lam_floor=1e-9,
                       **({"features": 40, "feature_seed": 0} if kind == "rff" else {}))
    np.testing.assert_allclose(res[:, 0], ridge.factor(z).residuals(v), atol=1e-6)


@pytest.mark.parametrize("kind", ["krr", "rff"])
def test_no_conditioning_variables_is_the_fixed_ridge_on_a_constant(kind: str) -> None:
    g = np.random.default_rng(3)
    v = g.standard_normal((50, 3))
    best, _, res = gcv_select(constant_spectrum(50), v, LAMS)
    for j in range(3):
        ridge = make_ridge(kind, 0.5, LAMS[int(best[j])], lam_floor=1e-9)
        np.testing.assert_allclose(res[:, j], ridge.factor(None, n=50).residuals(v[:, j]),
                                   atol=1e-10)
    fit = GCVRidge(regression=kind).fit(None, v)
    np.testing.assert_allclose(fit.residuals, res)
    assert np.all(np.isnan(fit.bandwidths))


def test_fit_picks_per_column_and_scales_bandwidths_with_dimension() -> None:
    g = np.random.default_rng(5)
    z = g.uniform(-1, 1, (300, 2))
    wiggly = np.sin(12 * z[:, 0]) + 0.05 * g.standard_normal(300)
    smooth = z[:, 1] + 0.05 * g.standard_normal(300)
    ridge = GCVRidge(regression="rff", select_coordinates=False)
    fit = ridge.fit(z, np.stack([wiggly, smooth], axis=1))
    assert fit.coordinates == ((0, 1), (0, 1))
    grid = {h * math.sqrt(2) for h in DEFAULT_CV_BANDWIDTHS}
    assert set(fit.bandwidths.tolist()) <= grid
    assert set(fit.lams.tolist()) <= set(DEFAULT_CV_LAMBDAS)
    assert fit.bandwidths[0] < fit.bandwidths[1]  # the wiggly target needs a narrow kernel
    # each column is at its best over the whole grid
    for j, v in enumerate((wiggly, smooth)):
        for h in DEFAULT_CV_BANDWIDTHS:
            _, score, _ = gcv_select(rff_spectrum(z, h * math.sqrt(2), 200, 0), v[:, None],
                                     DEFAULT_CV_LAMBDAS)
            assert fit.scores[j] <= score[0] * (1 + 1e-12)
    assert np.std(fit.residuals[:, 0]) < 0.1  # fitted well, not shrunk to a constant
    unscaled = GCVRidge(bandwidths=(0.3,), regression="rff", scale_by_dim=False).fit(
        z, smooth[:, None])
    assert unscaled.bandwidths[0] == 0.3


@pytest.mark.parametrize("kind", ["krr", "rff"])
def test_coordinate_selection_finds_the_relevant_columns(kind: str) -> None:
    g = np.random.default_rng(8)
    z = g.uniform(-1, 1, (250, 4))
    t = np.stack([np.sin(6 * z[:, 2]) + 0.2 * g.standard_normal(250),
                  np.sin(4 * z[:, 0]) + z[:, 3] ** 2 + 0.2 * g.standard_normal(250),
                  g.standard_normal(250)], axis=1)
    ridge = GCVRidge(regression=kind)
    fit = ridge.fit(z, t)
    assert fit.coordinates[0] == (2,)
    assert fit.coordinates[1] == (0, 3)
    for j, cols in enumerate(fit.coordinates):
        # each column's result is the grid fit on its own coordinates ...
        alone = GCVRidge(regression=kind, select_coordinates=False).fit(
            z[:, list(cols)] if cols else None, t)
        np.testing.assert_allclose(fit.residuals[:, j], alone.residuals[:, j])
        assert fit.scores[j] == alone.scores[j]
        # ... and no subset one coordinate larger or smaller scores lower
        for i in range(4):
            nb = tuple(sorted(set(cols) ^ {i}))
            other = GCVRidge(regression=kind, select_coordinates=False).fit(
                z[:, list(nb)] if nb else None, t)
            assert fit.scores[j] <= other.scores[j]


def _null_rejections(n: int, reps: int, **kw: object) -> float:
    out = 0
    for r in range(reps):
        ds = shah_peters(n, 1, 2.0, 0.0, 7000 + r)
        t = GCMTest(ds.values, shah_peters_bounds(1, 0.0), **kw)  # type: ignore[arg-type]
        out += not t.test(0, 1, (2,)).independent
    return out / reps


def test_tuned_gcm_keeps_its_level_where_the_fixed_heavy_ridge_does_not() -> None:
    # Shah-Peters null X _||_ Y | Z with X, Y sharing f_2(Z): a lam = 1, bandwidth 0.5
    # ridge shrinks f_2 away and leaves it in both residuals
    fixed = _null_rejections(400, 30, lam=1.0, bandwidth=0.5, regression="rff")
    tuned = _null_rejections(400, 30, regression="rff")
    assert fixed >= 0.9
    assert tuned <= 0.2  # 30 runs at alpha 0.05: 0.2 is 6 rejections (p < 0.02)


def test_gcm_products_residuals_and_choices_agree() -> None:
    ds = shah_peters(200, 2, 2.0, 0.5, 11)
    t = GCMTest(ds.values, shah_peters_bounds(2, 0.5))
    prod = t.products(0, 1, (2, 3))
    np.testing.assert_allclose(prod, t.residuals(0, (3, 2)) * t.residuals(1, (2, 3)))
    res = t.test(0, 1, (2, 3))
    assert res.statistic == gcm_statistic(prod).statistic
    h, lam = t.chosen(0, (2, 3))
    # the bandwidth grid scales with the number of coordinates the regression uses
    assert h in {x * math.sqrt(m) for x in DEFAULT_CV_BANDWIDTHS for m in (1, 2)}
    assert lam in DEFAULT_CV_LAMBDAS
    assert t.coordinates(0, (3, 2)) == (2,)  # X depends on Z_1 (column 2) only
    h0, _ = t.chosen(0, ())
    assert math.isnan(h0)
    # given both, the fixed ridge is used as before
    fixed = GCMTest(ds.values, shah_peters_bounds(2, 0.5), lam=0.01, bandwidth=0.3)
    assert fixed.chosen(0, (2,)) == (0.3, 0.01)
    assert fixed.coordinates(0, (3, 2)) == (2, 3)
    ridge = make_ridge("krr", 0.3, 0.01)
    np.testing.assert_allclose(fixed.residuals(1, (2,)),
                               ridge.factor(fixed.data.scaled[[2]].T).residuals(
                                   fixed.data.scaled[1]))
    # given one, only the other is tuned
    only_h = GCMTest(ds.values, shah_peters_bounds(2, 0.5), bandwidth=0.3)
    assert only_h.chosen(0, (2, 3))[0] == 0.3
    only_lam = GCMTest(ds.values, shah_peters_bounds(2, 0.5), lam=0.01)
    assert only_lam.chosen(0, (2, 3))[1] == 0.01


@pytest.mark.parametrize("kwargs", [
    {"bandwidths": ()}, {"bandwidths": (0.1, -1.0)}, {"lams": (0.0,)},
    {"lams": "fast"}, {"lams": (math.nan,)}, {"bandwidths": (True,)},
    {"lam": 1e-6}, {"lam": -1.0}, {"features": 32}, {"regression": "nystrom"},
    {"regression": "rff", "features": 31}, {"regression": "rff", "feature_seed": -1},
])
def test_bad_tuning_options_are_refused(kwargs: dict[str, object]) -> None:
    ds = shah_peters(50, 1, 2.0, 0.0, 1)
    with pytest.raises(CITestError):
        GCMTest(ds.values, shah_peters_bounds(1, 0.0), **kwargs)  # type: ignore[arg-type]


def test_bad_queries_are_refused() -> None:
    ds = shah_peters(50, 1, 2.0, 0.0, 1)
    t = GCMTest(ds.values, shah_peters_bounds(1, 0.0))
    for v, S in ((3, ()), (-1, ()), (0, (3,)), (0, (0,)), (0, (2, 2))):
        with pytest.raises(DpcgError):
            t.residuals(v, S)
    with pytest.raises(CITestError):
        GCVRidge().fit(None, np.array([[1.0], [math.nan]]))
    with pytest.raises(CITestError):
        GCVRidge().fit(np.zeros((3, 1)), np.zeros((2, 1)))
