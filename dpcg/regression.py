"""Kernel ridge regression (KRR) with a Gaussian RBF kernel and a public bandwidth, and
its scalable finite-dimensional version on random Fourier features (RFF).

This is the fitting procedure of PrivGCM and PrivCRT (Kalemaj, Kasiviswanathan and
Ramdas). Their sensitivity proofs (``docs/privacy/privgcm.md``) need three things,
which this module enforces:

* a kernel with ``k(z, z) <= 1``: the Gaussian RBF kernel
  ``k(a, b) = exp(-||a - b||^2 / (2 h^2))`` has ``k(z, z) = 1``;
* a **public** bandwidth ``h``: a positive number fixed before the data is seen. A
  bandwidth computed from the data (the median heuristic, Scott's rule, a callable) is
  rejected: it would make the fitted function, and hence the residuals, depend on every
  row through ``h``, which the stability argument does not cover, and it would make a
  "public" hyper-parameter a function of private data (PRIVACY.md section 1);
* a **public** ridge parameter ``lam >= lam_floor`` (``lam_floor`` defaults to
  :data:`LAMBDA_FLOOR`). The residual-product sensitivity grows without bound as
  ``lam -> 0`` (like ``1/lam``); the floor keeps it finite and the error says so.

Objective and solution. For targets ``v`` (length ``n``) and inputs ``z_1..z_n``,

    f = argmin_{f in H}  (1/n) sum_i (f(z_i) - v_i)^2 + lam ||f||_H^2,

whose representer solution is ``f = sum_j alpha_j k(z_j, .)`` with
``alpha = (K + n lam I)^-1 v``. The in-sample residuals are then
``v - K alpha = n lam alpha``, so one Cholesky factorisation of ``K + n lam I``
(``scipy.linalg.cho_factor``) serves every target regressed on the same ``Z`` (the X and
the Y fit of one CI test, or all ``m`` resamples of a CRT).

Relation to scikit-learn. ``sklearn.kernel_ridge.KernelRidge(alpha=a)`` minimises
``sum_i (f(z_i) - v_i)^2 + a ||f||^2``, i.e. ``n`` times our objective with
``a = n lam``. Plugging scikit-learn's ``alpha`` into the sensitivity constant as if it
were ``lam`` understates the sensitivity by a factor of order ``n^2`` (PRIVACY.md
section 6, defect 6). :func:`sklearn_alpha` gives the correct translation; the tests
check the two solvers agree under it. scikit-learn's ``gamma`` is ``1 / (2 h^2)``.

Random Fourier features (:class:`RandomFourierRidge`, ``regression="rff"``). KRR costs
``O(n^3)`` time and ``O(n^2)`` memory; the RFF ridge replaces the Gaussian kernel by the
finite-rank kernel ``k_W(a, b) = phi(a) . phi(b)`` with the paired feature map

    phi(z) = sqrt(2/D) (cos(w_1 . z), sin(w_1 . z), ..., cos(w_{D/2} . z), sin(w_{D/2} . z)),

``w_j`` iid ``N(0, h^-2 I_d)`` (Rahimi and Recht 2007), so ``||phi(z)||^2 = 1`` exactly
(``cos^2 + sin^2 = 1``): ``k_W`` is a positive-semidefinite kernel with
``k_W(z, z) = 1`` for every ``z``, an unbiased approximation of the RBF kernel. It is fitted
in the ``D``-dimensional primal with the **same** objective,

    beta = argmin_b (1/n) sum_i (b . phi(z_i) - v_i)^2 + lam ||b||^2
         = (Phi^T Phi + n lam I_D)^-1 Phi^T v,

``O(n D^2 + D^3)`` time and ``O(n D)`` memory; its fitted values equal those of KRR with the
kernel ``k_W`` (push-through identity), so the sensitivity constants of PrivGCM and PrivCRT
apply unchanged (``docs/privacy/privgcm.md``, "Finite-dimensional feature maps"). The
frequencies ``W`` are **public randomness**: drawn from a public integer ``seed`` that is a
hyper-parameter like the bandwidth, never from the data, and independent of it. They are
not privacy noise (the sensitivity bound holds for every ``W``), which is why this module
is listed in ``tests/test_layering.py``'s ``NON_PRIVACY_RANDOMNESS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from dpcg.errors import CITestError

#: Smallest ridge parameter the library accepts (public, data independent). At the floor
#: the PrivGCM constant ``c_lam`` is about 4,200 (the paper's constant: 4.0e8), i.e. of
#: little use for privacy; the floor exists so that no call can reach ``lam = 0``
#: (unbounded sensitivity).
LAMBDA_FLOOR = 1e-3

FloatArray = NDArray[np.float64]

#: Regression methods: exact KRR (the default) or the random-Fourier-feature ridge.
REGRESSIONS = ("krr", "rff")
#: Default number ``D`` of random Fourier features (``D/2`` frequency pairs).
DEFAULT_FEATURES = 200
#: Default public seed of the random Fourier frequencies.
DEFAULT_FEATURE_SEED = 0
#: Largest accepted ``D`` (the ``D x D`` normal equations must stay cheap).
MAX_FEATURES = 20_000


def check_bandwidth(bandwidth: object) -> float:
    """Validate a public kernel bandwidth: a finite positive number.

    Strings such as ``"median"`` or ``"scott"`` and callables are refused on purpose:
    they derive the bandwidth from the data, and a data-derived bandwidth is neither
    public nor covered by the KRR stability argument.
    """
    if isinstance(bandwidth, str):
        raise CITestError(
            f"bandwidth={bandwidth!r}: data-derived bandwidths (median heuristic, Scott's "
            "rule, ...) are not allowed because the bandwidth must be public; pass a fixed "
            "positive number chosen without looking at the data"
        )
    if callable(bandwidth):
        raise CITestError(
            "bandwidth must be a fixed positive number, not a callable: a bandwidth "
            "computed from the data is not public"
        )
    if isinstance(bandwidth, bool) or not isinstance(
        bandwidth, int | float | np.integer | np.floating
    ):
        raise CITestError(f"bandwidth must be a positive number, got {bandwidth!r}")
    h = float(bandwidth)
    if not math.isfinite(h) or h <= 0:
        raise CITestError(f"bandwidth={bandwidth!r} must be finite and > 0")
    return h


def check_floor(floor: object) -> float:
    """Validate a ridge floor: a finite number > 0."""
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not (
        math.isfinite(floor) and floor > 0
    ):
        raise CITestError(f"lam_floor={floor!r} must be a finite number > 0")
    return float(floor)


def check_lambda(lam: object, floor: float = LAMBDA_FLOOR) -> float:
    """Validate a public ridge parameter ``lam >= floor``."""
    if isinstance(lam, bool) or not isinstance(lam, int | float | np.integer | np.floating):
        raise CITestError(f"lam (ridge parameter) must be a number, got {lam!r}")
    v = float(lam)
    if not math.isfinite(v) or v < floor:
        raise CITestError(
            f"lam={lam!r} is below the public floor {floor}: the residual sensitivity "
            "grows without bound as lam -> 0, so lam must be a public constant >= the floor "
            "(note: scikit-learn's KernelRidge alpha equals n*lam, not lam)"
        )
    return v


def sklearn_alpha(lam: float, n: int) -> float:
    """scikit-learn ``KernelRidge`` ``alpha`` equivalent to our ``lam`` on ``n`` rows."""
    return float(n) * float(lam)


def rbf_kernel(a: FloatArray, b: FloatArray, bandwidth: float) -> FloatArray:
    """Gaussian RBF Gram matrix ``exp(-||a_i - b_j||^2 / (2 h^2))`` (rows are points)."""
    a2 = np.einsum("ij,ij->i", a, a)
    b2 = np.einsum("ij,ij->i", b, b)
    d2 = a2[:, None] + b2[None, :] - 2.0 * (a @ b.T)
    np.maximum(d2, 0.0, out=d2)
    d2 *= -1.0 / (2.0 * bandwidth * bandwidth)
    out: FloatArray = np.exp(d2, out=d2)
    return out


def _as_points(z: NDArray[np.floating] | None, n: int) -> FloatArray:
    if z is None:
        return np.zeros((n, 0), dtype=np.float64)
    za = np.asarray(z, dtype=np.float64)
    if za.ndim == 1:
        za = za[:, None]
    if za.ndim != 2 or za.shape[0] != n:
        raise CITestError(f"z must have shape (n, d) with n={n}, got {za.shape}")
    if not np.all(np.isfinite(za)):
        raise CITestError("z contains non-finite values (NaN or inf)")
    return za


@dataclass(frozen=True)
class KernelRidge:
    """KRR with a public Gaussian bandwidth and a public ridge ``lam >= lam_floor``.

    ``KernelRidge(bandwidth, lam).factor(z)`` returns a :class:`KRRFactor` that solves
    for any number of targets on the same inputs with one Cholesky factorisation.
    """

    bandwidth: float
    lam: float
    lam_floor: float = LAMBDA_FLOOR

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidth", check_bandwidth(self.bandwidth))
        object.__setattr__(self, "lam", check_lambda(self.lam, check_floor(self.lam_floor)))

    def factor(self, z: NDArray[np.floating] | None, n: int | None = None) -> KRRFactor:
        """Factorise ``K + n lam I`` for inputs ``z`` (shape ``(n, d)``; ``d`` may be 0).

        With no conditioning variables (``z`` is ``None`` or has 0 columns) every kernel
        entry is 1 and the fit is the shrunken constant ``sum(v) / (n (1 + lam))``.
        """
        if z is None and n is None:
            raise CITestError("factor() needs z or n")
        rows = int(np.asarray(z).shape[0]) if z is not None else int(n)  # type: ignore[arg-type]
        if rows < 1:
            raise CITestError("KRR needs at least one row")
        pts = _as_points(z, rows)
        K = rbf_kernel(pts, pts, self.bandwidth)
        shift = rows * self.lam
        K[np.diag_indices_from(K)] += shift
        cho = scipy.linalg.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
        return KRRFactor(points=pts, cho=cho, n=rows, lam=self.lam, bandwidth=self.bandwidth)


def check_targets(v: NDArray[np.floating], n: int) -> FloatArray:
    """Regression targets as float64 of shape ``(n,)`` or ``(n, k)``, all finite."""
    va = np.asarray(v, dtype=np.float64)
    if va.shape[0] != n or va.ndim not in (1, 2):
        raise CITestError(f"targets must have shape (n,) or (n, k) with n={n}, got {va.shape}")
    if not np.all(np.isfinite(va)):
        raise CITestError("targets contain non-finite values (NaN or inf)")
    return va


@dataclass(frozen=True)
class KRRFactor:
    """A Cholesky factorisation of ``K + n lam I`` shared by several KRR fits."""

    points: FloatArray
    cho: tuple[FloatArray, bool]
    n: int
    lam: float
    bandwidth: float

    def _targets(self, v: NDArray[np.floating]) -> FloatArray:
        return check_targets(v, self.n)

    def coefficients(self, v: NDArray[np.floating]) -> FloatArray:
        """``alpha = (K + n lam I)^-1 v`` (``v`` of shape ``(n,)`` or ``(n, k)``)."""
        va = self._targets(v)
        out: FloatArray = scipy.linalg.cho_solve(self.cho, va, check_finite=False)
        return out

    def residuals(self, v: NDArray[np.floating]) -> FloatArray:
        """In-sample residuals ``v - K alpha = n lam alpha`` (same shape as ``v``)."""
        return (self.n * self.lam) * self.coefficients(v)

    def fitted(self, v: NDArray[np.floating]) -> FloatArray:
        """In-sample fitted values ``K alpha``."""
        va = self._targets(v)
        return va - self.residuals(va)

    def predict(self, v: NDArray[np.floating], z_new: NDArray[np.floating]) -> FloatArray:
        """Predictions of the fit to ``v`` at new points ``z_new``."""
        alpha = self.coefficients(v)
        pts = _as_points(z_new, int(np.asarray(z_new).shape[0]))
        if pts.shape[1] != self.points.shape[1]:
            raise CITestError("z_new has a different number of columns than the fit")
        out: FloatArray = rbf_kernel(pts, self.points, self.bandwidth) @ alpha
        return out


def krr_residuals(
    z: NDArray[np.floating] | None,
    targets: NDArray[np.floating],
    *,
    bandwidth: float,
    lam: float,
) -> FloatArray:
    """Residuals of regressing each column of ``targets`` (``(n,)`` or ``(n, k)``) on ``z``."""
    t = np.asarray(targets, dtype=np.float64)
    return KernelRidge(bandwidth, lam).factor(z, n=t.shape[0]).residuals(t)


# ---------------------------------------------------------------------------------
# Random Fourier features (finite-dimensional, public frequencies)
# ---------------------------------------------------------------------------------


def check_regression(regression: object) -> str:
    """``"krr"`` or ``"rff"``, else :class:`CITestError`."""
    if not isinstance(regression, str) or regression not in REGRESSIONS:
        raise CITestError(f"regression={regression!r}: choose one of {REGRESSIONS}")
    return regression


def check_features(features: object) -> int:
    """A public even number ``D`` of random Fourier features, ``2 <= D <= MAX_FEATURES``."""
    if isinstance(features, bool) or not isinstance(features, int | np.integer):
        raise CITestError(f"features (number D of random Fourier features) must be an int, "
                          f"got {features!r}")
    d = int(features)
    if d < 2 or d > MAX_FEATURES or d % 2:
        raise CITestError(
            f"features={d}: D must be an even int in [2, {MAX_FEATURES}] (cos/sin pairs)")
    return d


def check_feature_seed(seed: object) -> int:
    """A public non-negative int seeding the random Fourier frequencies."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise CITestError(f"feature_seed must be a non-negative int (a public "
                          f"hyper-parameter, never derived from the data), got {seed!r}")
    return int(seed)


def rff_frequencies(d: int, features: int, bandwidth: float, seed: int) -> FloatArray:
    """The ``(D/2, d)`` public frequencies ``w_j ~ N(0, h^-2 I_d)`` from ``seed``.

    A function of public inputs only (``d`` is the number of conditioning columns of the
    schema): the same arguments always give the same frequencies.
    """
    g = np.random.default_rng(np.random.SeedSequence([seed, d]))
    out: FloatArray = g.standard_normal((features // 2, d)) / bandwidth
    return out


def rff_map(points: FloatArray, freqs: FloatArray) -> FloatArray:
    """``phi(z)`` for every row of ``points``: shape ``(n, D)``, every row of unit norm."""
    proj = points @ freqs.T
    scale = math.sqrt(1.0 / freqs.shape[0])  # sqrt(2 / D), D = 2 * pairs
    out: FloatArray = np.empty((points.shape[0], 2 * freqs.shape[0]), dtype=np.float64)
    np.cos(proj, out=out[:, 0::2])
    np.sin(proj, out=out[:, 1::2])
    out *= scale
    return out


@dataclass(frozen=True)
class RandomFourierRidge:
    """Ridge regression on ``D`` random Fourier features (public bandwidth, public
    ``lam >= lam_floor``, public frequency ``seed``); same objective as
    :class:`KernelRidge`. ``factor(z)`` returns an :class:`RFFFactor`."""

    bandwidth: float
    lam: float
    features: int = DEFAULT_FEATURES
    seed: int = DEFAULT_FEATURE_SEED
    lam_floor: float = LAMBDA_FLOOR

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidth", check_bandwidth(self.bandwidth))
        object.__setattr__(self, "lam", check_lambda(self.lam, check_floor(self.lam_floor)))
        object.__setattr__(self, "features", check_features(self.features))
        object.__setattr__(self, "seed", check_feature_seed(self.seed))

    def describe(self) -> str:
        return f"regression=rff, features={self.features}, feature_seed={self.seed}"

    def factor(self, z: NDArray[np.floating] | None, n: int | None = None) -> RFFFactor:
        """Factorise ``Phi^T Phi + n lam I_D`` for inputs ``z`` (``d`` may be 0: then every
        ``phi(z)`` is the same unit vector and the fit is the shrunken constant, as KRR)."""
        if z is None and n is None:
            raise CITestError("factor() needs z or n")
        rows = int(np.asarray(z).shape[0]) if z is not None else int(n)  # type: ignore[arg-type]
        if rows < 1:
            raise CITestError("ridge regression needs at least one row")
        pts = _as_points(z, rows)
        freqs = rff_frequencies(pts.shape[1], self.features, self.bandwidth, self.seed)
        phi = rff_map(pts, freqs)
        G = phi.T @ phi
        G[np.diag_indices_from(G)] += rows * self.lam
        cho = scipy.linalg.cho_factor(G, lower=True, overwrite_a=True, check_finite=False)
        return RFFFactor(phi=phi, freqs=freqs, cho=cho, n=rows, lam=self.lam,
                         bandwidth=self.bandwidth)


@dataclass(frozen=True)
class RFFFactor:
    """A Cholesky factorisation of ``Phi^T Phi + n lam I_D`` shared by several fits."""

    phi: FloatArray
    freqs: FloatArray
    cho: tuple[FloatArray, bool]
    n: int
    lam: float
    bandwidth: float

    def _targets(self, v: NDArray[np.floating]) -> FloatArray:
        return check_targets(v, self.n)

    def coefficients(self, v: NDArray[np.floating]) -> FloatArray:
        """Primal weights ``beta = (Phi^T Phi + n lam I)^-1 Phi^T v`` (shape ``(D,)`` or
        ``(D, k)``)."""
        va = self._targets(v)
        out: FloatArray = scipy.linalg.cho_solve(self.cho, self.phi.T @ va, check_finite=False)
        return out

    def fitted(self, v: NDArray[np.floating]) -> FloatArray:
        """In-sample fitted values ``Phi beta``."""
        out: FloatArray = self.phi @ self.coefficients(v)
        return out

    def residuals(self, v: NDArray[np.floating]) -> FloatArray:
        """In-sample residuals ``v - Phi beta`` (same shape as ``v``)."""
        va = self._targets(v)
        out: FloatArray = va - self.phi @ self.coefficients(va)
        return out

    def predict(self, v: NDArray[np.floating], z_new: NDArray[np.floating]) -> FloatArray:
        """Predictions of the fit to ``v`` at new points ``z_new``."""
        beta = self.coefficients(v)
        pts = _as_points(z_new, int(np.asarray(z_new).shape[0]))
        if pts.shape[1] != self.freqs.shape[1]:
            raise CITestError("z_new has a different number of columns than the fit")
        out: FloatArray = rff_map(pts, self.freqs) @ beta
        return out


#: A public ridge regression (exact KRR or RFF) and its factorisation.
Ridge = KernelRidge | RandomFourierRidge
RidgeFactor = KRRFactor | RFFFactor


def make_ridge(
    regression: str,
    bandwidth: float,
    lam: float,
    *,
    features: int | None = None,
    feature_seed: int | None = None,
    lam_floor: float = LAMBDA_FLOOR,
) -> Ridge:
    """The public ridge regression ``regression`` (``"krr"`` or ``"rff"``).

    ``features`` / ``feature_seed`` belong to ``"rff"`` (defaults
    :data:`DEFAULT_FEATURES`, :data:`DEFAULT_FEATURE_SEED`); giving them with ``"krr"`` is
    an error rather than silently ignored.
    """
    kind = check_regression(regression)
    if kind == "krr":
        if features is not None or feature_seed is not None:
            raise CITestError("features / feature_seed apply to regression='rff' only")
        return KernelRidge(bandwidth, lam, lam_floor)
    return RandomFourierRidge(
        bandwidth, lam,
        DEFAULT_FEATURES if features is None else features,
        DEFAULT_FEATURE_SEED if feature_seed is None else feature_seed,
        lam_floor,
    )
