"""PrivCRT with a privately released model-X law (``--model-x private``; issue 54).

The model-X CRT needs the law of X given Z. When no public law exists, the run spends a
public share of its budget on one release of the bounded moment vector of the data and
uses the Gaussian law derived from it (post-processing) as the public model-X law of
every later PrivCRT test:

1. **Release** (:func:`release_model_x`): the Pearson-route moment vector of
   :mod:`dpcg.stats.suffstat` (every column clipped to its declared bounds and mapped to
   ``[-1, 1]``; the means and the upper triangle of the second moments, ``q (q + 3) / 2``
   entries for ``q`` columns) through the ``Laplace`` mechanism of :mod:`accounting`,
   L1 sensitivity :func:`law_sensitivity` ``= q (q + 2) / n`` under replace-one, at
   ``epsilon_law = share * epsilon`` (share public, default 0.5; pure epsilon-DP, so
   private-ci-pc stays under the basic filter with ``delta = 0``).
2. **Law** (:func:`law_from_release`, post-processing): means clipped to ``[-1, 1]``,
   second moments clipped to their feasible range, covariance ``M - mu mu^T``,
   eigenvalues floored at the public noise standard deviation of one entry (so every
   conditional variance is at least that floor), mapped back to the raw scale by the
   public affine map of the bounds: a :class:`~dpcg.citests.crt.GaussianModelX`.
3. **Tests**: PrivCRT with that law (the release is a public input of the tests) and the
   rest of the budget, composed by the basic filter. By default Y is residualised by the
   same law (``y_fit="law"``, ``Delta_T = 2 B_r^2 / n``) and every resample is drawn
   from the law of the released vector re-noised at the release's public scale
   (:class:`ReleasedGaussianLaw`, a parametric bootstrap of the release's noise).

The privacy guarantee is exact (docs/privacy/privcrt-released-law.md). The CRT's level
is NOT: it is exact only under the true law of X given Z, and the released law is an
estimate (from the same data, with noise). Measured type-I error:
``dpcg bench real --crt-fit`` (docs/benchmarks/real-crt-fit.md): in the band from
``n = 10^4`` at eps 1 when the conditional means are linear, far above it when they are
not.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from accounting.noise import float_laplace
from dpcg.citests.crt import (
    DEFAULT_LAW_SHARE,
    GaussianLinearSampler,
    GaussianModelX,
    PrivateModelX,
)
from dpcg.citests.gcm import ContinuousData
from dpcg.errors import CITestError
from dpcg.stats.suffstat import moment_matrix, moment_vector, upper_size

if TYPE_CHECKING:
    from accounting.mechanisms import Laplace
    from accounting.session import Session

FloatArray = NDArray[np.float64]

__all__ = ["DEFAULT_LAW_SHARE", "PrivateModelX", "ReleasedGaussianLaw", "law_from_release",
           "law_mechanism",
           "law_sensitivity", "release_model_x", "split_law_budget"]

#: Smallest eigenvalue floor of the released covariance (on the ``[-1, 1]`` scale).
MIN_FLOOR = 1e-9


def law_sensitivity(n: int, q: int) -> float:
    """Replace-one L1 bound ``q (q + 2) / n`` of the Pearson-route moment vector
    (means included) of ``q`` columns in ``[-1, 1]`` and ``n`` rows: each of the ``q``
    means moves by at most ``2/n``, each of the ``q`` squares by ``1/n`` and each of the
    ``q (q - 1) / 2`` cross moments by ``2/n`` (docs/privacy/privcrt-released-law.md,
    Lemma L1)."""
    for name, v, low in (("n", n, 1), ("q", q, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or int(v) < low:
            raise CITestError(f"{name}: expected an integer >= {low}, got {v!r}")
    return float(q) * (float(q) + 2.0) / float(n)


def law_mechanism(n: int, q: int, epsilon: float) -> Laplace:
    """The law's release: ``Laplace(law_sensitivity(n, q), epsilon)`` (its parameters
    are checked when it is built, before anything is charged)."""
    from accounting.errors import InvalidParameterError
    from accounting.mechanisms import Laplace

    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not (
            math.isfinite(epsilon) and epsilon > 0):
        raise CITestError(f"model-X law: epsilon must be a finite number > 0, got {epsilon!r}")
    try:
        return Laplace(sensitivity=law_sensitivity(n, q), epsilon=float(epsilon))
    except InvalidParameterError as exc:
        raise CITestError(f"model-X law: its release cannot be built ({exc})") from None


def split_law_budget(epsilon: float, share: float) -> tuple[float, float]:
    """``(epsilon_law, epsilon_rest)``: ``epsilon_law`` the largest float at most
    ``share * epsilon`` (exact rationals), ``epsilon_rest`` the largest float with
    ``epsilon_law + epsilon_rest <= epsilon`` exactly."""
    from fractions import Fraction

    from accounting.costs import round_down

    total = Fraction(epsilon)
    law = round_down(total * Fraction(share))
    rest = round_down(total - Fraction(law))
    if not (law > 0 and rest > 0):
        raise CITestError(f"model_x_share: epsilon={epsilon!r} x share={share!r} leaves "
                          "no budget for the law or for the tests")
    return law, rest


def law_from_release(released: FloatArray, lower: FloatArray, upper: FloatArray,
                     floor: float) -> GaussianModelX:
    """The Gaussian model-X law of a released (noisy) moment vector: post-processing.

    ``released`` is the noisy :func:`~dpcg.stats.suffstat.moment_vector` (means
    included) of the columns scaled to ``[-1, 1]`` by the public bounds ``lower`` /
    ``upper``; ``floor`` the public eigenvalue floor on that scale. The means are
    clipped to ``[-1, 1]``, the squares to ``[0, 1]`` and the cross moments to
    ``[-1, 1]`` (the ranges of the exact values), the covariance ``M - mu mu^T`` is
    symmetrised and its eigenvalues raised to at least ``floor`` (every conditional
    variance is then at least ``floor``), and the law is mapped to the raw scale
    ``x = mid + half * u``."""
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    q = lo.shape[0]
    v = np.asarray(released, dtype=np.float64)
    if v.shape != (upper_size(q, True),) or not np.all(np.isfinite(v)):
        raise CITestError("model-X law: the released vector has the wrong size or a "
                          "non-finite entry")
    if not (math.isfinite(floor) and floor > 0):
        raise CITestError(f"model-X law: floor must be > 0, got {floor!r}")
    g = moment_matrix(v, q, True)
    mu = np.clip(g[0, 1:], -1.0, 1.0)
    second = np.clip(g[1:, 1:], -1.0, 1.0)
    second[np.diag_indices(q)] = np.clip(np.diag(second), 0.0, 1.0)
    cov = second - np.outer(mu, mu)
    cov = 0.5 * (cov + cov.T)
    w, vecs = np.linalg.eigh(cov)
    w = np.maximum(w, max(float(floor), MIN_FLOOR))
    cov = (vecs * w) @ vecs.T
    cov = 0.5 * (cov + cov.T)
    half = 0.5 * (hi - lo)
    mid = 0.5 * (hi + lo)
    return GaussianModelX.from_arrays(mid + half * mu, cov * np.outer(half, half))


class ReleasedGaussianLaw:
    """The model-X law of a released moment vector, aware of the release's noise.

    ``point`` is :func:`law_from_release` of the released vector: its conditional means
    residualise X (and Y with ``y_fit="law"``). Its resamples (``noise_aware=True``, the
    default) are drawn each from the law of a *re-noised* vector, the released vector
    plus fresh Laplace noise of the release's public scale (a parametric bootstrap of the
    release's noise): under the null the observed residual carries the error of the
    released conditional mean, and the resamples then carry an error of the same law,
    which halves the excess type-I error on the Gaussian null
    (docs/privacy/privcrt-released-law.md). The re-noising is auxiliary randomness (the
    session's resampling generator), not privacy noise; for fixed draws every resample is
    a function of its own row's ``z`` and public quantities, so the statistic's
    sensitivity (Lemma L2) is unchanged. Called as ``law(x, S)`` it gives the sampler of
    ``X | Z_S`` (the callable form of a model-X law accepted by :class:`PrivCRTTest`)."""

    def __init__(self, released: FloatArray, lower: FloatArray, upper: FloatArray,
                 floor: float, scale: float, *, noise_aware: bool = True) -> None:
        self.released = np.asarray(released, dtype=np.float64)
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.floor = float(floor)
        if not (math.isfinite(scale) and scale > 0):
            raise CITestError(f"model-X law: noise scale must be > 0, got {scale!r}")
        self.scale = float(scale)
        self.noise_aware = bool(noise_aware)
        self.point = law_from_release(self.released, self.lower, self.upper, self.floor)

    def check_columns(self, lower: FloatArray, upper: FloatArray) -> None:
        self.point.check_columns(lower, upper)

    def __call__(self, x: int, S: tuple[int, ...]) -> _NoiseAwareSampler | GaussianLinearSampler:
        base = self.point.sampler(x, S)
        if not self.noise_aware:
            return base
        return _NoiseAwareSampler(self, x, S, base)


class _NoiseAwareSampler:
    """``X | Z_S``: conditional mean of the released law; each resample from the law of
    the released vector re-noised with the release's public Laplace scale."""

    def __init__(self, law: ReleasedGaussianLaw, x: int, S: tuple[int, ...],
                 base: GaussianLinearSampler) -> None:
        self.law, self.x, self.S, self.base = law, x, S, base

    def conditional_mean(self, z: FloatArray) -> FloatArray:
        return self.base.conditional_mean(z)

    def sample(self, z: FloatArray, m: int, rng: np.random.Generator) -> FloatArray:
        L = self.law
        za = np.asarray(z, dtype=np.float64)
        out = np.empty((m, za.shape[0]), dtype=np.float64)
        noise = float_laplace(rng, L.scale, (m, L.released.shape[0]))
        for j in range(m):  # m public resamples (19 by default), one q x q law each
            law_j = law_from_release(L.released + noise[j], L.lower, L.upper, L.floor)
            out[j] = law_j.sampler(self.x, self.S).sample(za, 1, rng)[0]
        return out


def law_floor(mechanism: Laplace) -> float:
    """The public eigenvalue floor: the standard deviation ``sqrt(2) Delta / eps`` of the
    release's noise on one entry (at most 1, the largest variance on ``[-1, 1]``)."""
    return min(1.0, max(math.sqrt(2.0) * mechanism.sensitivity / mechanism.epsilon,
                        MIN_FLOOR))


def release_model_x(session: Session, data: ContinuousData, mechanism: Laplace,
                    purpose: str = "PrivCRT model-X law", *, noise_aware: bool = True
                    ) -> ReleasedGaussianLaw:
    """Release the bounded moment vector of ``data`` with ``mechanism`` (admitted by the
    session's filter and written to its ledger before the data is read) and return the
    Gaussian law derived from it (:class:`ReleasedGaussianLaw`; ``noise_aware=False``:
    resamples from the point law :func:`law_from_release` only)."""
    expected = law_sensitivity(data.n, data.p)
    if mechanism.sensitivity < expected:
        raise CITestError("model-X law: the mechanism's sensitivity is below the moment "
                          "vector's bound")
    released = session.release(
        mechanism, lambda: moment_vector(data.scaled.T, True),
        purpose=f"{purpose}: bounded moment vector ({upper_size(data.p, True)} entries)")
    law = ReleasedGaussianLaw(np.asarray(released, dtype=np.float64), data.lower,
                              data.upper, law_floor(mechanism),
                              mechanism.sensitivity / mechanism.epsilon,
                              noise_aware=noise_aware)
    law.check_columns(data.lower, data.upper)
    return law
