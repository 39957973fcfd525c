"""The generalised covariance measure (GCM) test and its private version PrivGCM.

GCM (Shah and Peters 2020): regress X on Z and Y on Z, form the residual products
``R_i = (x_i - f(z_i)) (y_i - g(z_i))`` and compare ``T = sqrt(n) mean(R) / sd(R)`` with
a standard normal; p-value ``2 (1 - Phi(|T|))``.

PrivGCM (Kalemaj, Kasiviswanathan and Ramdas, Alg. 1 with kernel ridge regression):

1. clip X and Y to their public bounds and rescale them to ``[-1, 1]``; Z is clipped
   and rescaled the same way (for a meaningful single bandwidth; the proof needs no
   bound on Z);
2. KRR of X on Z and of Y on Z (:mod:`dpcg.regression`, public bandwidth, public
   ``lam >= LAMBDA_FLOOR``; one Cholesky factorisation for both fits); or, with
   ``regression="rff"``, the same ridge on ``D`` random Fourier features with public
   frequencies (``O(n D^2)`` instead of ``O(n^3)``; same objective and same ``c_lam``);
3. release the vector ``R`` through ``accounting``'s vector Laplace mechanism with L1
   sensitivity ``c_lam = 2 a^2 + min(4 a^2/lam, 2 a/sqrt(lam))``, ``a = 1 + lam^-1/2``
   (replace-one; the paper's ``2 a^2 (1 + 2/lam)`` tightened with a proof), i.e. iid
   ``Lap(c_lam / eps)`` noise on every coordinate;
4. post-process: ``T`` and its p-value computed on the noisy products.

``c_lam`` is the L1 sensitivity of the **whole** vector of ``n`` products (the
replaced row changes its own product by up to ``2 a^2`` and, through the fit, every
other product; the sum of those changes is at most ``min(4 a^2/lam, 2 a/sqrt(lam))``);
the proof is in ``docs/privacy/privgcm.md`` and is property-tested in
``tests/continuous``.

The grouped release (``PrivGCMTest(groups=G)``, private-ci-pc's default) releases ``G``
noisy sums of the products over a secret random grouping; by default (``fit="twice"``)
the products are those of the twice-fitted residuals clipped to a public bound
(:func:`twice_residuals`, sensitivity :func:`c_lambda_twice`, Theorem 2 of the proof
note), whose shrinkage bias is small enough that the non-private statistic at the same
settings keeps its level.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr, stdtr

from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.ridge_cv import (
    DEFAULT_CV_BANDWIDTHS,
    DEFAULT_CV_LAMBDAS,
    GCVFit,
    GCVRidge,
)
from dpcg.data.dataset import Dataset
from dpcg.data.readers import debug_detail
from dpcg.errors import CITestError
from dpcg.regression import (
    DEFAULT_FEATURE_SEED,
    DEFAULT_FEATURES,
    LAMBDA_FLOOR,
    KernelRidge,
    Ridge,
    RidgeFactor,
    check_floor,
    check_lambda,
    check_regression,
    make_ridge,
)

if TYPE_CHECKING:
    from accounting.session import Session

FloatArray = NDArray[np.float64]
_T = TypeVar("_T")

#: Default public Gaussian bandwidth on the rescaled ``[-1, 1]^d`` scale of Z.
DEFAULT_BANDWIDTH = 0.5
#: Default public ridge parameter of :func:`residual_products` (objective
#: ``(1/n) sum (f - v)^2 + lam ||f||^2``). PrivGCM's default is :func:`privgcm_lambda`
#: of the public ``n`` and ``eps``; the non-private :class:`GCMTest` tunes it by GCV.
DEFAULT_LAMBDA = 1.0
#: Public bound ``B`` on the RKHS norms of ``E[X | Z]`` and ``E[Y | Z]`` (on the
#: ``[-1, 1]`` scale) assumed by :func:`privgcm_lambda`.
DEFAULT_RKHS_NORM = 1.0
#: Largest null drift of PrivGCM's statistic that :func:`privgcm_lambda` allows: a
#: standard normal shifted by 0.1 leaves ``|T| > 1.96`` with probability 0.051.
DEFAULT_NULL_DRIFT = 0.1
#: Default number of public row groups of grouped PrivGCM (``groups=``): row ``i`` is in
#: group ``i mod G``; the release is the ``G`` group sums of the residual products.
DEFAULT_GROUPS = 20
#: Grouped PrivGCM's default bandwidth per ``sqrt(d)`` on the ``[-1, 1]`` scale of Z
#: (:func:`grouped_bandwidth`; docs/privacy/privgcm.md, "Grouped release").
GROUPED_BANDWIDTH = 0.1
#: Grouped PrivGCM's default ridge: ``lam = GROUPED_LAMBDA_MAX min(1, (GROUPED_LAMBDA_N /
#: n)^GROUPED_LAMBDA_RATE)`` (:func:`grouped_lambda`).
GROUPED_LAMBDA_MAX = 0.03
GROUPED_LAMBDA_N = 10_000
GROUPED_LAMBDA_RATE = 0.7
#: Fits of grouped PrivGCM (``fit=``): ``"twice"`` (default; the twice-fitted ridge with a
#: public residual clip, :func:`twice_residuals`, sensitivity :func:`c_lambda_twice`) or
#: ``"single"`` (one ridge fit, :func:`c_lambda_sharp`; the release before issue 60's fix).
FITS = ("twice", "single")
#: Default public clip of the twice-fitted residuals on the ``[-1, 1]`` scale (``|r| <= c``).
TWICE_RESIDUAL_CLIP = 0.5
#: Twice-fitted default ridge: ``lam = TWICE_LAMBDA_AT (TWICE_LAMBDA_N / n)^TWICE_LAMBDA_RATE``
#: within ``[LAMBDA_FLOOR, TWICE_LAMBDA_MAX]`` (:func:`twice_lambda`).
TWICE_LAMBDA_AT = 0.03
TWICE_LAMBDA_N = 10_000
TWICE_LAMBDA_RATE = 0.2
TWICE_LAMBDA_MAX = 0.1


# ---------------------------------------------------------------------------------
# Public bounds and rescaling
# ---------------------------------------------------------------------------------


def check_bounds(bounds: object, p: int) -> tuple[FloatArray, FloatArray]:
    """Validate ``p`` public ``(lower, upper)`` pairs; return the two arrays."""
    if bounds is None:
        raise CITestError(
            "bounds are missing: every continuous column needs public (lower, upper) "
            "bounds declared in the schema (never computed from the data)"
        )
    try:
        b = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        raise CITestError(f"bounds must be {p} (lower, upper) pairs, got {bounds!r}") from None
    if b.shape != (p, 2):
        raise CITestError(f"bounds must have shape ({p}, 2), got {b.shape}")
    if not np.all(np.isfinite(b)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(b), axis=1))[0])
        raise CITestError(f"bounds of column {bad} are not finite: {tuple(b[bad])}")
    if np.any(b[:, 0] >= b[:, 1]):
        bad = int(np.flatnonzero(b[:, 0] >= b[:, 1])[0])
        raise CITestError(f"bounds of column {bad} must satisfy lower < upper: {tuple(b[bad])}")
    return np.ascontiguousarray(b[:, 0]), np.ascontiguousarray(b[:, 1])


def check_values(values: object, p: int | None = None) -> FloatArray:
    """Validate a ``(p, n)`` array of finite floats (columns are variables' rows)."""
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise CITestError("values must be a (p, n) array of numbers") from None
    if v.ndim != 2 or (p is not None and v.shape[0] != p):
        raise CITestError(f"values must have shape (p, n), got {v.shape}")
    if v.shape[1] < 2:
        raise CITestError(f"need at least 2 rows, got n={v.shape[1]}")
    finite = np.isfinite(v)
    if not np.all(finite):
        col = int(np.flatnonzero(~np.all(finite, axis=1))[0])
        row = int(np.flatnonzero(~finite[col])[0])
        # the column and the rule only: a row number or a value is data (threat model)
        raise CITestError(f"column {col} has a non-finite value (rule: every value must be a "
                          "finite number)" + debug_detail(f"row {row}"))
    return np.ascontiguousarray(v)


def rescale(values: FloatArray, lower: FloatArray, upper: FloatArray) -> FloatArray:
    """Clip rows of ``values`` (shape ``(k, n)``) to public bounds and map them to [-1, 1]."""
    lo = lower[:, None]
    hi = upper[:, None]
    clipped = np.clip(values, lo, hi)
    out: FloatArray = 2.0 * (clipped - lo) / (hi - lo) - 1.0
    return np.clip(out, -1.0, 1.0)


@dataclass(frozen=True)
class ContinuousData:
    """Validated continuous data: ``values`` ``(p, n)``, public bounds, names, and the
    values rescaled to ``[-1, 1]`` by those bounds."""

    values: FloatArray
    lower: FloatArray
    upper: FloatArray
    names: tuple[str, ...]
    scaled: FloatArray

    @property
    def n(self) -> int:
        return int(self.values.shape[1])

    @property
    def p(self) -> int:
        return int(self.values.shape[0])

    @classmethod
    def build(
        cls, values: object, bounds: object, names: Sequence[str] | None = None
    ) -> ContinuousData:
        v = check_values(values)
        lo, hi = check_bounds(bounds, v.shape[0])
        nm = tuple(names) if names is not None else tuple(f"X{j}" for j in range(v.shape[0]))
        if len(nm) != v.shape[0]:
            raise CITestError(f"got {len(nm)} names for {v.shape[0]} columns")
        return cls(values=v, lower=lo, upper=hi, names=nm, scaled=rescale(v, lo, hi))

    @classmethod
    def from_dataset(cls, dataset: Dataset) -> ContinuousData:
        """From a :class:`dpcg.data.Dataset` with an all-continuous schema."""
        columns = list(dataset.schema.columns)
        bounds = []
        for col in columns:
            lower = getattr(col, "lower", None)
            upper = getattr(col, "upper", None)
            if lower is None or upper is None:
                raise CITestError(
                    f"column {col.name!r} is not continuous with public bounds; PrivGCM and "
                    "PrivCRT need an all-continuous schema"
                )
            bounds.append((lower, upper))
        return cls.build(dataset.values, bounds, tuple(dataset.names))


# ---------------------------------------------------------------------------------
# Exact statistics
# ---------------------------------------------------------------------------------


def c_lambda_paper(lam: float) -> float:
    """The published constant ``2 (1 + lam^-1/2)^2 (1 + 2/lam)`` (Kalemaj et al.,
    Lemma 3.4; PRIVACY.md section 5): valid, but loose. Kept for comparison."""
    a = 1.0 + 1.0 / math.sqrt(lam)
    return 2.0 * a * a * (1.0 + 2.0 / lam)


def c_lambda(lam: float) -> float:
    """L1 sensitivity of the residual-product vector under replace-one:
    ``2 a^2 + min(4 a^2 / lam, 2 a / sqrt(lam))`` with ``a = 1 + lam^-1/2``
    (docs/privacy/privgcm.md, Theorem 1). Never larger than :func:`c_lambda_paper`;
    ``2(1 + lam^-1/2)(1 + 2 lam^-1/2)`` for ``lam`` below about 6 (12 at ``lam = 1``,
    against the paper's 24)."""
    a = 1.0 + 1.0 / math.sqrt(lam)
    return 2.0 * a * a + min(4.0 * a * a / lam, 2.0 * a / math.sqrt(lam))


def c_lambda_sharp(lam: float) -> float:
    """Theorem 1 with Lemma A' (``|r_i| <= a* = 1 + 1/(2 sqrt(lam))``):
    ``2 a*^2 + min(4 a*^2 / lam, 2 a* / sqrt(lam))``, the L1 sensitivity of the
    residual-product vector (and of any vector of sums over disjoint groups of it) used
    by grouped PrivGCM (docs/privacy/privgcm.md, "Grouped release"). Never larger than
    :func:`c_lambda` (about half of it for ``lam <= 0.1``); the legacy vector release
    keeps :func:`c_lambda` so that its seeded outputs do not change."""
    a = 1.0 + 0.5 / math.sqrt(lam)
    return 2.0 * a * a + min(4.0 * a * a / lam, 2.0 * a / math.sqrt(lam))


def c_lambda_twice(lam: float, clip: float = TWICE_RESIDUAL_CLIP) -> float:
    """L1 sensitivity of the twice-fitted, clipped residual products
    (:func:`twice_residuals`; docs/privacy/privgcm.md, Theorem 2):
    ``2 c^2 + min(10 c a* / lam, 4 c a* / sqrt(lam))`` with ``a* = 1 + 1/(2 sqrt(lam))``
    and ``c`` the public residual clip (``0 < c <= 1``). About ``2 c / lam`` for small
    ``lam`` (45.4 at ``lam = 0.03``, ``c = 0.5``, against ``c_lambda_sharp(0.03) = 75.1``)."""
    lam = check_lambda(lam)
    c = check_residual_clip(clip)
    a = 1.0 + 0.5 / math.sqrt(lam)
    return 2.0 * c * c + min(10.0 * c * a / lam, 4.0 * c * a / math.sqrt(lam))


def check_residual_clip(clip: object) -> float:
    """A public residual clip ``c`` of the twice-fitted residuals, ``0 < c <= 1``."""
    if isinstance(clip, bool) or not isinstance(clip, int | float | np.floating):
        raise CITestError(f"residual_clip must be a number in (0, 1], got {clip!r}")
    c = float(clip)
    if not (math.isfinite(c) and 0.0 < c <= 1.0):
        raise CITestError(f"residual_clip={clip!r} must be in (0, 1]")
    return c


def check_fit(fit: object) -> str:
    """``"twice"`` or ``"single"`` (:data:`FITS`)."""
    if not isinstance(fit, str) or fit not in FITS:
        raise CITestError(f"fit={fit!r}: choose one of {FITS}")
    return fit


def twice_residuals(factor: RidgeFactor, v: NDArray[np.floating],
                    clip: float = TWICE_RESIDUAL_CLIP) -> FloatArray:
    """Twice-fitted residuals of targets ``v`` in ``[-1, 1]`` (shape ``(n,)`` or ``(n, k)``):
    ``r1 = v - f1(z)`` (ridge fit of ``v``), ``s = clip(r1, -1, 1)``, ``r2 = s - f2(z)``
    (the same ridge fitted to ``s``), returned clipped to ``[-clip, clip]``.

    Without the clips ``r2 = (I - H)^2 v`` ("twicing", Tukey 1977): the fits' shrinkage
    bias ``(I - H) f`` becomes ``(I - H)^2 f``, so the GCM's null bias
    ``f_x^T (I - H)^4 f_y / n`` is far smaller at the same ``lam`` (measured in
    docs/privacy/privgcm.md). The clips keep the second fit's targets in ``[-1, 1]`` and
    bound each product by ``clip^2``: Theorem 2 of the proof note needs both. One
    factorisation serves both fits."""
    c = check_residual_clip(clip)
    r1 = factor.residuals(v)
    r2 = factor.residuals(np.clip(r1, -1.0, 1.0))
    out: FloatArray = np.clip(r2, -c, c)
    return out


def twice_lambda(n: int) -> float:
    """The twice-fitted grouped PrivGCM's default ridge parameter, a function of the
    public ``n`` only: ``0.03 (10,000 / n)^0.2`` within ``[LAMBDA_FLOOR, 0.1]`` (0.041 at
    ``n = 2,000``, 0.03 at 10,000, 0.019 at 100,000). The twice-fitted shrinkage bias grows
    like ``lam^2.6`` (measured on a grid of models, docs/privacy/privgcm.md, "Twice-fitted
    residuals"), so ``sqrt(n) bias`` stays about level (0.3-0.4 up to ``n = 10,000`` and
    about 0.6 at 100,000 on the worst ``d = 1`` model of the grid), while the noise of
    the group sums (``~ 1/lam``) grows like ``n^0.2``, far slower than the signal
    (``~ n``)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise CITestError(f"n={n!r}: expected a positive integer")
    lam = TWICE_LAMBDA_AT * float((TWICE_LAMBDA_N / int(n)) ** TWICE_LAMBDA_RATE)
    return max(LAMBDA_FLOOR, min(TWICE_LAMBDA_MAX, lam))


def check_groups(groups: object, n: int) -> int:
    """A public number of row groups ``G``: an int with ``2 <= G`` and ``2 G <= n``."""
    if isinstance(groups, bool) or not isinstance(groups, int | np.integer):
        raise CITestError(f"groups must be an integer >= 2, got {groups!r}")
    g = int(groups)
    if g < 2:
        raise CITestError(f"groups={g} must be >= 2 (the statistic needs a spread)")
    if 2 * g > n:
        raise CITestError(f"groups={g}: need at least 2 rows per group (n={n} is public)")
    return g


def default_groups(n: int) -> int:
    """The default number of groups for ``n`` rows (public): ``min(20, n // 2)``, at
    least 2 (:func:`check_groups` refuses fewer than 4 rows)."""
    return max(2, min(DEFAULT_GROUPS, int(n) // 2))


def grouped_lambda(n: int) -> float:
    """Grouped PrivGCM's default ridge parameter, a function of the public ``n`` only:
    ``0.03 min(1, (10,000 / n)^0.7)`` (at least ``LAMBDA_FLOOR``): 0.03 up to
    ``n = 10,000``, 0.0060 at ``n = 100,000``. The shrinkage bias of the fits grows like
    ``lam^1.3-1.5`` (measured on a grid of models: docs/privacy/privgcm.md, "Grouped
    release"), so ``sqrt(n) bias`` stays roughly level, while the noise of the group sums
    (``~ 1/lam``) grows like ``n^0.7``, slower than the signal (``~ n``)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise CITestError(f"n={n!r}: expected a positive integer")
    scale = min(1.0, float((GROUPED_LAMBDA_N / int(n)) ** GROUPED_LAMBDA_RATE))
    return max(LAMBDA_FLOOR, GROUPED_LAMBDA_MAX * scale)


def grouped_bandwidth(d: int) -> float:
    """Grouped PrivGCM's default bandwidth for ``d`` conditioning variables (a schema
    fact): ``0.1 sqrt(d)`` on the ``[-1, 1]`` scale of Z (0.1 with ``d = 0``, unused)."""
    return GROUPED_BANDWIDTH * math.sqrt(max(int(d), 1))


def group_sums(products: NDArray[np.floating], groups: int) -> FloatArray:
    """Sums of ``products`` over the public groups ``i mod groups`` (length ``groups``)."""
    r = np.asarray(products, dtype=np.float64)
    out = np.bincount(np.arange(r.shape[0]) % groups, weights=r, minlength=groups)
    return np.asarray(out, dtype=np.float64)


def grouped_statistic(sums: NDArray[np.floating]) -> GCMStatistic:
    """One-sample t statistic of ``G`` (noisy or exact) group sums,
    ``sqrt(G) mean / sd`` (``sd`` with ``G - 1`` degrees of freedom), and its two-sided
    Student-t p-value with ``G - 1`` degrees of freedom; a zero ``sd`` gives ``T = 0``."""
    s = np.asarray(sums, dtype=np.float64)
    g = s.shape[0]
    mean = float(s.mean())
    var = float(np.sum((s - mean) ** 2)) / (g - 1)
    if not var > 0.0:
        return GCMStatistic(0.0, 1.0)
    t = math.sqrt(g) * mean / math.sqrt(var)
    return GCMStatistic(t, float(2.0 * stdtr(g - 1, -abs(t))))


def null_drift_bound(lam: float, n: int, epsilon: float,
                     rkhs_norm: float = DEFAULT_RKHS_NORM) -> float:
    """Bound on the mean of PrivGCM's ``T`` under the null:
    ``sqrt(n) lam B^2 eps / (sqrt(2) c_lam)``.

    Under conditional independence the exact products have mean
    ``(1/n) sum ((I - H) f_x)_i ((I - H) f_y)_i`` (the ridge's shrinkage of the
    regression functions; the noise terms have mean 0), at most ``lam B^2`` when
    ``||f_x||_H, ||f_y||_H <= B``; the noisy products' sd is at least
    ``sqrt(2) c_lam / eps`` (docs/privacy/privgcm.md, "The default lam").
    """
    return (math.sqrt(n) * lam * rkhs_norm * rkhs_norm * epsilon
            / (math.sqrt(2.0) * c_lambda(lam)))


def privgcm_lambda(n: int, epsilon: float, *, rkhs_norm: float = DEFAULT_RKHS_NORM,
                   drift: float = DEFAULT_NULL_DRIFT) -> float:
    """PrivGCM's default ridge parameter: the largest ``lam`` in ``[LAMBDA_FLOOR, 1]``
    whose :func:`null_drift_bound` is at most ``drift`` (``LAMBDA_FLOOR`` if none is).

    A function of public quantities only (``n``, the per-test ``eps``, and the public
    assumptions ``B`` and ``drift``), so it may set the noise scale ``c_lam / eps``.
    A fixed ``lam`` is not asymptotically valid: its shrinkage bias is a constant
    and ``T``'s drift grows like ``sqrt(n)``; here ``lam`` falls like ``n^-1/4``
    (``c_lam ~ 4/lam`` for small ``lam``). ``lam / c_lam`` increases with ``lam``, so
    a bisection on ``log lam`` finds the boundary.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise CITestError(f"n={n!r}: expected a positive integer")
    eps = check_epsilon(epsilon)
    for name, v in (("rkhs_norm", rkhs_norm), ("drift", drift)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not (
                math.isfinite(v) and v > 0):
            raise CITestError(f"{name}={v!r}: expected a finite number > 0")
    n = int(n)
    if null_drift_bound(1.0, n, eps, rkhs_norm) <= drift:
        return 1.0
    if null_drift_bound(LAMBDA_FLOOR, n, eps, rkhs_norm) > drift:
        return LAMBDA_FLOOR
    lo, hi = math.log(LAMBDA_FLOOR), 0.0
    for _ in range(60):  # the bracket [lo, hi] keeps drift(lo) <= drift < drift(hi)
        mid = 0.5 * (lo + hi)
        if null_drift_bound(math.exp(mid), n, eps, rkhs_norm) <= drift:
            lo = mid
        else:
            hi = mid
    return max(LAMBDA_FLOOR, math.exp(lo))


def residual_products_scaled(
    xs: FloatArray, ys: FloatArray, factor: RidgeFactor
) -> FloatArray:
    """``R_i = r^X_i r^Y_i`` for X, Y already in ``[-1, 1]`` (one solve for both fits)."""
    res = factor.residuals(np.stack([xs, ys], axis=1))
    out: FloatArray = res[:, 0] * res[:, 1]
    return out


def twice_products_scaled(xs: FloatArray, ys: FloatArray, factor: RidgeFactor,
                          clip: float = TWICE_RESIDUAL_CLIP) -> FloatArray:
    """``R_i = r^X_i r^Y_i`` of the twice-fitted, clipped residuals
    (:func:`twice_residuals`) for X, Y already in ``[-1, 1]``."""
    res = twice_residuals(factor, np.stack([xs, ys], axis=1), clip)
    out: FloatArray = res[:, 0] * res[:, 1]
    return out


def residual_products(
    x: NDArray[np.floating],
    y: NDArray[np.floating],
    z: NDArray[np.floating] | None,
    *,
    bounds_x: tuple[float, float],
    bounds_y: tuple[float, float],
    bounds_z: Sequence[tuple[float, float]] = (),
    bandwidth: float = DEFAULT_BANDWIDTH,
    lam: float = DEFAULT_LAMBDA,
    regression: str = "krr",
    features: int | None = None,
    feature_seed: int | None = None,
    fit: str = "single",
    residual_clip: float = TWICE_RESIDUAL_CLIP,
) -> FloatArray:
    """The exact GCM residual-product vector of PrivGCM on raw data.

    ``x``, ``y`` of length ``n``; ``z`` of shape ``(n, d)`` (or ``None``); the bounds are
    public. X, Y and Z are clipped to their bounds and rescaled to ``[-1, 1]``.
    ``regression`` is ``"krr"`` (default) or ``"rff"`` (``features``, ``feature_seed``).
    ``fit="twice"``: the products of :func:`twice_residuals` (clip ``residual_clip``).
    """
    xa = np.asarray(x, dtype=np.float64)
    n = xa.shape[0]
    d = 0 if z is None else (1 if np.ndim(z) == 1 else int(np.shape(z)[1]))
    cols = [xa, np.asarray(y, dtype=np.float64)]
    zz = None if z is None else np.asarray(z, dtype=np.float64).reshape(n, d)
    if zz is not None:
        cols.extend(zz.T)
    bounds = [bounds_x, bounds_y, *bounds_z]
    data = ContinuousData.build(np.stack(cols), bounds)
    ridge = make_ridge(regression, bandwidth, lam, features=features,
                       feature_seed=feature_seed)
    zs = data.scaled[2:].T if d else None
    factor = ridge.factor(zs, n=n)
    if check_fit(fit) == "twice":
        return twice_products_scaled(data.scaled[0], data.scaled[1], factor, residual_clip)
    return residual_products_scaled(data.scaled[0], data.scaled[1], factor)


@dataclass(frozen=True)
class GCMStatistic:
    """``T = sqrt(n) mean(R) / sd(R)`` and its two-sided normal p-value."""

    statistic: float
    pvalue: float


def gcm_statistic(products: NDArray[np.floating]) -> GCMStatistic:
    """Shah-Peters normalisation of a (noisy or exact) residual-product vector.

    ``sd`` is the root of ``mean(R^2) - mean(R)^2``; a zero ``sd`` gives ``T = 0``
    (p-value 1).
    """
    r = np.asarray(products, dtype=np.float64)
    n = r.shape[0]
    mean = float(r.mean())
    var = float(np.mean(r * r) - mean * mean)
    if not var > 0.0:
        return GCMStatistic(0.0, 1.0)
    t = math.sqrt(n) * mean / math.sqrt(var)
    return GCMStatistic(t, float(2.0 * (1.0 - ndtr(abs(t)))))


def check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise CITestError(f"alpha must be a number in (0, 1), got {alpha!r}")
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise CITestError(f"alpha={alpha!r} must be in (0, 1)")
    return a


def check_positive(name: str, value: object) -> float:
    """``value`` as a float, or :class:`CITestError` naming ``name`` unless finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CITestError(f"{name} must be a positive number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise CITestError(f"{name}={value!r} must be finite and > 0")
    return v


def check_epsilon(epsilon: object) -> float:
    return check_positive("epsilon", epsilon)


def require_session(session: Session | None) -> Session:
    """The tester's session, or a :class:`CITestError` if it has none (private tests
    may be built before their session opens, to validate input without charging)."""
    if session is None:
        raise CITestError("this private test has no accounting session; set .session first")
    return session


class _SetCache(Generic[_T]):
    """What ``compute(Z_S)`` returns, per conditioning set ``S`` (order ignored; PC
    reuses S a lot), least recently used first out beyond ``size`` sets.
    ``compute`` receives the rescaled ``Z_S`` as ``(n, |S|)``, or ``None`` for ``S = ()``."""

    def __init__(self, data: ContinuousData, compute: Callable[[FloatArray | None], _T],
                 size: int) -> None:
        self._data = data
        self._compute = compute
        self._size = size
        self._cache: OrderedDict[tuple[int, ...], _T] = OrderedDict()

    def get(self, S: tuple[int, ...]) -> _T:
        key = tuple(sorted(S))
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        value = self._compute(self._data.scaled[list(key)].T if key else None)
        self._cache[key] = value
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return value


def _factor_cache(data: ContinuousData, krr: Ridge) -> _SetCache[RidgeFactor]:
    """Cholesky factors of ``K_S + n lam I`` (or ``Phi_S^T Phi_S + n lam I``), 8 sets."""
    return _SetCache(data, lambda zs: krr.factor(zs, n=data.n), 8)


def _residual_cache(data: ContinuousData, ridge: GCVRidge) -> _SetCache[GCVFit]:
    """GCV-tuned residuals of every variable on ``Z_S`` (one ``n x p`` matrix per set; the
    decompositions are not kept): at most 64 sets and about 256 MiB (at least 2)."""
    size = max(2, min(64, (256 << 20) // (8 * data.n * data.p)))
    return _SetCache(data, lambda zs: ridge.fit(zs, data.scaled.T), size)


# ---------------------------------------------------------------------------------
# CI testers
# ---------------------------------------------------------------------------------


def _ridge_suffix(ridge: Ridge) -> str:
    """Extra words of a release's purpose for a non-default regression ('' for KRR, so
    the ledgers of KRR runs are unchanged)."""
    return "" if isinstance(ridge, KernelRidge) else ", " + ridge.describe()


class GCMTest:
    """Non-private GCM test on the same rescaled data as PrivGCM, with KRR or the
    random-Fourier-feature ridge (``regression="rff"``, ``features``, ``feature_seed``).

    For comparison only: it releases the exact statistic. By default (``bandwidth`` and
    ``lam`` both ``None``) each regression's bandwidth and ridge parameter are chosen
    from the data by generalised cross-validation over public grids
    (:class:`dpcg.citests.ridge_cv.GCVRidge`: ``bandwidths`` times ``sqrt(d)``, ``lams``),
    and each regression keeps only the variables of ``S`` that lower its GCV score
    (stepwise; :meth:`coordinates`), as the GCM's validity needs regressions that fit
    (Shah and Peters 2020); a fixed heavy ridge leaves a shrinkage bias under which the
    test rejects true nulls more and more often as ``n`` grows. Giving ``lam`` tunes only
    the bandwidth, giving ``bandwidth`` only ``lam`` (that bandwidth as given), giving
    both fits that one ridge (``lam >= lam_floor``; as nothing is released privately,
    ``lam_floor`` may be lowered here). None of this may feed a private release:
    PrivGCM's hyper-parameters are public constants.
    """

    def __init__(
        self,
        values: object,
        bounds: object,
        *,
        bandwidth: float | None = None,
        lam: float | None = None,
        alpha: float = 0.05,
        names: Sequence[str] | None = None,
        lam_floor: float = LAMBDA_FLOOR,
        regression: str = "krr",
        features: int | None = None,
        feature_seed: int | None = None,
        bandwidths: Sequence[float] = DEFAULT_CV_BANDWIDTHS,
        lams: Sequence[float] = DEFAULT_CV_LAMBDAS,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.krr: Ridge | None = None
        self.tuned: GCVRidge | None = None
        if bandwidth is not None and lam is not None:
            self.krr = make_ridge(regression, bandwidth, lam, features=features,
                                  feature_seed=feature_seed, lam_floor=lam_floor)
        else:
            kind = check_regression(regression)
            if kind == "krr" and (features is not None or feature_seed is not None):
                raise CITestError("features / feature_seed apply to regression='rff' only")
            self.tuned = GCVRidge(
                bandwidths=tuple(bandwidths) if bandwidth is None else (bandwidth,),
                lams=tuple(lams) if lam is None else (check_lambda(lam, check_floor(
                    lam_floor)),),
                regression=kind,
                features=DEFAULT_FEATURES if features is None else features,
                seed=DEFAULT_FEATURE_SEED if feature_seed is None else feature_seed,
                scale_by_dim=bandwidth is None)
        self.data = ContinuousData.build(values, bounds, names)
        self._factors = None if self.krr is None else _factor_cache(self.data, self.krr)
        self._fits = None if self.tuned is None else _residual_cache(self.data, self.tuned)

    def _single(self, v: object, S: object) -> tuple[int, tuple[int, ...]]:
        """Validate one variable and a conditioning set (as a query ``v, y | S`` with a
        placeholder ``y`` past the last column)."""
        p = self.data.p
        vi, _, Si = validate_query(v, p, S, p + 1)
        if vi == p or p in Si:
            raise CITestError(f"column index out of range [0, {p})")
        return vi, Si

    def residuals(self, v: int, S: tuple[int, ...]) -> FloatArray:
        """The residuals of variable ``v`` (rescaled to ``[-1, 1]``) regressed on ``Z_S``."""
        vi, Si = self._single(v, S)
        if self._fits is not None:
            out: FloatArray = self._fits.get(Si).residuals[:, vi]
            return out
        assert self._factors is not None
        res: FloatArray = self._factors.get(Si).residuals(self.data.scaled[vi])
        return res

    def chosen(self, v: int, S: tuple[int, ...]) -> tuple[float, float]:
        """``(bandwidth, lam)`` of the regression of ``v`` on ``Z_S`` (the bandwidth is
        ``nan`` with no conditioning variables)."""
        vi, Si = self._single(v, S)
        if self._fits is not None:
            fit = self._fits.get(Si)
            return float(fit.bandwidths[vi]), float(fit.lams[vi])
        assert self.krr is not None
        return (self.krr.bandwidth if Si else math.nan), self.krr.lam

    def coordinates(self, v: int, S: tuple[int, ...]) -> tuple[int, ...]:
        """The variables of ``S`` (sorted) that the regression of ``v`` on ``Z_S`` uses:
        chosen by GCV when tuned (:meth:`GCVRidge.fit`), all of ``S`` with a fixed ridge."""
        vi, Si = self._single(v, S)
        key = tuple(sorted(Si))
        if self._fits is not None:
            return tuple(key[i] for i in self._fits.get(Si).coordinates[vi])
        return key

    def products(self, x: int, y: int, S: tuple[int, ...]) -> FloatArray:
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        if self._fits is not None:
            res = self._fits.get(Si).residuals
            out: FloatArray = res[:, xi] * res[:, yi]
            return out
        assert self._factors is not None
        fac = self._factors.get(Si)
        return residual_products_scaled(self.data.scaled[xi], self.data.scaled[yi], fac)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        st = gcm_statistic(self.products(x, y, S))
        return CIResult(st.pvalue > self.alpha, st.statistic, st.pvalue)


class PrivGCMTest:
    """PrivGCM: every test releases residual products through the session's vector
    Laplace mechanism (``epsilon`` per test).

    Two releases (docs/privacy/privgcm.md):

    * ``groups=None`` (the paper's Alg. 1, kept unchanged): the ``n`` residual products,
      L1 sensitivity :func:`c_lambda`; ``T = sqrt(n) mean / sd`` of the noisy vector
      against a standard normal. ``lam=None`` is :func:`privgcm_lambda` of the public
      ``n`` and ``epsilon``; ``bandwidth=None`` is ``DEFAULT_BANDWIDTH``.
    * ``groups=G`` (grouped release): the ``G`` sums of the products over a secret
      random grouping (:class:`~accounting.mechanisms.GroupedLaplace`); the statistic is
      the t statistic of the ``G`` noisy sums against Student's t with ``G - 1`` degrees
      of freedom. Its noise is ``sqrt(n / G)`` times smaller relative to the signal, so
      the ridge can be light enough to fit. ``fit="twice"`` (default): the products of
      the twice-fitted residuals clipped to ``residual_clip`` (default 0.5;
      :func:`twice_residuals`), L1 sensitivity :func:`c_lambda_twice`, ``lam=None`` is
      :func:`twice_lambda` of ``n``; its non-private statistic holds its level where the
      single fit's shrinkage bias does not. ``fit="single"``: one ridge fit, L1
      sensitivity :func:`c_lambda_sharp`, ``lam=None`` is :func:`grouped_lambda` of
      ``n``. ``bandwidth=None`` is :func:`grouped_bandwidth` of each test's ``|S|``.

    ``names`` defaults to ``X0..X{p-1}``; the decision is ``p > alpha``. The regression
    is KRR (default) or, with ``regression="rff"``, the ridge on ``features`` random
    Fourier features whose frequencies come from the public ``feature_seed``; the
    sensitivity is the same for both.
    """

    def __init__(
        self,
        values: object,
        bounds: object,
        session: Session | None,
        epsilon: float,
        *,
        bandwidth: float | None = None,
        lam: float | None = None,
        alpha: float = 0.05,
        names: Sequence[str] | None = None,
        regression: str = "krr",
        features: int | None = None,
        feature_seed: int | None = None,
        groups: int | None = None,
        fit: str | None = None,
        residual_clip: float | None = None,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.epsilon = check_epsilon(epsilon)
        self.data = ContinuousData.build(values, bounds, names)
        self.groups = None if groups is None else check_groups(groups, self.data.n)
        if self.groups is None:
            if fit not in (None, "single") or residual_clip is not None:
                raise CITestError("fit='twice' and residual_clip need the grouped release "
                                  "(groups=G); the vector release is the paper's single fit")
            self.fit = "single"
        else:
            self.fit = "twice" if fit is None else check_fit(fit)
            if self.fit == "single" and residual_clip is not None:
                raise CITestError("residual_clip applies to fit='twice' only")
        self.residual_clip = (check_residual_clip(TWICE_RESIDUAL_CLIP if residual_clip is None
                                                  else residual_clip)
                              if self.fit == "twice" else None)
        if lam is None:
            lam = (privgcm_lambda(self.data.n, self.epsilon) if self.groups is None
                   else twice_lambda(self.data.n) if self.fit == "twice"
                   else grouped_lambda(self.data.n))
        self._bandwidth = bandwidth
        self._ridge_args = (regression, lam, features, feature_seed)
        base = DEFAULT_BANDWIDTH if self.groups is None else grouped_bandwidth(1)
        self.krr: Ridge = make_ridge(regression, base if bandwidth is None else bandwidth,
                                     lam, features=features, feature_seed=feature_seed)
        self._ridges: dict[int, Ridge] = {}
        self.session = session
        self._factors: _SetCache[RidgeFactor] = _SetCache(
            self.data, lambda zs: self.ridge(0 if zs is None else zs.shape[1]).factor(
                zs, n=self.data.n), 8)

    def ridge(self, d: int) -> Ridge:
        """The ridge of a test with ``d`` conditioning variables: ``self.krr`` unless the
        bandwidth is the grouped default (:func:`grouped_bandwidth` of ``d``)."""
        if self.groups is None or self._bandwidth is not None or d <= 1:
            return self.krr
        hit = self._ridges.get(d)
        if hit is None:
            regression, lam, features, feature_seed = self._ridge_args
            hit = make_ridge(regression, grouped_bandwidth(d), lam, features=features,
                             feature_seed=feature_seed)
            self._ridges[d] = hit
        return hit

    @property
    def sensitivity(self) -> float:
        if self.groups is None:
            return c_lambda(self.krr.lam)
        if self.residual_clip is not None:
            return c_lambda_twice(self.krr.lam, self.residual_clip)
        return c_lambda_sharp(self.krr.lam)

    def products(self, xi: int, yi: int, Si: tuple[int, ...]) -> FloatArray:
        """The exact per-row products of a validated query (the single fit's, or the
        twice-fitted clipped ones); never released as such."""
        fac = self._factors.get(Si)
        xs, ys = self.data.scaled[xi], self.data.scaled[yi]
        if self.residual_clip is not None:
            return twice_products_scaled(xs, ys, fac, self.residual_clip)
        return residual_products_scaled(xs, ys, fac)

    @property
    def dimension(self) -> int:
        """Length of one test's release (public): ``n``, or ``G`` when grouped."""
        return self.data.n if self.groups is None else self.groups

    def mechanism(self) -> Any:
        """The paper's vector release (:class:`~accounting.mechanisms.Laplace` on the
        ``n`` products) or the grouped one (:class:`~accounting.mechanisms.GroupedLaplace`:
        the products summed over ``G`` secret random groups drawn inside the primitive,
        so the release does not depend on the rows' order)."""
        from accounting.mechanisms import GroupedLaplace, Laplace

        if self.groups is None:
            return Laplace(sensitivity=self.sensitivity, epsilon=self.epsilon)
        return GroupedLaplace(sensitivity=self.sensitivity, epsilon=self.epsilon,
                              groups=self.groups)

    def preflight(self) -> None:
        """Build a test's mechanism and its noise grid for the release's dimension (the
        ``n`` residual products or the ``G`` group sums; public): a per-test epsilon the
        sampler cannot represent is an error here, before anything is reserved or
        admitted (the mechanism alone checks one dimension only)."""
        mech = self.mechanism()
        if mech.sampler == "discrete":
            mech.grid(self.dimension)

    def exact(self, x: int, y: int, S: tuple[int, ...]) -> FloatArray:
        """The exact (non-private) vector of this test: the ``n`` products, or their sums
        over the positional groups ``i mod G`` (the released sums use a secret random
        grouping instead, drawn inside the primitive). For validity checks only; never
        released."""
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        prod = self.products(xi, yi, Si)
        return prod if self.groups is None else group_sums(prod, self.groups)

    def statistic(self, released: NDArray[np.floating]) -> GCMStatistic:
        """The test's statistic of a released (or exact) vector (post-processing)."""
        return gcm_statistic(released) if self.groups is None else grouped_statistic(released)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        mech = self.mechanism()
        names = self.data.names
        ridge = self.ridge(len(Si))

        def compute() -> FloatArray:  # the n products (grouped inside the primitive)
            return self.products(xi, yi, Si)

        grouped = "" if self.groups is None else f", {self.groups} group sums"
        if self.residual_clip is not None:
            grouped += f", twice-fitted, residual clip {self.residual_clip:g}"
        kind = "residual products" if self.groups is None else "residual-product group sums"
        purpose = (
            f"PrivGCM {kind} {names[xi]} _||_ {names[yi]} | "
            f"{{{', '.join(names[s] for s in Si)}}} (lam={ridge.lam}, "
            f"bandwidth={ridge.bandwidth}{_ridge_suffix(ridge)}{grouped})"
        )
        noisy = np.asarray(require_session(self.session).release(mech, compute, purpose=purpose),
                           dtype=np.float64)
        st = self.statistic(noisy)
        return CIResult(st.pvalue > self.alpha, st.statistic, st.pvalue)
