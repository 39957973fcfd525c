"""Exact (numerically integrated) output distributions of discrete-output mechanisms.

These feed the white-box check :func:`audits.empirical.exact_epsilon`:

* :func:`svt_pmf`: AboveThreshold with cutoff 1 over a fixed answer sequence (index of
  the first positive, or "none"); threshold noise Laplace or Gaussian, query noise
  Laplace (or none);
* :func:`rnm_pmf`: report-noisy-max with exponential, Laplace or Gumbel noise;
* :func:`exponential_mechanism_pmf`: the exponential mechanism (a softmax);
* :func:`top_k_pmf`: one-shot Gumbel top-``k`` (ordered output, or the selected set),
  as ``k`` rounds of peeling with the exponential mechanism.

Integrals are computed piecewise with Gauss-Legendre quadrature between the kinks of
the integrand (the points where a noise density or cdf changes formula), so they are
accurate to ~1e-12 relative for these piecewise-smooth integrands.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Vector = Sequence[float] | NDArray[Any]

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)


def _quadrature_grid(breaks: Sequence[float], scale: float, tail: float = 60.0,
                     pieces_per_scale: int = 2) -> tuple[FloatArray, FloatArray]:
    """Nodes and weights covering ``[min(breaks) - tail*scale, max(breaks) + tail*scale]``
    with segment ends at every break and at most ``scale / pieces_per_scale`` long."""
    b = np.unique(np.asarray(breaks, dtype=np.float64))
    lo = float(b[0]) - tail * scale
    hi = float(b[-1]) + tail * scale
    step = scale / pieces_per_scale
    ends = np.unique(np.concatenate([b, np.arange(lo, hi + step, step)]))
    a, c = ends[:-1], ends[1:]
    half = 0.5 * (c - a)
    mid = 0.5 * (c + a)
    x = (mid[:, None] + half[:, None] * _NODES[None, :]).reshape(-1)
    w = (half[:, None] * _WEIGHTS[None, :]).reshape(-1)
    return x, w


def laplace_cdf(x: FloatArray, b: float) -> FloatArray:
    xa = np.asarray(x, dtype=np.float64)
    return np.asarray(
        np.where(xa < 0, 0.5 * np.exp(np.minimum(xa, 0.0) / b),
                 1.0 - 0.5 * np.exp(-np.maximum(xa, 0.0) / b)),
        dtype=np.float64,
    )


def laplace_pdf(x: FloatArray, b: float) -> FloatArray:
    return np.asarray(np.exp(-np.abs(x) / b) / (2.0 * b), dtype=np.float64)


def svt_pmf(
    answers: Vector,
    threshold: float,
    threshold_scale: float,
    query_scale: float,
    *,
    threshold_noise: str = "laplace",
) -> FloatArray:
    """pmf of AboveThreshold (cutoff 1): entry ``j < k`` is P(first positive at ``j``),
    entry ``k`` is P(no positive). Query ``i`` is positive when
    ``q_i + nu_i >= T + rho``; ``rho ~ Lap(threshold_scale)`` (or
    ``N(0, threshold_scale^2)``), ``nu_i ~ Lap(query_scale)`` (``query_scale == 0``:
    no query noise)."""
    q = np.asarray(answers, dtype=np.float64)
    k = q.size
    breaks = [0.0, *(q - threshold).tolist()]
    fine = threshold_scale if query_scale <= 0 else min(threshold_scale, query_scale)
    coarse = max(threshold_scale, query_scale)
    rho, w = _quadrature_grid(breaks, fine, tail=60.0 * coarse / fine)
    if threshold_noise == "laplace":
        dens = laplace_pdf(rho, threshold_scale)
    elif threshold_noise == "gaussian":
        dens = np.exp(-0.5 * (rho / threshold_scale) ** 2) / (
            threshold_scale * np.sqrt(2.0 * np.pi)
        )
    else:
        raise ValueError(f"unknown threshold noise {threshold_noise!r}")
    x = threshold + rho[:, None] - q[None, :]  # query i negative iff nu_i < x_i
    F = laplace_cdf(x, query_scale) if query_scale > 0 else (x > 0).astype(np.float64)
    S = 1.0 - F
    with np.errstate(divide="ignore"):
        logF = np.log(F)
    cum = np.concatenate([np.zeros((rho.size, 1)), np.cumsum(logF, axis=1)], axis=1)
    below = np.exp(cum)
    pos = below[:, :k] * S
    out = np.empty(k + 1)
    out[:k] = (pos * (dens * w)[:, None]).sum(axis=0)
    out[k] = float(np.sum(below[:, k] * dens * w))
    return out


def exponential_mechanism_pmf(utilities: Vector, sensitivity: float,
                              epsilon: float) -> FloatArray:
    """P(r) proportional to ``exp(eps u_r / (2 Delta))``."""
    u = np.asarray(utilities, dtype=np.float64) * epsilon / (2.0 * sensitivity)
    u -= u.max()
    p = np.exp(u)
    return np.asarray(p / p.sum(), dtype=np.float64)


def top_k_outcomes(n: int, k: int, *, ordered: bool = True) -> list[tuple[int, ...]]:
    """The outcomes :func:`top_k_pmf` enumerates, in its order: ordered ``k``-tuples of
    distinct indices in ``range(n)`` (lexicographic), or sorted ``k``-subsets."""
    k = min(k, n)
    if ordered:
        return list(itertools.permutations(range(n), k))
    return list(itertools.combinations(range(n), k))


def top_k_pmf(utilities: Vector, sensitivity: float, epsilon: float, k: int, *,
              ordered: bool = True) -> FloatArray:
    """Exact law of one-shot Gumbel top-``k`` (the ``k`` largest
    ``eps u_r/(2 Delta) + Gumbel(1)`` in decreasing order), over
    :func:`top_k_outcomes`.

    Computed from the peeling form (Durfee & Rogers 2019, Lemma 4.2;
    ``docs/privacy/top-k.md``): ``P(i_1, ..., i_k) = prod_j w_{i_j} / sum_{r in R_j} w_r``
    with ``w_r = exp(eps u_r/(2 Delta))`` and ``R_j`` the indices not among
    ``i_1, ..., i_{j-1}``. With
    ``ordered=False`` the probability of each selected set is the sum over its ``k!``
    orders."""
    u = np.asarray(utilities, dtype=np.float64) * epsilon / (2.0 * sensitivity)
    w = np.exp(u - u.max())
    n = u.size
    probs: dict[tuple[int, ...], float] = {}
    for seq in top_k_outcomes(n, k, ordered=True):
        p = 1.0
        rest = np.ones(n, dtype=bool)
        for i in seq:  # the remaining mass is summed afresh: no cancellation
            p *= float(w[i]) / float(w[rest].sum())
            rest[i] = False
        probs[seq] = p
    if ordered:
        return np.asarray([probs[s] for s in top_k_outcomes(n, k)], dtype=np.float64)
    sets: dict[tuple[int, ...], float] = {}
    for seq, p in probs.items():
        key = tuple(sorted(seq))
        sets[key] = sets.get(key, 0.0) + p
    return np.asarray([sets[s] for s in top_k_outcomes(n, k, ordered=False)],
                      dtype=np.float64)


def rnm_pmf(scores: Vector, scale: float, noise: str) -> FloatArray:
    """P(argmax_r s_r + noise_r = r) for iid noise of the given ``scale``:
    ``"exponential"`` (Expo(scale)), ``"laplace"`` (Lap(scale)) or ``"gumbel"``."""
    s = np.asarray(scores, dtype=np.float64)
    if noise == "gumbel":
        z = s / scale
        z -= z.max()
        p = np.exp(z)
        return np.asarray(p / p.sum(), dtype=np.float64)
    pdf: Callable[[FloatArray], FloatArray]
    cdf: Callable[[FloatArray], FloatArray]
    if noise == "exponential":
        def pdf(t: FloatArray) -> FloatArray:
            return np.asarray(np.where(t >= 0, np.exp(-np.maximum(t, 0) / scale) / scale, 0.0))

        def cdf(t: FloatArray) -> FloatArray:
            return np.asarray(np.where(t >= 0, 1.0 - np.exp(-np.maximum(t, 0) / scale), 0.0))
    elif noise == "laplace":
        def pdf(t: FloatArray) -> FloatArray:
            return laplace_pdf(t, scale)

        def cdf(t: FloatArray) -> FloatArray:
            return laplace_cdf(t, scale)
    else:
        raise ValueError(f"unknown noise {noise!r}")
    x, w = _quadrature_grid(s.tolist(), scale)
    t = x[:, None] - s[None, :]
    F = cdf(t)
    f = pdf(t)
    others = np.empty_like(F)
    for r in range(s.size):
        others[:, r] = np.prod(np.delete(F, r, axis=1), axis=1)
    p = (f * others * w[:, None]).sum(axis=0)
    return np.asarray(p / p.sum(), dtype=np.float64)
