"""The conditional randomisation test (CRT) and its private version PrivCRT.

Model-X CRT (Candes et al.): the conditional law ``P(X | Z)`` is public. Draw ``m``
copies ``X^(1..m)`` of X from it, keeping Z (and Y) fixed, compute the same statistic
on the original and on every copy, and rank the original among them.

PrivCRT (Kalemaj, Kasiviswanathan and Ramdas, Alg. 2, Definition 4.4):

* Y is clipped to its public bounds and rescaled to ``[-1, 1]``; ``r_Y`` are the
  residuals of KRR of Y on Z (public bandwidth, public ``lam >= LAMBDA_FLOOR``), or of
  the random-Fourier-feature ridge (``regression="rff"``; same objective, same bound);
* ``r_X^(j)_i = x^(j)_i - E[X | Z = z_i]`` are exact (the model is known), expressed on
  the rescaled X scale (the public affine map of X's bounds) and clipped to
  ``[-B_r, B_r]`` (public ``B_r``);
* ``T_j = (1/n) sum_i clip(r_X^(j)_i, B_r) r_Y_i``; each ``T_j`` has replace-one
  sensitivity ``Delta_T = B_r a min(2 (1 + 1/lam), 2 + lam^-1/2) / n``,
  ``a = 1 + lam^-1/2`` (the paper's ``2 B_r a (1 + 1/lam) / n`` tightened with a proof;
  docs/privacy/privcrt.md);
* two-sided test: the queries are ``q_j = |T_j|`` (``|.|`` is 1-Lipschitz, so the
  sensitivity is unchanged); ``q_(1) >= ... >= q_(m+1)`` sorted decreasingly;
* rank scores ``s(r) = -|q_0 - q_(r)| / (2 Delta_T)``, ``r = 1..m+1``: sensitivity 1,
  because sorting is 1-Lipschitz in the sup norm;
* ``release="rank"`` (Kalemaj et al.'s release): Report Noisy Max with ``Expo(2/eps)``
  noise (``accounting``'s ``ReportNoisyMax``, which releases only the index) picks
  ``r_hat``; p-value ``r_hat / (m+1)``. Its level is at most alpha but depends on the
  unknown gaps between the queries (0.016-0.056 measured at alpha 0.05);
* ``release="threshold"`` (default): every query gets its own noise
  ``W_j = g (Y_j + U_j)`` (``Y_j`` the discrete Laplace of the ``Laplace`` mechanism's
  grid ``g``, ``U_j`` a uniform tie-break), and the test rejects when the noisy
  ``q_0`` is above the ``k``-th largest noisy resample, ``k = floor(alpha (m+1))``.
  Only ``W_0`` is privacy noise: the margin ``f = q_0 + g U_0 - (k-th largest of q_j +
  W_j) + g/2`` has sensitivity ``2 Delta_T`` for every realisation of the others, and
  the ``Laplace(2 Delta_T, eps)`` release of ``f`` adds exactly ``g Y_0``. Under the
  null the noisy queries are exchangeable with a continuous law, so the level is
  ``k / (m+1)`` exactly (alpha when ``alpha (m+1)`` is an integer), whatever the gaps
  (:func:`threshold_margin`; docs/privacy/privcrt.md, "The threshold release").

The model-X resamples, the resamples' noise ``W_1..W_m`` and the tie-breaks ``U_j`` are
not privacy noise: the sensitivity bound holds for every realisation of them (the
neighbouring relation includes the resamples, and only the replaced row's resamples can
change). They are drawn from a generator handed out by the
accounting session (``session.auxiliary_generator()`` when it exists) or passed
explicitly; this module is listed in ``tests/test_layering.py``'s
``NON_PRIVACY_RANDOMNESS`` with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from accounting.noise import discrete_laplace
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.gcm import (
    DEFAULT_BANDWIDTH,
    ContinuousData,
    _factor_cache,
    _ridge_suffix,
    check_alpha,
    check_epsilon,
    check_positive,
    require_session,
)
from dpcg.errors import CITestError
from dpcg.regression import Ridge, RidgeFactor, make_ridge

if TYPE_CHECKING:
    from accounting.session import Session

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Default public clipping bound of the X residuals, on the rescaled ``[-1, 1]`` scale.
DEFAULT_RESIDUAL_BOUND = 1.0
#: Default public ridge parameter of PrivCRT's Y fit. The CRT's validity does not depend
#: on how well Y is fitted (model-X: the resamples are exchangeable with X under the
#: null whatever the statistic), and ``Delta_T`` falls with ``lam``
#: (``(1 + lam^-1/2)(1 + 1/lam)`` = 4 at 1, 1.45 at 10), so a large ``lam`` is the default.
DEFAULT_CRT_LAMBDA = 10.0
#: PrivCRT's releases: ``"threshold"`` (default; exact level ``floor(alpha (m+1))/(m+1)``)
#: and ``"rank"`` (Kalemaj et al.'s Report-Noisy-Max rank; level at most alpha).
RELEASES = ("threshold", "rank")
#: How PrivCRT residualises Y on Z: ``"ridge"`` (KRR / RFF ridge, the default) or
#: ``"law"`` (the conditional mean of Y under the public Gaussian model-X law, clipped to
#: ``[-B_r, B_r]``: every summand of ``T_j`` depends on its own row only, so
#: ``Delta_T = 2 B_r^2 / n``; docs/privacy/privcrt-released-law.md, Lemma L2).
Y_FITS = ("ridge", "law")


# ---------------------------------------------------------------------------------
# Conditional samplers of X given Z (the public model-X law)
# ---------------------------------------------------------------------------------


class ConditionalSampler(Protocol):
    """A public model of ``X | Z``, on the raw scale of the data.

    * ``conditional_mean(z)``: ``E[X | Z = z_i]`` for every row of ``z`` (shape
      ``(n, d)``; ``d`` may be 0), returning shape ``(n,)``;
    * ``sample(z, m, rng)``: ``m`` independent draws of X for every row, shape ``(m, n)``.
    """

    def conditional_mean(self, z: FloatArray) -> FloatArray: ...

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray: ...


@dataclass(frozen=True)
class GaussianLinearSampler:
    """``X | Z = z ~ N(intercept + z . coef, sigma^2)``."""

    coef: tuple[float, ...]
    intercept: float
    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "coef", tuple(float(c) for c in self.coef))
        if not all(math.isfinite(c) for c in self.coef) or not math.isfinite(self.intercept):
            raise CITestError("GaussianLinearSampler: coef and intercept must be finite")
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise CITestError(f"GaussianLinearSampler: sigma={self.sigma!r} must be > 0")

    def conditional_mean(self, z: FloatArray) -> FloatArray:
        za = np.asarray(z, dtype=np.float64)
        if za.shape[1] != len(self.coef):
            raise CITestError(
                f"GaussianLinearSampler has {len(self.coef)} coefficients but z has "
                f"{za.shape[1]} columns"
            )
        out: FloatArray = self.intercept + za @ np.asarray(self.coef, dtype=np.float64)
        return out

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray:
        mu = self.conditional_mean(z)
        out: FloatArray = mu[None, :] + self.sigma * rng.standard_normal((m, mu.shape[0]))
        return out


@dataclass(frozen=True)
class DiscreteSampler:
    """``X | Z = z`` takes ``support[k]`` with probability ``probabilities(z)[i, k]``."""

    support: tuple[float, ...]
    probabilities: Callable[[FloatArray], FloatArray]

    def _probs(self, z: FloatArray) -> FloatArray:
        P = np.asarray(self.probabilities(np.asarray(z, dtype=np.float64)), dtype=np.float64)
        k = len(self.support)
        if P.ndim != 2 or P.shape[1] != k or P.shape[0] != np.shape(z)[0]:
            raise CITestError(f"probabilities(z) must have shape (n, {k}), got {P.shape}")
        if np.any(P < 0) or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9):
            raise CITestError("probabilities(z) must be non-negative rows summing to 1")
        return P

    def conditional_mean(self, z: FloatArray) -> FloatArray:
        out: FloatArray = self._probs(z) @ np.asarray(self.support, dtype=np.float64)
        return out

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray:
        cdf = np.cumsum(self._probs(z), axis=1)
        cdf[:, -1] = 1.0
        u = rng.uniform(size=(m, cdf.shape[0]))
        # index = number of cdf entries strictly below u (vectorised inverse cdf)
        idx = (u[:, :, None] > cdf[None, :, :]).sum(axis=2)
        out: FloatArray = np.asarray(self.support, dtype=np.float64)[idx]
        return out


#: Largest magnitude the conditional parameters and means of a model-X law may reach
#: (a bound far below the float64 overflow, so no step of the sampler overflows).
_MODEL_X_LIMIT = 1e300


def _law_arrays(mean: object, cov: object) -> tuple[FloatArray, FloatArray]:
    """``mean`` and ``cov`` of a public Gaussian law, validated (see
    :class:`GaussianModelX`); errors name the rule, never an entry."""
    where = "GaussianModelX"
    try:
        with np.errstate(all="ignore"):
            mu = np.asarray(mean, dtype=np.float64)
            C = np.asarray(cov, dtype=np.float64)
    except (TypeError, ValueError, ArithmeticError):
        raise CITestError(f"{where}: mean and cov must hold numbers only (rule: mean is a "
                          "list of p numbers, cov a p x p matrix)") from None
    if mu.ndim != 1 or mu.shape[0] == 0:
        raise CITestError(f"{where}: mean must be a non-empty list of numbers, one per "
                          "variable (rule: mean is a list of p numbers)")
    if not np.all(np.isfinite(mu)):
        raise CITestError(f"{where}: mean must be finite (rule: no NaN or infinite entry)")
    p = mu.shape[0]
    if C.shape != (p, p):
        raise CITestError(f"{where}: cov must be a p x p matrix with p the length of mean "
                          "(rule: one row and one column per variable)")
    if not np.all(np.isfinite(C)):
        raise CITestError(f"{where}: cov must be finite (rule: no NaN or infinite entry)")
    with np.errstate(all="ignore"):
        symmetric = bool(np.allclose(C, C.T))
    if not symmetric:
        raise CITestError(f"{where}: cov must be symmetric (rule: cov[i][j] == cov[j][i])")
    # Positive definite, and numerically so: the correlation matrix (scale-free) passes
    # the usual rank tolerance ``p * eps * max``, so every conditional of the law
    # regresses on an invertible sub-matrix.
    d = np.diag(C)
    ok = bool(np.all(d > 0))
    if ok:
        with np.errstate(all="ignore"):
            s = np.sqrt(d)
            R = C / s[:, None] / s[None, :]
            try:
                eig = np.linalg.eigvalsh(R)
            except np.linalg.LinAlgError:
                eig = np.array([np.nan])
        ok = bool(np.all(np.isfinite(eig))) and float(eig[0]) > (
            float(eig[-1]) * p * float(np.finfo(np.float64).eps))
    if not ok:
        raise CITestError(f"{where}: cov must be symmetric positive definite (rule: every "
                          "eigenvalue > 0, and the correlation matrix not numerically "
                          "singular)")
    return mu, C


@dataclass(frozen=True)
class GaussianModelX:
    """A public joint Gaussian model ``N(mean, cov)`` of all ``p`` columns.

    ``sampler(x, S)`` returns the exact Gaussian-linear conditional of column ``x``
    given the columns ``S`` (regression coefficients ``cov_xS cov_SS^-1``). Used to run
    PrivCRT inside PC when the joint law is public (e.g. estimated from public data).

    The law is validated when it is built: ``mean`` finite, ``cov`` a finite, symmetric,
    (numerically) positive-definite ``p x p`` matrix. :meth:`check_columns` checks it
    against the data's columns (one variable per column, in the schema's order) and
    that no conditional of the law overflows on values within the public bounds; PrivCRT
    calls it when the tester is built, before any budget is reserved.
    """

    mean: tuple[float, ...]
    cov: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        mu, C = _law_arrays(self.mean, self.cov)
        object.__setattr__(self, "mean", tuple(float(v) for v in mu.tolist()))
        object.__setattr__(self, "cov", tuple(tuple(float(v) for v in r) for r in C.tolist()))

    @classmethod
    def from_arrays(cls, mean: NDArray[np.floating], cov: NDArray[np.floating]) -> GaussianModelX:
        mu, C = _law_arrays(mean, cov)
        return cls(tuple(mu.tolist()), tuple(tuple(r) for r in C.tolist()))

    @property
    def p(self) -> int:
        """Number of variables of the law."""
        return len(self.mean)

    def check_columns(self, lower: FloatArray, upper: FloatArray) -> None:
        """The law fits data whose columns have the public bounds ``lower``/``upper``:
        one variable per column, and every conditional mean and variance of the law is
        finite for values within the bounds.

        Write ``cov = D R D`` (``D`` the standard deviations, ``R`` the correlation
        matrix, condition number ``kappa``). Every regression coefficient vector has norm
        ``<= c = kappa max(D) / min(D)`` (``||R_SS^-1|| <= 1/lambda_min(R)`` by
        interlacing), so the conditional means are bounded by
        ``|mean|_inf + c (|mean|_2 + sqrt(p) B)`` (``B`` the largest bound in absolute
        value) and the variance's correction by ``max(D)^2 kappa``.
        """
        lo = np.asarray(lower, dtype=np.float64)
        hi = np.asarray(upper, dtype=np.float64)
        if lo.shape != (self.p,) or hi.shape != (self.p,):
            raise CITestError(
                "model-X law (model= / --model-x): the law must have one variable per "
                "column of the data, in the schema's column order (rule: mean has one "
                "entry and cov one row per schema column); its size differs from the "
                "schema's")
        mu = np.asarray(self.mean, dtype=np.float64)
        C = np.asarray(self.cov, dtype=np.float64)
        with np.errstate(all="ignore"):
            sd = np.sqrt(np.diag(C))
            eig = np.linalg.eigvalsh(C / sd[:, None] / sd[None, :])
            kappa = float(eig[-1]) / float(eig[0]) if float(eig[0]) > 0 else math.inf
            coef = kappa * float(np.max(sd)) / float(np.min(sd))
            bound = float(max(np.max(np.abs(lo)), np.max(np.abs(hi))))
            top = float(np.max(np.abs(mu)))  # |mean|_2 <= sqrt(p) |mean|_inf
            worst = (top + float(np.max(sd)) ** 2 * kappa + bound
                     + coef * math.sqrt(self.p) * (top + bound))
        if not (math.isfinite(worst) and worst < _MODEL_X_LIMIT):
            raise CITestError(
                "model-X law (model= / --model-x): its conditional means or variances "
                "would overflow float64 on values within the schema's bounds (rule: the "
                "law's entries, its condition number and the bounds must keep every "
                "conditional below 1e300); rescale the law or the bounds")

    def sampler(self, x: int, S: tuple[int, ...]) -> GaussianLinearSampler:
        mu = np.asarray(self.mean)
        C = np.asarray(self.cov)
        s = list(S)
        if not s:
            return GaussianLinearSampler((), float(mu[x]), math.sqrt(C[x, x]))
        coef = np.linalg.solve(C[np.ix_(s, s)], C[s, x])
        var = float(C[x, x] - C[x, s] @ coef)
        return GaussianLinearSampler(
            tuple(coef.tolist()), float(mu[x] - coef @ mu[s]), math.sqrt(max(var, 1e-300))
        )


#: Default public share of the run's epsilon spent on the model-X law's release.
DEFAULT_LAW_SHARE = 0.5


@dataclass(frozen=True)
class PrivateModelX:
    """The model-X law is released privately by the run (``--model-x private``): a
    public ``share`` in ``(0, 1)`` of the run's epsilon goes to one Laplace release of the
    bounded moment vector, the rest to the tests."""

    share: float = DEFAULT_LAW_SHARE

    def __post_init__(self) -> None:
        s = self.share
        if isinstance(s, bool) or not isinstance(s, int | float) or not (
                math.isfinite(s) and 0.0 < s < 1.0):
            raise CITestError(f"model_x_share: expected a number strictly between 0 and 1, "
                              f"got {s!r}")
        object.__setattr__(self, "share", float(s))


# ---------------------------------------------------------------------------------
# Parameters and exact statistics
# ---------------------------------------------------------------------------------


def default_resamples(alpha: float) -> int:
    """``m = ceil(1/alpha) - 1``: the smallest ``m`` whose p-value grid reaches alpha."""
    a = check_alpha(alpha)
    return max(1, math.ceil(1.0 / a - 1e-9) - 1)


def check_resamples(m: object, alpha: float) -> int:
    """``m`` must be an int with ``1 / (m + 1) <= alpha`` (else the test can never reject)."""
    if isinstance(m, bool) or not isinstance(m, int | np.integer):
        raise CITestError(f"m (number of resamples) must be an int, got {m!r}")
    mi = int(m)
    if mi < 1 or 1.0 / (mi + 1) > alpha * (1.0 + 1e-12):
        raise CITestError(
            f"m={mi} resamples is too small for alpha={alpha}: the smallest p-value is "
            f"1/(m+1) = {1.0 / (max(mi, 0) + 1):.4g} > alpha; use m >= "
            f"{default_resamples(alpha)}"
        )
    return mi


def check_residual_bound(b: object) -> float:
    return check_positive("residual_bound", b)


def crt_sensitivity_paper(residual_bound: float, lam: float, n: int) -> float:
    """The published bound ``2 B_r (1 + lam^-1/2)(1 + 1/lam) / n`` (Kalemaj et al.,
    Lemma 4.5; PRIVACY.md section 5)."""
    return 2.0 * residual_bound * (1.0 + 1.0 / math.sqrt(lam)) * (1.0 + 1.0 / lam) / n


def crt_sensitivity(residual_bound: float, lam: float, n: int) -> float:
    """Replace-one sensitivity of each ``T_j``:
    ``B_r a min(2 (1 + 1/lam), 2 + lam^-1/2) / n`` with ``a = 1 + lam^-1/2``
    (docs/privacy/privcrt.md, Lemma 2); never larger than the paper's bound."""
    a = 1.0 + 1.0 / math.sqrt(lam)
    return residual_bound * a * min(2.0 * (1.0 + 1.0 / lam), 2.0 + 1.0 / math.sqrt(lam)) / n


def crt_law_sensitivity(residual_bound: float, n: int) -> float:
    """Replace-one sensitivity ``2 B_r^2 / n`` of every ``T_j`` when both residuals
    are clipped to ``[-B_r, B_r]`` and computed with a public law (``y_fit="law"``):
    only the replaced row's summand changes (docs/privacy/privcrt-released-law.md,
    Lemma L2)."""
    return 2.0 * residual_bound * residual_bound / n


def crt_statistics(
    x_residuals: FloatArray, y_residuals: FloatArray, residual_bound: float
) -> FloatArray:
    """``T_j = (1/n) sum_i clip(r_X^(j)_i, B_r) r_Y_i`` for rows ``j`` of ``x_residuals``
    (shape ``(m+1, n)``; row 0 is the observed X)."""
    c = np.clip(x_residuals, -residual_bound, residual_bound)
    out: FloatArray = (c @ y_residuals) / y_residuals.shape[0]
    return out


def rank_scores(queries: FloatArray, sensitivity: float) -> FloatArray:
    """``s(r) = -|q_0 - q_(r)| / (2 Delta)`` for ranks ``r = 1..m+1`` (decreasing order).

    Element ``r - 1`` of the result is the score of rank ``r``. Sensitivity 1 when
    every query has sensitivity ``Delta`` (docs/privacy/privcrt.md, Lemma 3).
    """
    q = np.asarray(queries, dtype=np.float64)
    ordered = -np.sort(-q)
    out: FloatArray = -np.abs(q[0] - ordered) / (2.0 * sensitivity)
    return out


def crt_pvalue(queries: FloatArray) -> float:
    """Non-private CRT p-value ``(1 + #{j >= 1: q_j >= q_0}) / (m + 1)``."""
    q = np.asarray(queries, dtype=np.float64)
    return float((1 + np.count_nonzero(q[1:] >= q[0])) / q.shape[0])


def rejection_count(alpha: float, m: int) -> int:
    """``k = floor(alpha (m + 1))`` (at least 1): the threshold release rejects when the
    noisy ``q_0`` is among the ``k`` largest of the ``m + 1`` noisy queries, which has
    probability ``k / (m + 1) <= alpha`` under the null."""
    return max(1, math.floor(alpha * (m + 1) * (1.0 + 1e-12)))


def threshold_margin(
    queries: FloatArray, k: int, step: float, noise: IntArray, ties: FloatArray
) -> float:
    """The exact margin ``f`` released by the threshold release (before ``g Y_0``).

    ``queries``: ``q_0..q_m``; ``step``: the Laplace grid's ``g`` (a power of two);
    ``noise``: the integer noise ``Y_1..Y_m`` of the resamples (the same discrete
    Laplace law as the mechanism's ``Y_0``); ``ties``: ``U_0..U_m`` in ``[0, 1)``.
    With ``a_j = q_j / g`` and ``t`` the ``k``-th largest of ``a_j + Y_j + U_j``
    (``j >= 1``), returns ``g (a_0 + U_0 - t + 1/2)``. The grid release outputs
    ``g (rint(f / g) + Y_0)``, which is ``> 0`` exactly when
    ``a_0 + U_0 + Y_0 >= t`` (up to a boundary of probability 0). For fixed ``noise``
    and ``ties`` the margin moves by at most ``2 Delta`` when every query moves by at
    most ``Delta`` (an order statistic is 1-Lipschitz in the sup norm).
    """
    q = np.asarray(queries, dtype=np.float64)
    m = q.shape[0] - 1
    if not 1 <= k <= m:
        raise CITestError(f"k={k} must be between 1 and m={m}")
    e = math.frexp(step)[1] - 1  # step = 2^e exactly
    a = np.ldexp(q, -e)
    noisy = a[1:] + np.asarray(noise, dtype=np.float64) + ties[1:]
    t = float(np.partition(noisy, m - k)[m - k])  # the k-th largest
    return math.ldexp(float(a[0]) + float(ties[0]) - t + 0.5, e)


def threshold_release(
    session: Session,
    queries: Callable[[], FloatArray],
    sensitivity: float,
    epsilon: float,
    k: int,
    rng: np.random.Generator,
    purpose: str,
) -> float:
    """PrivCRT's threshold release: ``Laplace(2 Delta_T, epsilon)`` of the margin of
    :func:`threshold_margin`, with the resamples' integer noise drawn from the
    mechanism's own grid law and the tie-breaks from ``rng`` (auxiliary randomness,
    not privacy noise). ``queries`` is called only after the session admitted and
    recorded the release. Returns the released margin; the test rejects iff it is
    ``> 0`` (probability ``k/(m+1)`` under the null; docs/privacy/privcrt.md)."""
    from accounting.mechanisms import Laplace

    mech = Laplace(sensitivity=2.0 * sensitivity, epsilon=epsilon)
    grid = mech.grid(1)

    def compute() -> float:
        q = queries()
        m = q.shape[0] - 1
        noise = discrete_laplace(rng, grid.t, grid.s, m)
        ties = rng.random(m + 1)
        return threshold_margin(q, k, grid.step, noise, ties)

    return float(session.release(mech, compute, purpose=purpose))


def _y_residuals(ys: FloatArray, factor: RidgeFactor) -> FloatArray:
    return factor.residuals(ys)


def _x_residuals(
    x_raw: FloatArray,
    z_raw: FloatArray,
    sampler: ConditionalSampler,
    m: int,
    rng: np.random.Generator,
    scale: float,
    bounds: tuple[float, float] | None = None,
) -> FloatArray:
    """Rows: observed X then ``m`` resamples, minus ``E[X|Z]``, times the public scale.
    With ``bounds`` the resamples are clipped to X's public bounds, as the observed X is
    (so that they are exchangeable with it under the null when the model-X law is the
    law of X before clipping)."""
    mu = np.asarray(sampler.conditional_mean(z_raw), dtype=np.float64)
    draws = np.asarray(sampler.sample(z_raw, m, rng), dtype=np.float64)
    n = x_raw.shape[0]
    if mu.shape != (n,) or draws.shape != (m, n):
        raise CITestError(
            f"sampler returned shapes {mu.shape} and {draws.shape}; expected ({n},) and ({m}, {n})"
        )
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(draws))):
        raise CITestError("sampler returned non-finite values")
    if bounds is not None:
        draws = np.clip(draws, bounds[0], bounds[1])
    allx = np.vstack([x_raw[None, :], draws])
    out: FloatArray = (allx - mu[None, :]) * scale
    return out


# ---------------------------------------------------------------------------------
# CI testers
# ---------------------------------------------------------------------------------

SamplerSource = (ConditionalSampler | GaussianModelX | PrivateModelX
                 | Callable[[int, tuple[int, ...]], Any])


def _resolve_sampler(model: SamplerSource, x: int, S: tuple[int, ...]) -> ConditionalSampler:
    if isinstance(model, PrivateModelX):
        raise CITestError("model-X law: the private law has not been released yet (the run "
                          "releases it before its first test; dpcg.citests.crt_law)")
    if isinstance(model, GaussianModelX):
        return model.sampler(x, S)
    if hasattr(model, "conditional_mean") and hasattr(model, "sample"):
        return model
    if callable(model):
        got = model(x, S)
        if hasattr(got, "conditional_mean") and hasattr(got, "sample"):
            return got  # type: ignore[no-any-return]
    raise CITestError(
        "model must be a ConditionalSampler, a GaussianModelX, or a callable (x, S) -> sampler"
    )


class _CRTBase:
    def __init__(
        self,
        values: object,
        bounds: object,
        model: SamplerSource,
        *,
        m: int | None,
        residual_bound: float,
        bandwidth: float,
        lam: float,
        alpha: float,
        names: Sequence[str] | None,
        generator: np.random.Generator | None,
        regression: str = "krr",
        features: int | None = None,
        feature_seed: int | None = None,
        y_fit: str = "ridge",
    ) -> None:
        if y_fit not in Y_FITS:
            raise CITestError(f"y_fit: choose one of {Y_FITS}, got {y_fit!r}")
        if y_fit == "law" and (hasattr(model, "conditional_mean") or not (
                isinstance(model, GaussianModelX | PrivateModelX) or callable(model))):
            raise CITestError("y_fit='law' needs a law of every variable (GaussianModelX, "
                              "--model-x private, or a callable (x, S) -> sampler), not "
                              "one sampler of X")
        self.y_fit = y_fit
        self.alpha = check_alpha(alpha)
        self.m = default_resamples(self.alpha) if m is None else check_resamples(m, self.alpha)
        self.residual_bound = check_residual_bound(residual_bound)
        self.krr: Ridge = make_ridge(regression, bandwidth, lam, features=features,
                                     feature_seed=feature_seed)
        self.data = ContinuousData.build(values, bounds, names)
        if isinstance(model, GaussianModelX) or hasattr(model, "check_columns"):
            # public input only (the law and the bounds): refused before any charge
            model.check_columns(self.data.lower, self.data.upper)
        self.model = model
        self.generator = generator
        self._factors = _factor_cache(self.data, self.krr)

    def _rng(self) -> np.random.Generator:
        if self.generator is None:
            raise CITestError("no generator for the model-X resamples")
        return self.generator

    def check_sampler(self, x: int, S: tuple[int, ...]) -> ConditionalSampler:
        """The query's sampler, checked on PUBLIC input only (two rows of ``Z`` at the
        bounds' midpoints, a throw-away generator): a sampler of the wrong shape or
        with non-finite output raises here, before any budget is charged, without
        reading the data or drawing from the run's generator."""
        d = self.data
        sampler = _resolve_sampler(self.model, x, S)
        idx = list(S)
        mid = 0.5 * (d.lower[idx] + d.upper[idx])
        z_pub = np.tile(mid, (2, 1))
        mu = np.asarray(sampler.conditional_mean(z_pub), dtype=np.float64)
        draws = np.asarray(sampler.sample(z_pub, self.m, np.random.default_rng(0)),
                           dtype=np.float64)
        if mu.shape != (2,) or draws.shape != (self.m, 2):
            raise CITestError(
                f"sampler returned shapes {mu.shape} and {draws.shape} for 2 rows; expected "
                f"(2,) and ({self.m}, 2)")
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(draws))):
            raise CITestError("sampler returned non-finite values (on public input)")
        return sampler

    def queries(self, x: int, y: int, S: tuple[int, ...],
                sampler: ConditionalSampler | None = None) -> FloatArray:
        """``|T_0|, ..., |T_m|`` for the query (draws the model-X resamples)."""
        d = self.data
        if sampler is None:
            sampler = _resolve_sampler(self.model, x, S)
        z_raw = np.clip(d.values[list(S)], d.lower[list(S), None], d.upper[list(S), None]).T
        x_raw = np.clip(d.values[x], d.lower[x], d.upper[x])
        scale = 2.0 / (d.upper[x] - d.lower[x])
        rx = _x_residuals(x_raw, z_raw, sampler, self.m, self._rng(), scale,
                          (float(d.lower[x]), float(d.upper[x])))
        if self.y_fit == "law":
            # Y's residual from the same public law, clipped: row i's summand depends on
            # row i only (docs/privacy/privcrt-released-law.md, Lemma L2)
            y_raw = np.clip(d.values[y], d.lower[y], d.upper[y])
            mu_y = np.asarray(_resolve_sampler(self.model, y, S).conditional_mean(z_raw),
                              dtype=np.float64)
            if mu_y.shape != y_raw.shape or not np.all(np.isfinite(mu_y)):
                raise CITestError("sampler returned a conditional mean of Y of the wrong "
                                  "shape or with non-finite values")
            ry = np.clip((y_raw - mu_y) * (2.0 / (d.upper[y] - d.lower[y])),
                         -self.residual_bound, self.residual_bound)
        else:
            ry = _y_residuals(d.scaled[y], self._factors.get(S))
        out: FloatArray = np.abs(crt_statistics(rx, ry, self.residual_bound))
        return out


class CRTTest(_CRTBase):
    """Non-private model-X CRT with the PrivCRT statistic (for comparison)."""

    def __init__(
        self,
        values: object,
        bounds: object,
        model: SamplerSource,
        *,
        generator: np.random.Generator,
        m: int | None = None,
        residual_bound: float = DEFAULT_RESIDUAL_BOUND,
        bandwidth: float = DEFAULT_BANDWIDTH,
        lam: float = DEFAULT_CRT_LAMBDA,
        alpha: float = 0.05,
        names: Sequence[str] | None = None,
        regression: str = "krr",
        features: int | None = None,
        feature_seed: int | None = None,
        y_fit: str = "ridge",
    ) -> None:
        super().__init__(
            values, bounds, model, m=m, residual_bound=residual_bound, bandwidth=bandwidth,
            lam=lam, alpha=alpha, names=names, generator=generator, regression=regression,
            features=features, feature_seed=feature_seed, y_fit=y_fit,
        )

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        q = self.queries(xi, yi, Si)
        p = crt_pvalue(q)
        return CIResult(p > self.alpha, float(q[0]), p)


class PrivCRTTest(_CRTBase):
    """PrivCRT: one release per test (``epsilon`` per test).

    ``release="threshold"`` (default): one ``Laplace(2 Delta_T, epsilon)`` release of the
    margin of :func:`threshold_margin`; the test rejects when it is positive, which under
    the null has probability ``k/(m+1)`` exactly (``k = floor(alpha (m+1))``); the
    result's statistic is the released margin, its p-value ``k/(m+1)`` on rejection and
    1 otherwise (a valid p-value: ``P(p <= u) <= u`` for every ``u``).
    ``release="rank"``: Kalemaj et al.'s Report-Noisy-Max release of the rank of
    ``|T_0|`` among ``|T_0|..|T_m|``; p-value ``r_hat / (m+1)``, decision ``p > alpha``.

    The resampling generator (model-X draws, the resamples' noise and the tie-breaks,
    none of them privacy noise) defaults to ``session.auxiliary_generator()``.
    """

    def __init__(
        self,
        values: object,
        bounds: object,
        session: Session | None,
        epsilon: float,
        model: SamplerSource,
        *,
        m: int | None = None,
        residual_bound: float = DEFAULT_RESIDUAL_BOUND,
        bandwidth: float = DEFAULT_BANDWIDTH,
        lam: float = DEFAULT_CRT_LAMBDA,
        alpha: float = 0.05,
        names: Sequence[str] | None = None,
        generator: np.random.Generator | None = None,
        regression: str = "krr",
        features: int | None = None,
        feature_seed: int | None = None,
        release: str = "threshold",
        y_fit: str = "ridge",
    ) -> None:
        if release not in RELEASES:
            raise CITestError(f"release: choose one of {RELEASES}, got {release!r}")
        super().__init__(
            values, bounds, model, m=m, residual_bound=residual_bound, bandwidth=bandwidth,
            lam=lam, alpha=alpha, names=names, generator=generator, regression=regression,
            features=features, feature_seed=feature_seed, y_fit=y_fit,
        )
        self.epsilon = check_epsilon(epsilon)
        self.session = session
        self.release = release
        #: the threshold release rejects when the noisy q_0 is among the k largest
        self.k = rejection_count(self.alpha, self.m)

    def _rng(self) -> np.random.Generator:
        if self.generator is None:
            self.generator = require_session(self.session).auxiliary_generator()
        return self.generator

    @property
    def sensitivity(self) -> float:
        if self.y_fit == "law":
            return crt_law_sensitivity(self.residual_bound, self.data.n)
        return crt_sensitivity(self.residual_bound, self.krr.lam, self.data.n)

    def mechanism(self) -> Any:
        from accounting.mechanisms import Laplace, ReportNoisyMax

        if self.release == "threshold":
            return Laplace(sensitivity=2.0 * self.sensitivity, epsilon=self.epsilon)
        return ReportNoisyMax(sensitivity=1.0, epsilon=self.epsilon, noise="exponential")

    def preflight(self) -> None:
        """Build a test's mechanism (its parameters are checked when it is built), before
        anything is reserved or admitted."""
        self.mechanism()

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        mech = self.mechanism()
        delta_t = self.sensitivity
        names = self.data.names

        # Charge before compute: the sampler is checked on public input only (a broken
        # sampler raises without spending budget), and the data are read -- the KRR fit,
        # the model-X resamples, the statistics -- only inside ``compute``, which the
        # session calls after the filter admitted and the ledger recorded the release.
        # (A sampler that fails only on the real data then fails after the charge: the
        # budget is spent, which is the safe side.)
        sampler = self.check_sampler(xi, Si)
        settings = (f"(m={self.m}, B_r={self.residual_bound}, lam={self.krr.lam}, "
                    f"bandwidth={self.krr.bandwidth}{_ridge_suffix(self.krr)}")
        if self.y_fit == "law":
            settings = f"(m={self.m}, B_r={self.residual_bound}, Y fitted by the law"
        query = (f"{names[xi]} _||_ {names[yi]} | "
                 f"{{{', '.join(names[s] for s in Si)}}}")

        if self.release == "rank":
            def compute_rank() -> FloatArray:
                return rank_scores(self.queries(xi, yi, Si, sampler), delta_t)

            index = int(require_session(self.session).release(
                mech, compute_rank, purpose=f"PrivCRT rank {query} {settings})"))
            p = (index + 1) / (self.m + 1)
            return CIResult(p > self.alpha, None, p)

        margin = threshold_release(
            require_session(self.session), lambda: self.queries(xi, yi, Si, sampler),
            delta_t, self.epsilon, self.k, self._rng(),
            purpose=f"PrivCRT threshold {query} {settings}, k={self.k})")
        reject = margin > 0.0
        p = self.k / (self.m + 1) if reject else 1.0
        return CIResult(not reject, margin, p)
