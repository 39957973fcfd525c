"""Deliberately broken mechanisms (audit mutants) and their correct counterparts.

Every sampler here has the auditor's signature ``run(dataset, n, rng) -> outputs``
and is fully vectorised (``n`` independent releases in one NumPy call). The
"dataset" of a primitive is the exact statistic it is applied to (a float, a score
vector or an answer sequence), which is what the neighbouring fixtures in
:mod:`audits.fixtures` vary.

The mutants reproduce the published mistakes listed in ``PRIVACY.md`` section 6 and
in ``docs/audits.md`` (Lyu, Su & Li 2017, "Understanding the Sparse Vector
Technique", Alg. 3-6; Priv-PC's Gaussian threshold refresh; RNM releasing the noisy
value; Laplace at half the scale; ...). The correct counterparts are written here
from the same definitions so that the *only* difference between a mutant and its
counterpart is the defect; the suite additionally audits the real primitives of
:mod:`accounting.mechanisms`.

This module is audit code, not a release path: it draws its own noise from the
generator it is given and is never used on private data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from audits.empirical import Sampler

FloatArray = NDArray[np.float64]

#: Code of an unanswered query in SVT output patterns (the run halted before it).
NOT_ASKED = -1


# ---------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------


def laplace_sampler(sensitivity: float, epsilon: float, *, scale_factor: float = 1.0) -> Sampler:
    """``f(D) + Lap(scale_factor * Delta / eps)``; ``scale_factor = 0.5`` is the
    half-scale mutant (it is ``2 eps``-DP, not ``eps``-DP)."""
    b = scale_factor * sensitivity / epsilon

    def run(exact: Any, n: int, rng: np.random.Generator) -> FloatArray:
        return np.asarray(float(exact) + rng.laplace(0.0, b, size=n), dtype=np.float64)

    return run


# ---------------------------------------------------------------------------------
# Sparse vector variants (Lyu, Su & Li 2017)
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SVTVariant:
    """Noise scales and output rule of one SVT variant (``eps`` declared total).

    * ``threshold_scale``: scale of the threshold noise ``rho``;
    * ``query_scale``: scale of the query noise ``nu_i`` (0: none);
    * ``cutoff``: halt after this many positives (``None``: never halt);
    * ``release_value``: positives release ``q_i + nu_i`` instead of ``True``;
    * ``threshold_noise``: ``"laplace"`` or ``"gaussian"`` (``threshold_scale`` is then
      the standard deviation).
    """

    name: str
    threshold_scale: float
    query_scale: float
    cutoff: int | None
    release_value: bool = False
    threshold_noise: str = "laplace"


def svt_variant(
    name: str, sensitivity: float, epsilon: float, cutoff: int = 1, *, monotone: bool = False
) -> SVTVariant:
    """The parameters of a named variant.

    ``alg1`` (correct, Lyu et al. Alg. 1): ``eps1 = eps/2``, ``rho ~ Lap(Delta/eps1)``,
    ``nu ~ Lap(2 c Delta / eps2)`` (``c Delta / eps2`` for monotone queries), halt after
    ``c`` positives.
    ``alg3``: as Alg. 1 but ``nu ~ Lap(c Delta / eps2)`` and positives release the noisy
    answer ``q_i + nu_i`` (not private for any finite eps).
    ``alg4``: ``eps1 = eps/4``, ``eps2 = 3 eps / 4``, ``nu ~ Lap(Delta / eps2)`` (not
    scaled by ``c``): only ``((1 + 6c)/4) eps``-DP.
    ``alg5``: no query noise (not private for any finite eps).
    ``alg6``: ``nu ~ Lap(Delta / eps2)`` and no cutoff (not private for any finite eps).
    ``gaussian-refresh``: Alg. 1 with the threshold noise drawn as
    ``N(0, (Delta/eps1)^2)``, as in Priv-PC's SVT-PC after a positive; a Gaussian
    threshold has no pure-DP guarantee.
    """
    d, e = sensitivity, epsilon
    e1, e2 = e / 2.0, e / 2.0
    c = cutoff
    if name == "alg1":
        q = (c if monotone else 2.0 * c) * d / e2
        return SVTVariant(name, d / e1, q, c)
    if name == "alg3":
        return SVTVariant(name, d / e1, c * d / e2, c, release_value=True)
    if name == "alg4":
        return SVTVariant(name, d / (e / 4.0), d / (3.0 * e / 4.0), c)
    if name == "alg5":
        return SVTVariant(name, d / e1, 0.0, c)
    if name == "alg6":
        return SVTVariant(name, d / e1, d / e2, None)
    if name == "gaussian-refresh":
        return SVTVariant(name, d / e1, 2.0 * c * d / e2, c, threshold_noise="gaussian")
    raise ValueError(f"unknown SVT variant {name!r}")


def simulate_svt(
    variant: SVTVariant,
    threshold: float,
    answers: FloatArray,
    n: int,
    rng: np.random.Generator,
) -> NDArray[Any]:
    """``n`` independent runs of ``variant`` over the fixed answer sequence.

    Output: ``(n, k)`` int8 patterns (1 positive, 0 negative, ``NOT_ASKED`` after the
    halt), or for ``release_value`` variants ``(n, k)`` float with the released noisy
    answer for positives and NaN otherwise.
    """
    q = np.asarray(answers, dtype=np.float64)
    k = q.size
    if variant.threshold_noise == "gaussian":
        rho = rng.normal(0.0, variant.threshold_scale, size=(n, 1))
    else:
        rho = rng.laplace(0.0, variant.threshold_scale, size=(n, 1))
    noisy = q[None, :]
    if variant.query_scale > 0:
        noisy = noisy + rng.laplace(0.0, variant.query_scale, size=(n, k))
    above = noisy >= threshold + rho
    if variant.cutoff is None:
        asked = np.ones((n, k), dtype=bool)
    else:
        before: NDArray[np.int64] = np.cumsum(above, axis=1) - above  # positives before i
        asked = np.asarray(before < variant.cutoff)
    if variant.release_value:
        out = np.where(asked & above, noisy, np.nan)
        return np.asarray(out, dtype=np.float64)
    pattern = np.where(asked, above.astype(np.int8), np.int8(NOT_ASKED))
    return np.asarray(pattern, dtype=np.int8)


def svt_sampler(variant: SVTVariant, threshold: float) -> Sampler:
    """Sampler over answer sequences (the "dataset" is the answer vector)."""

    def run(answers: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        return simulate_svt(variant, threshold, np.asarray(answers, dtype=np.float64), n, rng)

    return run


# ---------------------------------------------------------------------------------
# Report-noisy-max, the exponential mechanism and top-k
# ---------------------------------------------------------------------------------


def _noise(
    noise: str, scale: float, shape: tuple[int, int], rng: np.random.Generator
) -> FloatArray:
    if noise == "exponential":
        return np.asarray(rng.exponential(scale, size=shape), dtype=np.float64)
    if noise == "gumbel":
        return np.asarray(rng.gumbel(0.0, scale, size=shape), dtype=np.float64)
    if noise == "laplace":
        return np.asarray(rng.laplace(0.0, scale, size=shape), dtype=np.float64)
    raise ValueError(f"unknown noise {noise!r}")


def rnm_sampler(sensitivity: float, epsilon: float, noise: str = "exponential", *,
                release_value: bool = False) -> Sampler:
    """Report-noisy-max with noise of scale ``2 Delta / eps``. The correct mechanism
    releases the index only; ``release_value=True`` is the mutant that releases the
    noisy maximum value (PRIVACY.md section 6, item 5)."""
    scale = 2.0 * sensitivity / epsilon

    def run(scores: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        s = np.asarray(scores, dtype=np.float64)
        noisy = s[None, :] + _noise(noise, scale, (n, s.size), rng)
        if release_value:
            return np.asarray(noisy.max(axis=1), dtype=np.float64)
        return np.asarray(noisy.argmax(axis=1), dtype=np.int64)

    return run


def exponential_mechanism_sampler(sensitivity: float, epsilon: float) -> Sampler:
    """Exponential mechanism via the Gumbel-max trick (``Gumbel(2 Delta / eps)``)."""
    return rnm_sampler(sensitivity, epsilon, "gumbel")


def top_k_sampler(sensitivity: float, epsilon: float, k: int, *,
                  logit_factor: float = 1.0) -> Sampler:
    """One-shot Gumbel top-``k``: the indices of the ``k`` largest
    ``logit_factor * eps u_r / (2 Delta) + Gumbel(1)``, in decreasing order (rows of an
    ``(n, k)`` int64 array). ``logit_factor = 1`` is the correct mechanism
    (``k eps``-DP); ``logit_factor = 2`` is the mutant with logits ``eps u / Delta``
    (Gumbel noise of scale ``Delta / eps`` on the utilities), which is what the
    exponential mechanism may use for monotone utilities only: on utilities that move
    in both directions each peeling round can lose ``2 eps``, so it is only
    ``2 k eps``-DP while declaring ``k eps``."""
    a = logit_factor * epsilon / (2.0 * sensitivity)

    def run(utilities: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        u = np.asarray(utilities, dtype=np.float64)
        keys = a * u[None, :] + rng.gumbel(0.0, 1.0, size=(n, u.size))
        top = np.argsort(-keys, axis=1, kind="stable")[:, : min(k, u.size)]
        return np.asarray(top, dtype=np.int64)

    return run


# ---------------------------------------------------------------------------------
# Subsampled SVT (draw the subsample inside)
# ---------------------------------------------------------------------------------


def subsampled_svt_sampler(m: int, variant: SVTVariant, threshold: float) -> Sampler:
    """Subsample ``m`` of the ``n`` rows without replacement (drawn per run), then run
    ``variant`` on query answers ``q_i = sum of column i over the subsample``.
    The dataset is an ``(n, k)`` 0/1 matrix (query ``i`` has sensitivity 1 on the
    subsample under replace-one)."""

    def run(rows: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        x = np.asarray(rows, dtype=np.float64)
        n_rows, _k = x.shape
        # Random keys, keep the m smallest: a uniform m-subset per run (vectorised).
        keys = rng.random((n, n_rows))
        idx = np.argpartition(keys, m - 1, axis=1)[:, :m]
        answers = x[idx].sum(axis=1)  # (n, k)
        return _svt_rows(variant, threshold, answers, rng)

    return run


def _svt_rows(variant: SVTVariant, threshold: float, answers: FloatArray,
              rng: np.random.Generator) -> NDArray[np.int8]:
    n, k = answers.shape
    rho = rng.laplace(0.0, variant.threshold_scale, size=(n, 1))
    noisy = answers + rng.laplace(0.0, variant.query_scale, size=(n, k))
    above = noisy >= threshold + rho
    before: NDArray[np.int64] = np.cumsum(above, axis=1) - above
    asked = before < (variant.cutoff if variant.cutoff is not None else k + 1)
    return np.asarray(np.where(asked, above.astype(np.int8), np.int8(NOT_ASKED)), dtype=np.int8)


def answers_of(seq: Sequence[float]) -> FloatArray:
    return np.asarray(seq, dtype=np.float64)


# ---------------------------------------------------------------------------------
# Per-test Laplace that charges only some tests (the CURATE code defect)
# ---------------------------------------------------------------------------------


def partial_charging_sampler(
    budget: float,
    test_epsilon: float,
    sensitivity: float,
    margin: float,
    max_tests: int,
    *,
    charge_all: bool = False,
) -> Sampler:
    """A stream of per-test Laplace decisions on answers ``q_i`` (the dataset) with a
    total budget ``budget`` of ``test_epsilon`` per charged test.

    The CURATE reference code charges a test only when its noisy statistic reaches the
    lower margin; tests below it are free, so the run continues (up to ``max_tests``)
    after more than ``budget / test_epsilon`` releases. ``charge_all=True`` is the
    correct counterpart: every test is charged, the run stops when the budget is spent.
    Output: ``(n, max_tests)`` int8 patterns (1 at/above the margin, 0 below,
    ``NOT_ASKED`` after the stop). The declared eps of both is ``budget``.
    """
    affordable = math.floor(budget / test_epsilon + 1e-9)
    b = sensitivity / test_epsilon

    def run(answers: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
        q = np.asarray(answers, dtype=np.float64)[:max_tests]
        k = q.size
        noisy = q[None, :] + rng.laplace(0.0, b, size=(n, k))
        above = noisy >= margin
        if charge_all:
            asked = np.broadcast_to(np.arange(k) < affordable, (n, k))
        else:
            charged_before: NDArray[np.int64] = np.cumsum(above, axis=1) - above
            asked = charged_before < affordable
        return np.asarray(np.where(asked, above.astype(np.int8), np.int8(NOT_ASKED)),
                          dtype=np.int8)

    return run
