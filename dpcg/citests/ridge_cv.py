"""Ridge regressions tuned on the data by generalised cross-validation (GCV).

For the **non-private** GCM only (:class:`dpcg.citests.gcm.GCMTest`): the bandwidth and
the ridge parameter are chosen from the data, so nothing here may feed a private
release (PrivGCM's hyper-parameters are public constants, ``docs/privacy/privgcm.md``).

Both public regressions of :mod:`dpcg.regression` are linear smoothers with a spectral
form. With ``U`` an ``n x m`` matrix of orthonormal columns and ``s >= 0``:

* exact KRR: ``K = U diag(s) U^T`` (eigendecomposition of the Gram matrix, ``m = n``);
* the random-Fourier-feature ridge: ``Phi = U diag(sqrt(s)) V^T`` (thin SVD, ``m = D``);

and the ridge with objective ``(1/n) sum (f - v)^2 + lam ||f||^2`` has hat matrix
``H = U diag(w) U^T`` with ``w = s / (s + n lam)``. For a target ``v`` and ``c = U^T v``,

    RSS(lam) = ||v||^2 - ||c||^2 + sum_i ((1 - w_i) c_i)^2,   df(lam) = sum_i w_i,

and GCV (Craven and Wahba 1979; Golub, Heath and Wahba 1979) picks the ``lam`` of the
grid minimising ``n RSS / (n - df)^2``. One decomposition per bandwidth serves every
``lam`` of the grid and every target, so a grid of ``L`` values costs ``O(n m L)`` on top
of it. Grid points whose fit leaves less than one residual degree of freedom
(``n - df < 1``, near-interpolation, where GCV is 0/0) are never chosen.

The same score chooses, per target, the coordinates of ``z`` it is regressed on
(stepwise: :meth:`GCVRidge.fit`). An isotropic kernel over coordinates the target does
not depend on must smooth the one it does depend on, and in the GCM that shrinkage bias,
common to the residuals of X and Y, reads as dependence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import CITestError
from dpcg.regression import (
    DEFAULT_FEATURE_SEED,
    DEFAULT_FEATURES,
    check_bandwidth,
    check_feature_seed,
    check_features,
    check_regression,
    rbf_kernel,
    rff_frequencies,
    rff_map,
)

FloatArray = NDArray[np.float64]

#: Bandwidth grid on the ``[-1, 1]`` scale of one conditioning variable; multiplied by
#: ``sqrt(d)`` for ``d`` conditioning variables (distances in ``[-1, 1]^d`` grow so).
DEFAULT_CV_BANDWIDTHS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0)
#: Ridge grid (same ``lam`` as :mod:`dpcg.regression`): 29 values, 1e-7 to 1, log-spaced.
DEFAULT_CV_LAMBDAS: tuple[float, ...] = tuple(float(v) for v in np.logspace(-7.0, 0.0, 29))


@dataclass(frozen=True)
class Spectrum:
    """A ridge smoother's spectral form: ``basis`` (``n x m``, orthonormal columns) and
    ``values`` (``m``, ``>= 0``), so that ``H(lam) = U diag(s / (s + n lam)) U^T``."""

    basis: FloatArray
    values: FloatArray

    @property
    def n(self) -> int:
        return int(self.basis.shape[0])


def constant_spectrum(n: int) -> Spectrum:
    """No conditioning variables: every kernel entry is 1 (KRR), every ``phi(z)`` the same
    unit vector (RFF); both give ``s = n`` on the constant direction."""
    return Spectrum(np.full((n, 1), 1.0 / math.sqrt(n)), np.array([float(n)]))


def krr_spectrum(points: FloatArray, bandwidth: float) -> Spectrum:
    """Eigendecomposition of the Gaussian Gram matrix of ``points`` (``O(n^3)``)."""
    K = rbf_kernel(points, points, bandwidth)
    s, U = np.linalg.eigh(K)
    return Spectrum(U, np.maximum(s, 0.0))


def rff_spectrum(points: FloatArray, bandwidth: float, features: int, seed: int) -> Spectrum:
    """Thin SVD of the random-Fourier-feature matrix of ``points`` (``O(n D^2)``)."""
    freqs = rff_frequencies(points.shape[1], features, bandwidth, seed)
    U, sv, _ = np.linalg.svd(rff_map(points, freqs), full_matrices=False)
    return Spectrum(U, sv * sv)


@dataclass(frozen=True)
class GCVFit:
    """Residuals of every target column at its GCV-chosen hyper-parameters."""

    residuals: FloatArray  # (n, k)
    bandwidths: FloatArray  # (k,) chosen bandwidth per column (nan with no Z)
    lams: FloatArray  # (k,) chosen lam per column
    scores: FloatArray  # (k,) the minimal GCV score per column
    coordinates: tuple[tuple[int, ...], ...]  # (k,) the columns of z each one uses


def gcv_select(spec: Spectrum, targets: FloatArray, lams: Sequence[float]
               ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """For each column of ``targets`` (``n x k``): the index of the GCV-best ``lam``, its
    GCV score, and the residuals there. Vectorised over the grid and the columns."""
    n = spec.n
    grid = np.asarray(lams, dtype=np.float64)
    s = spec.values
    w = s[None, :] / (s[None, :] + n * grid[:, None])  # (L, m)
    c = spec.basis.T @ targets  # (m, k)
    outside = np.maximum(np.einsum("ij,ij->j", targets, targets)
                         - np.einsum("ij,ij->j", c, c), 0.0)  # (k,)
    rss = outside[None, :] + ((1.0 - w) ** 2) @ (c * c)  # (L, k)
    resid_df = n - w.sum(axis=1)  # (L,)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where((resid_df >= 1.0)[:, None],
                         n * rss / (resid_df * resid_df)[:, None], np.inf)
    best = np.argmin(score, axis=0)  # (k,)
    cols = np.arange(targets.shape[1])
    best_score = score[best, cols]
    if not np.all(np.isfinite(best_score)):
        raise CITestError("GCV: no ridge parameter of the grid leaves a residual degree "
                          "of freedom; give a grid with larger values")
    fitted = spec.basis @ (w[best].T * c)
    residuals: FloatArray = targets - fitted
    return best, best_score, residuals


def check_grid(name: str, values: object) -> tuple[float, ...]:
    """A non-empty sequence of finite positive numbers."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise CITestError(f"{name} must be a sequence of positive numbers")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise CITestError(f"{name} must contain numbers only, got {v!r}")
        fv = float(v)
        if not math.isfinite(fv) or fv <= 0:
            raise CITestError(f"{name}: every value must be finite and > 0, got {v!r}")
        out.append(fv)
    if not out:
        raise CITestError(f"{name} must not be empty")
    return tuple(out)


@dataclass(frozen=True)
class GCVRidge:
    """A ridge regression whose bandwidth and ``lam`` are chosen per target by GCV over
    public grids (``regression`` ``"krr"`` or ``"rff"``, as :func:`make_ridge`).

    ``bandwidths`` are on the ``[-1, 1]`` scale of one variable and, with
    ``scale_by_dim`` (the default), multiplied by ``sqrt(d)`` for ``d`` conditioning
    variables; without it they are used as given.
    """

    bandwidths: tuple[float, ...] = DEFAULT_CV_BANDWIDTHS
    lams: tuple[float, ...] = DEFAULT_CV_LAMBDAS
    regression: str = "krr"
    features: int = DEFAULT_FEATURES
    seed: int = DEFAULT_FEATURE_SEED
    scale_by_dim: bool = True
    select_coordinates: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidths", tuple(
            check_bandwidth(h) for h in check_grid("bandwidths", self.bandwidths)))
        object.__setattr__(self, "lams", check_grid("lams", self.lams))
        object.__setattr__(self, "regression", check_regression(self.regression))
        object.__setattr__(self, "features", check_features(self.features))
        object.__setattr__(self, "seed", check_feature_seed(self.seed))

    def describe(self) -> str:
        grid = f"{len(self.bandwidths)} bandwidths x {len(self.lams)} lams"
        if self.regression == "rff":
            return (f"regression=rff, features={self.features}, "
                    f"feature_seed={self.seed}, GCV over {grid}")
        return f"regression=krr, GCV over {grid}"

    def _spectrum(self, points: FloatArray, bandwidth: float) -> Spectrum:
        if self.regression == "rff":
            return rff_spectrum(points, bandwidth, self.features, self.seed)
        return krr_spectrum(points, bandwidth)

    def _grid_fit(self, pts: FloatArray | None, t: FloatArray) -> GCVFit:
        """The GCV-best bandwidth and ``lam`` per column on the columns ``pts``."""
        n, k = t.shape
        if pts is None or pts.shape[1] == 0:
            best, score, res = gcv_select(constant_spectrum(n), t, self.lams)
            return GCVFit(res, np.full(k, np.nan), np.asarray(self.lams)[best], score,
                          ((),) * k)
        scale = math.sqrt(pts.shape[1]) if self.scale_by_dim else 1.0
        out_res = np.empty_like(t)
        out_bw = np.empty(k)
        out_lam = np.empty(k)
        out_score = np.full(k, np.inf)
        for h in self.bandwidths:
            best, score, res = gcv_select(self._spectrum(pts, h * scale), t, self.lams)
            better = score < out_score
            out_res[:, better] = res[:, better]
            out_bw[better] = h * scale
            out_lam[better] = np.asarray(self.lams)[best[better]]
            out_score[better] = score[better]
        return GCVFit(out_res, out_bw, out_lam, out_score,
                      (tuple(range(pts.shape[1])),) * k)

    def fit(self, z: FloatArray | None, targets: FloatArray) -> GCVFit:
        """Residuals of each column of ``targets`` (``n x k``) regressed on ``z``
        (``n x d``, or ``None`` / ``d = 0`` for no conditioning variables).

        With ``select_coordinates`` (the default) each column then chooses the columns of
        ``z`` it is regressed on: it starts from the better (by its GCV score) of all of
        them and the best single one, and moves to the subset one coordinate smaller or
        larger that lowers its score most, as long as one does (stepwise selection;
        every subset tried is fitted over the whole grid, once for all columns)."""
        t = np.asarray(targets, dtype=np.float64)
        if t.ndim != 2 or t.shape[0] < 2 or not np.all(np.isfinite(t)):
            raise CITestError("targets must be a finite (n, k) array with n >= 2")
        n, k = t.shape
        if z is None or np.asarray(z).size == 0:
            return self._grid_fit(None, t)
        pts = np.asarray(z, dtype=np.float64)
        if pts.ndim == 1:
            pts = pts[:, None]
        if pts.shape[0] != n or not np.all(np.isfinite(pts)):
            raise CITestError("z must be a finite (n, d) array with the targets' n")
        d = pts.shape[1]
        memo: dict[tuple[int, ...], GCVFit] = {}

        def on(cols: tuple[int, ...]) -> GCVFit:
            if cols not in memo:
                memo[cols] = self._grid_fit(pts[:, list(cols)] if cols else None, t)
            return memo[cols]

        full = tuple(range(d))
        current = [full] * k
        if self.select_coordinates and d > 1:
            starts = [full, *((i,) for i in range(d))]
            current = [min(starts, key=lambda c: (on(c).scores[j], c)) for j in range(k)]
        if self.select_coordinates:
            improving = set(range(k))
            while improving:
                for j in sorted(improving):
                    here = on(current[j]).scores[j]
                    cands = [tuple(c for c in current[j] if c != i) for i in current[j]]
                    cands += [tuple(sorted((*current[j], i))) for i in range(d)
                              if i not in current[j]]
                    best = min(cands, key=lambda c: (on(c).scores[j], c), default=None)
                    if best is not None and on(best).scores[j] < here:
                        current[j] = best
                    else:
                        improving.discard(j)
        res = np.empty_like(t)
        bws = np.empty(k)
        lams = np.empty(k)
        scores = np.empty(k)
        for j, cols in enumerate(current):
            f = on(cols)
            res[:, j] = f.residuals[:, j]
            bws[j], lams[j], scores[j] = f.bandwidths[j], f.lams[j], f.scores[j]
        return GCVFit(res, bws, lams, scores, tuple(current))
