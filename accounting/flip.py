"""Exact permute-and-flip: report-noisy-max with exponential noise, drawn exactly.

Report-noisy-max with one-sided exponential noise ``Expo(2 Delta / eps)`` releases the
index of the largest ``s_r + Z_r``; its output law is that of permute-and-flip
(McKenna & Sheldon 2020; Ding, Kifer, Wang et al. 2021): visit the candidates in a
uniformly random order and stop at the first ``r`` for which a coin with probability

    p_r = exp(-c (s* - s_r)),   c = eps / (2 Delta),   s* = max_r s_r,

comes up heads (the leader's ``p`` is 1, so one pass always stops). This module draws
that law **exactly**: the scores, ``eps`` and ``Delta`` are floats, hence exact
rationals, so every exponent ``x_r = c (s* - s_r)`` is an exact rational and each coin
is a Bernoulli(exp(-x)) drawn without any floating point by the algorithm of Canonne,
Kamath and Steinke 2020 ("The discrete Gaussian for differential privacy", Alg. 1;
:func:`bernoulli_exp_neg`), from uniform integers drawn by rejection from the
generator's random bytes (:func:`uniform_below`).

Before this, the code added NumPy's float exponential (bounded support: about
``[0, 44 scale]``), so a candidate trailing the leader by more than about 44 scales
was never released while the ideal law gives it a positive probability, and a
neighbouring dataset could make it positive: an uncharged event (issue 55). See
``docs/privacy/report-noisy-max.md``, "Exact sampling".
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from accounting.errors import InvalidParameterError


def uniform_below(n: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``[0, n)`` (``n >= 1``), exactly: rejection sampling over
    ``n.bit_length()`` random bits from ``rng.bytes`` (expected < 2 tries)."""
    if n < 1:
        raise InvalidParameterError("n", n, "must be >= 1")
    if n == 1:
        return 0
    bits = (n - 1).bit_length()
    nbytes = (bits + 7) // 8
    mask = (1 << bits) - 1
    while True:
        v = int.from_bytes(rng.bytes(nbytes), "little") & mask
        if v < n:
            return v


def bernoulli(p: Fraction, rng: np.random.Generator) -> bool:
    """Exactly Bernoulli(``p``) for a rational ``0 <= p <= 1``."""
    if p <= 0:
        return False
    if p >= 1:
        return True
    return uniform_below(p.denominator, rng) < p.numerator


def _bernoulli_exp_neg_unit(x: Fraction, rng: np.random.Generator) -> bool:
    """Bernoulli(exp(-x)) for ``0 <= x <= 1``: draw ``A_k ~ Bernoulli(x / k)`` for
    ``k = 1, 2, ...`` until the first ``A_K = 0``; heads iff ``K`` is odd.
    ``P(K > k) = x^k / k!``, so ``P(K odd) = sum_{j>=0} (x^{2j}/(2j)! - x^{2j+1}/(2j+1)!)
    = exp(-x)``."""
    k = 1
    while bernoulli(x / k, rng):
        k += 1
    return k % 2 == 1


def bernoulli_exp_neg(x: Fraction, rng: np.random.Generator) -> bool:
    """Exactly Bernoulli(exp(-x)) for a rational ``x >= 0`` (Canonne, Kamath, Steinke
    2020, Alg. 1): ``exp(-x) = exp(-1)^floor(x) exp(-(x - floor(x)))``, each factor an
    independent coin; stops at the first tails (expected < 1.6 coins of exp(-1))."""
    if x < 0:
        raise InvalidParameterError("x", float(x), "must be >= 0")
    whole = x.numerator // x.denominator
    for _ in range(whole):
        if not _bernoulli_exp_neg_unit(Fraction(1), rng):
            return False
    return _bernoulli_exp_neg_unit(x - whole, rng)


def permute_and_flip(scores: np.ndarray, epsilon: float, sensitivity: float,
                     rng: np.random.Generator) -> int:
    """One draw of permute-and-flip over finite ``scores`` with ``c = eps / (2 Delta)``
    (module docstring): exactly the law of ``argmax(s + Expo(2 Delta / eps))``."""
    values = [Fraction(float(v)) for v in np.asarray(scores, dtype=np.float64).ravel()]
    if not values:
        raise InvalidParameterError("scores", "empty", "need at least one candidate")
    c = Fraction(epsilon) / (2 * Fraction(sensitivity))
    top = max(values)
    for r in rng.permutation(len(values)):
        index = int(r)
        gap = top - values[index]
        if gap == 0 or bernoulli_exp_neg(c * gap, rng):
            return index
    raise AssertionError("unreachable: the leader's coin has probability 1")
