"""The G-test on a noisy contingency table, with the noise in its null distribution.

Input: ``T[s, i, j]``, a released table of counts of ``(x, y)`` per configuration ``s``
of ``S`` (every configuration), each cell the true count plus independent zero-mean
noise of variance ``v`` (the Gaussian mechanism's ``sigma^2``, times the number of
released cells summed into it). Everything here is post-processing of released values
and public quantities (``v``, the shape, ``alpha``, the number of draws, a public seed).

1. **Projection** (post-processing): negative counts are set to 0 (``T+ = max(T, 0)``).
2. **Sparse strata dropped**: a stratum whose projected total is below
   :data:`MIN_STRATUM_SD` noise sds of its total (``sqrt(v c_x c_y)``) holds no usable
   signal, only noise; its terms are left out (the same rule is applied to every
   simulated table below, so the null sees the same selection).
3. **Statistic**: with ``v = 0``, the ordinary ``G^2 = 2 sum N ln(N N_s / (N_sx N_sy))``
   (entropy form, ``0 ln 0 = 0``). With ``v > 0``, the noise-weighted Pearson statistic
   ``sum (T+ - E)^2 / (E + v)`` on the kept strata (``E = T+_sx T+_sy / T+_s``): G^2 is
   ``sum (N - E)^2 / E`` to second order, and dividing by the cell's total variance
   ``E + v`` (sampling plus noise) instead of ``E`` stops the noise of sparse cells
   (``v / E`` large) from swamping the statistic; as ``v -> 0`` it tends to G^2's
   second-order form, so the test keeps G^2's ceiling.
4. **Null** (parametric bootstrap): expected counts ``E = T+_sx T+_sy / T+_s`` of the
   fitted conditional-independence model; ``B`` tables ``Poisson(E) + N(0, v)`` are
   drawn, projected and reduced exactly as in 1-3, and the p-value is
   ``(1 + #{G^2_b >= G^2}) / (B + 1)``. The noise's variance is thus in the null, so
   the ``G^2`` of pure noise does not read as dependence (Gaboardi et al. 2016 and
   Rogers and Kifer 2017 put the noise into the chi-square null likewise, by moment
   matching or Monte Carlo; this is the Monte-Carlo form).

The draws of step 4 are not privacy noise (they are a function of released values and
public quantities, from a public seed; allowlisted in ``tests/test_layering.py``).
Type-I error on null data is checked by ``tests/citests/test_noisy_g2.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import xlogy

from dpcg.errors import CITestError

__all__ = ["DEFAULT_DRAWS", "MIN_STRATUM_SD", "NoisyG2Result", "g2_statistic",
           "noisy_g2_test"]

#: Monte-Carlo draws of the null (public; ``(1 + k)/(B + 1)`` p-values).
DEFAULT_DRAWS = 199
#: A stratum is kept when its projected total is at least this many noise sds.
MIN_STRATUM_SD = 2.0


@dataclass(frozen=True)
class NoisyG2Result:
    """``statistic``: the statistic of step 3 on the projected table; ``pvalue`` from
    the noisy null; ``independent``: ``pvalue > alpha``; ``strata``: strata kept."""

    statistic: float
    pvalue: float
    independent: bool
    strata: int


def _kept(tables: NDArray[np.float64], variance: float) -> NDArray[np.bool_]:
    """Strata (last-but-two axis) whose projected total is at least
    :data:`MIN_STRATUM_SD` sds of the noise of a stratum total."""
    cx, cy = tables.shape[-2], tables.shape[-1]
    limit = MIN_STRATUM_SD * math.sqrt(variance * cx * cy)
    totals = tables.sum(axis=(-2, -1))
    return np.asarray(totals > max(limit, 0.0))


def g2_statistic(tables: NDArray[np.float64], variance: float = 0.0) -> NDArray[np.float64]:
    """The statistic of each ``(..., strata, c_x, c_y)`` table of non-negative counts,
    over the strata kept by the rule of step 2 (all strata when ``variance`` is 0):
    G^2 when ``variance`` is 0, else the noise-weighted Pearson statistic
    ``sum (N - E)^2 / (E + variance)`` (module docstring, step 3)."""
    t = np.asarray(tables, dtype=np.float64)
    ns = t.sum(axis=(-2, -1))
    keep = _kept(t, variance)
    if variance <= 0.0:
        h = (xlogy(t, t).sum(axis=(-2, -1)) + xlogy(ns, ns)
             - xlogy(t.sum(axis=-1), t.sum(axis=-1)).sum(axis=-1)
             - xlogy(t.sum(axis=-2), t.sum(axis=-2)).sum(axis=-1))
        return np.asarray(2.0 * np.where(keep, np.maximum(h, 0.0), 0.0).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(ns[..., None, None] > 0, t.sum(axis=-1, keepdims=True)
                     * t.sum(axis=-2, keepdims=True) / ns[..., None, None], 0.0)
    terms = ((t - e) ** 2 / (e + variance)).sum(axis=(-2, -1))
    return np.asarray(np.where(keep, terms, 0.0).sum(axis=-1))


def noisy_g2_test(noisy: NDArray[np.float64], variance: float, alpha: float, *,
                  draws: int = DEFAULT_DRAWS,
                  seed: tuple[int, ...] = (0,)) -> NoisyG2Result:
    """The G-test of ``x _||_ y | S`` on one released ``(strata, c_x, c_y)`` table whose
    cells carry independent noise of variance ``variance`` (module docstring)."""
    t = np.asarray(noisy, dtype=np.float64)
    if t.ndim != 3 or t.size == 0 or not np.all(np.isfinite(t)):
        raise CITestError("noisy table: expected a finite (strata, c_x, c_y) array")
    if not (math.isfinite(variance) and variance >= 0.0):
        raise CITestError("variance: expected a finite number >= 0")
    if not 0.0 < alpha < 1.0:
        raise CITestError("alpha: expected a number in (0, 1)")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise CITestError("draws: expected a positive integer")
    proj = np.maximum(t, 0.0)
    keep = _kept(proj, variance)
    stat = float(g2_statistic(proj, variance))
    if not keep.any() or stat <= 0.0:
        return NoisyG2Result(stat, 1.0, True, int(keep.sum()))
    ns = proj.sum(axis=(1, 2), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(ns > 0, proj.sum(axis=2, keepdims=True)
                            * proj.sum(axis=1, keepdims=True) / ns, 0.0)
    rng = np.random.default_rng([*seed])
    sim = rng.poisson(expected, size=(draws, *t.shape)).astype(np.float64)
    if variance > 0.0:
        sim += rng.normal(0.0, math.sqrt(variance), size=sim.shape)
        np.maximum(sim, 0.0, out=sim)
    null = g2_statistic(sim, variance)
    pvalue = float((1 + np.count_nonzero(null >= stat)) / (draws + 1))
    return NoisyG2Result(stat, pvalue, pvalue > alpha, int(keep.sum()))
