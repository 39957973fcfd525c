"""Random generators and noise samplers (the only place privacy noise is drawn).

* :func:`make_generator` seeds a NumPy generator from 128 bits of OS entropy
  (:mod:`secrets`) unless the caller passes an explicit seed; the returned flag says
  whether the seed was explicit (the session records it on every ledger entry).
* :func:`discrete_laplace` is an exact, vectorised sampler of the discrete Laplace
  distribution on the integers (Canonne, Kamath & Steinke 2020, Algorithms 1-2),
  using only uniform integer draws. :class:`LaplaceGrid` combines it with rounding the
  exact statistic to a ``2^-k`` grid: the floating-point-safe Laplace mechanism that
  is the default everywhere Laplace noise is added (``docs/privacy/floating-point.md``).
* :func:`discrete_gaussian` (CKS 2020, Algorithm 3, integer sigma) and
  :class:`GaussianGrid` do the same for Gaussian noise (the default of
  :class:`~accounting.mechanisms.Gaussian`).
* :func:`float_laplace` is the textbook floating-point sampler, kept selectable
  (``sampler="float"``) for audits and comparisons; it is vulnerable to Mironov's
  (2012) attack on the low-order bits and is not the default.
"""

from __future__ import annotations

import functools
import math
import secrets
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from accounting.errors import InvalidParameterError, NoiseRangeError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Bits of OS entropy used to seed a generator when no seed is given.
ENTROPY_BITS = 128

#: The sampler names accepted by the mechanisms (``"discrete"`` is the default).
SAMPLERS = ("discrete", "float")

#: Relative resolution of the grid: the grid step ``g`` is at most
#: ``sensitivity / (dimension * 2^GRID_BITS)``, so rounding costs at most a relative
#: ``2^-GRID_BITS`` of extra noise.
GRID_BITS = 20
#: Upper bound on the discrete noise scale in grid units; keeps every integer that the
#: sampler and the release touch below ``2^53`` (exact in float64) with overwhelming
#: probability and below ``2^63`` (int64) always.
MAX_SCALE_BITS = 44
#: Largest grid magnitude of a rounded statistic (values beyond are clipped, which is
#: 1-Lipschitz and therefore keeps the sensitivity bound).
MAX_GRID_INDEX = float(2**52)
#: Smallest grid exponent allowed (avoids subnormal grid steps).
MIN_GRID_EXPONENT = -1000


def make_generator(seed: int | None) -> tuple[np.random.Generator, bool]:
    """A PCG64 generator and whether its seed was explicit.

    ``seed=None`` seeds from :data:`ENTROPY_BITS` bits of OS entropy through
    :func:`secrets.randbits` and :class:`numpy.random.SeedSequence`; the run is then
    not reproducible, which is what a private release needs. An explicit ``seed``
    (a non-negative int) gives a reproducible run, and the ledger marks it as seeded.

    Independent auxiliary streams (for non-privacy resampling) come from
    ``generator.spawn(1)[0]``; see :meth:`accounting.session.Session.auxiliary_generator`.
    """
    if seed is None:
        ss = np.random.SeedSequence(secrets.randbits(ENTROPY_BITS))
        return np.random.Generator(np.random.PCG64(ss)), False
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameterError("seed", seed, "must be a non-negative int or None")
    ss = np.random.SeedSequence(int(seed))
    return np.random.Generator(np.random.PCG64(ss)), True


# ---------------------------------------------------------------------------------
# Exact discrete Laplace (Canonne, Kamath & Steinke 2020)
# ---------------------------------------------------------------------------------
def bernoulli_exp(rng: np.random.Generator, num: IntArray, den: int) -> BoolArray:
    """Independent ``Bernoulli(exp(-num_i/den))`` draws for ``0 <= num_i <= den``.

    CKS 2020 Algorithm 1 (case ``gamma in [0, 1]``): ``K = 1``; repeat ``A ~
    Bernoulli(gamma/K)``, ``K += 1`` while ``A``; return ``K`` odd. Each
    ``Bernoulli(num/(den K))`` is the exact event ``U < num`` for ``U`` uniform on
    ``{0, ..., den K - 1}``. Vectorised: every round handles all still-running draws.
    """
    num = np.asarray(num, dtype=np.int64)
    out = np.empty(num.shape[0], dtype=bool)
    active = np.arange(num.shape[0])
    k = 1  # every still-running draw is at the same K in a given round
    while active.size:
        a = rng.integers(0, den * k, size=active.size, dtype=np.int64) < num[active]
        out[active[~a]] = k % 2 == 1
        active = active[a]
        k += 1
    return out


def _geometric_exp1(rng: np.random.Generator, size: int) -> IntArray:
    """``size`` draws of ``V``: successes of ``Bernoulli(exp(-1))`` before the first failure.

    Exact (each trial is :func:`bernoulli_exp` with ``gamma = 1``); vectorised over the
    still-running draws.
    """
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    ones = np.ones(size, dtype=np.int64)
    while active.size:
        active = active[bernoulli_exp(rng, ones[: active.size], 1)]
        v[active] += 1
    return v


# ---------------------------------------------------------------------------------
# Scalar fast path: the same exact algorithms in Python integer arithmetic
# ---------------------------------------------------------------------------------
#: Calls with at most this many draws use the pure-Python path (the vectorised path's
#: per-round NumPy overhead dominates for a handful of draws).
SCALAR_MAX = 8
#: 64-bit words fetched from the bit generator per refill of a :class:`_Bits` buffer.
_CHUNK_WORDS = 16
_WORD_MAX = 2**64 - 1


#: Bit generators whose raw output is one uniform 64-bit word per step. For these,
#: ``integers(0, 2^64 - 1, endpoint=True, dtype=uint64)`` returns exactly the raw words
#: (the full-range case draws one raw 64-bit value per integer), so
#: ``bit_generator.random_raw`` gives the same words without the ``integers`` call
#: overhead (checked in ``tests/accounting/test_samplers.py``). Others (e.g. MT19937,
#: whose raw output is 32 bits) go through ``integers``.
_RAW64 = (np.random.PCG64, np.random.PCG64DXSM)


def _refill(rng: np.random.Generator) -> int:
    """``_CHUNK_WORDS`` uniform 64-bit words as one Python integer (word 0 lowest)."""
    bitgen = rng.bit_generator
    if type(bitgen) in _RAW64:
        words = bitgen.random_raw(_CHUNK_WORDS)
    else:
        words = rng.integers(0, _WORD_MAX, size=_CHUNK_WORDS, dtype=np.uint64, endpoint=True)
    return int.from_bytes(words.astype("<u8").tobytes(), "little")


class _Bits:
    """Uniform random bits from the generator, each used once.

    The generator's ``integers(0, 2^64 - 1, endpoint=True, dtype=uint64)`` are uniform
    on all ``2^64`` words, i.e. 64 independent fair bits each, whatever the bit
    generator (fetched by :func:`_refill`, the same words); they are concatenated into
    one Python integer and consumed from the low end. ``below(n)`` is exact:
    ``k = bitlength(n - 1)`` fresh bits, rejected while ``>= n``. A buffer lives for
    one sampler call; unused bits are discarded (the output is a function of the
    consumed prefix of an iid uniform bit stream, so discarding the rest does not
    change its distribution).
    """

    __slots__ = ("_acc", "_n", "_rng")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._acc = 0
        self._n = 0

    def bits(self, k: int) -> int:
        while self._n < k:
            self._acc |= _refill(self._rng) << self._n
            self._n += 64 * _CHUNK_WORDS
        r = self._acc & ((1 << k) - 1)
        self._acc >>= k
        self._n -= k
        return r

    def below(self, n: int) -> int:
        """Uniform on ``{0, ..., n - 1}`` (``n >= 1``), exact."""
        k = (n - 1).bit_length()
        while True:
            r = self.bits(k)
            if r < n:
                return r


def _bern_exp_py(src: _Bits, num: int, den: int) -> bool:
    """``Bernoulli(exp(-num/den))`` for ``0 <= num <= den`` (CKS Algorithm 1, as
    :func:`bernoulli_exp`)."""
    k = 1
    while src.below(den * k) < num:
        k += 1
    return k % 2 == 1


def _bern_exp_frac_py(src: _Bits, num: int, den: int) -> bool:
    """``Bernoulli(exp(-num/den))`` for any ``num >= 0``: ``floor(num/den)``
    ``Bernoulli(exp(-1))`` successes and one ``Bernoulli(exp(-(num mod den)/den))``
    (CKS Algorithm 1, ``gamma > 1``); stops at the first failure."""
    whole, frac = divmod(num, den)
    for _ in range(whole):
        if not _bern_exp_py(src, 1, 1):
            return False
    return _bern_exp_py(src, frac, den)


def _discrete_laplace_py(src: _Bits, t: int, s: int) -> int:
    """One draw of CKS 2020 Algorithm 2 (as :func:`discrete_laplace`)."""
    while True:
        u = src.below(t)
        if not _bern_exp_py(src, u, t):
            continue
        v = 0
        while _bern_exp_py(src, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = src.bits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _discrete_gaussian_py(src: _Bits, t: int) -> int:
    """One draw of CKS 2020 Algorithm 3 with integer sigma ``t`` (as
    :func:`discrete_gaussian`)."""
    den = 2 * t * t
    while True:
        y = _discrete_laplace_py(src, t, 1)
        dev = abs(y) - t
        if _bern_exp_frac_py(src, dev * dev, den):
            return y


def discrete_laplace(rng: np.random.Generator, t: int, s: int, size: int) -> IntArray:
    """``size`` iid draws of the discrete Laplace with ``P(y) ∝ exp(-|y| s / t)``.

    CKS 2020 Algorithm 2 with scale ``t/s`` (``t, s >= 1`` integers), exact: ``U``
    uniform on ``{0..t-1}`` accepted with probability ``exp(-U/t)``; ``V`` the number of
    successes of ``Bernoulli(exp(-1))`` before the first failure; ``Y = floor((U + tV)
    / s)``; a fair sign ``B``, rejecting ``(B = 1, Y = 0)``; return ``(1-2B) Y``.
    """
    if t < 1 or s < 1:
        raise InvalidParameterError("scale", (t, s), "t and s must be integers >= 1")
    if t.bit_length() > 58 or s.bit_length() > 58:
        raise InvalidParameterError("scale", (t, s), "t and s must be below 2^58")
    if size <= SCALAR_MAX:
        src = _Bits(rng)
        return np.array([_discrete_laplace_py(src, t, s) for _ in range(size)],
                        dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        u = rng.integers(0, t, size=m, dtype=np.int64)
        accept = bernoulli_exp(rng, u, t)
        v = _geometric_exp1(rng, m)
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=m, dtype=np.int64).astype(bool)
        ok = accept & ~(negative & (y == 0))
        signed = np.where(negative, -y, y)
        out[pending[ok]] = signed[ok]
        pending = pending[~ok]
    return out


@dataclass(frozen=True)
class LaplaceGrid:
    """The discrete (grid) Laplace release for one sensitivity, epsilon and dimension.

    The exact statistic ``f`` (``d`` coordinates) is rounded to the grid ``g Z`` with
    ``g = 2^exponent`` (round half to even, clipped to ``|f/g| <= 2^52``); integer noise
    with ``P(y) ∝ exp(-|y| s/t)`` is added per coordinate; the output is
    ``(rint(f/g) + Y) g``, exactly representable. Rounding moves each coordinate by at
    most ``g/2``, so the L1 distance of two rounded neighbours is an integer number of
    grid steps at most ``grid_sensitivity = floor(multiplier Delta / g) + multiplier d``,
    and ``t/s >= grid_sensitivity / epsilon`` makes the release ``epsilon``-DP (the
    extra grid step is charged in the sensitivity, not in epsilon).

    ``multiplier`` is 2 when the noise scale is ``2 Delta / eps`` (report-noisy-max,
    SVT query noise): the grid sensitivity is then twice the per-query one.
    """

    exponent: int
    t: int
    s: int
    grid_sensitivity: int

    @property
    def step(self) -> float:
        return math.ldexp(1.0, self.exponent)

    @property
    def scale(self) -> float:
        """Noise scale in the statistic's units, ``(t/s) g`` (rounded to float)."""
        return math.ldexp(self.t / self.s, self.exponent)

    @classmethod
    def build(
        cls, sensitivity: float, epsilon: float, dimension: int = 1, multiplier: int = 1
    ) -> LaplaceGrid:
        """Grid and integer scale for ``Lap(multiplier * sensitivity / epsilon)`` noise.

        ``sensitivity`` is the L1 sensitivity of the ``dimension``-vector (for
        ``multiplier > 1``, of each scalar query). Cached (a pure function).
        """
        return _laplace_grid(float(sensitivity), float(epsilon), int(dimension), int(multiplier))

    @classmethod
    def _build(
        cls, sensitivity: float, epsilon: float, dimension: int, multiplier: int
    ) -> LaplaceGrid:
        if dimension < 1:
            raise InvalidParameterError("dimension", dimension, "must be >= 1")
        delta_q = Fraction(sensitivity)
        eps_q = Fraction(epsilon)
        if delta_q <= 0 or eps_q <= 0:
            raise InvalidParameterError(
                "sensitivity", sensitivity, "sensitivity and epsilon must be > 0"
            )
        check_laplace_scale(sensitivity, epsilon, dimension, multiplier)
        # g <= sensitivity / (dimension 2^GRID_BITS), a power of two.
        exponent = math.floor(math.log2(sensitivity)) - GRID_BITS - math.ceil(
            math.log2(dimension)
        )
        exponent = max(exponent, MIN_GRID_EXPONENT)
        while True:
            g = Fraction(2) ** exponent
            grid_sens = multiplier * (math.floor(delta_q / g) + dimension)
            required = Fraction(grid_sens) / eps_q  # discrete scale in grid units
            if required <= 2**MAX_SCALE_BITS:
                break
            exponent += 1  # coarser grid: less scale in grid units
        # Represent the scale t/s >= required with ~MAX_SCALE_BITS bits of precision.
        shift = max(0, MAX_SCALE_BITS - math.ceil(required).bit_length())
        s = 2**shift
        t = math.ceil(required * s)
        return cls(exponent=exponent, t=t, s=s, grid_sensitivity=grid_sens)

    def round(self, exact: FloatArray) -> FloatArray:
        """``rint(f/g)`` clipped to ``[-2^52, 2^52]`` (float64 holding integers)."""
        scaled = np.ldexp(np.asarray(exact, dtype=np.float64), -self.exponent)
        out: FloatArray = np.rint(np.clip(scaled, -MAX_GRID_INDEX, MAX_GRID_INDEX))
        return out

    def noise(self, rng: np.random.Generator, size: int) -> IntArray:
        """``size`` integer noise draws (grid units)."""
        return discrete_laplace(rng, self.t, self.s, size)

    def noisy_index(self, exact: float, rng: np.random.Generator) -> float:
        """One scalar ``rint(f/g) + Y`` in grid units, in Python floats: the same IEEE
        operations as ``round`` plus ``noise`` on a 1-element array (exact scaling by
        a power of two, the same clip, round-half-even to an integer below ``2^52``,
        one draw of the same sampler from the same generator), so the same value, bit
        for bit, without the NumPy calls (the per-test path of SVT and Laplace)."""
        try:
            scaled = math.ldexp(exact, -self.exponent)
        except OverflowError:  # np.ldexp gives +-inf here, which the clip bounds
            scaled = math.copysign(math.inf, exact)
        base = float(round(min(max(scaled, -MAX_GRID_INDEX), MAX_GRID_INDEX)))
        return base + float(_discrete_laplace_py(_Bits(rng), self.t, self.s))

    def release_scalar(self, exact: float, rng: np.random.Generator) -> float:
        """:meth:`release` of one scalar (same value, bit for bit): ``(rint(f/g) + Y) g``."""
        return math.ldexp(self.noisy_index(exact, rng), self.exponent)

    def release(
        self, exact: FloatArray, rng: np.random.Generator, size: int | None = None
    ) -> FloatArray:
        """``(rint(f/g) + Y) g``; with ``size``, ``size`` independent releases stacked."""
        f = np.asarray(exact, dtype=np.float64)
        base = self.round(f)
        shape = f.shape if size is None else (size, *f.shape)
        count = int(np.prod(shape)) if shape else 1
        y = self.noise(rng, count).reshape(shape).astype(np.float64)
        out: FloatArray = np.ldexp(base + y, self.exponent)
        return out


#: Upper bound on the discrete Gaussian's integer sigma ``t`` (grid units): keeps
#: ``2 t^2`` (the denominator of the acceptance exponent) below ``2^53`` and
#: ``(|Y| - t)^2`` in int64 for all but astronomically rare proposals.
MAX_GAUSS_BITS = 26
#: Proposals with ``|Y| >= 2^31`` have their acceptance exponent computed with Python
#: integers (probability ``< e^-32`` per proposal; never on a hot path).
_GAUSS_SAFE = 2**31


def _isqrt_up(d: int) -> int:
    r = math.isqrt(d)
    return r if r * r == d else r + 1


def discrete_gaussian(rng: np.random.Generator, t: int, size: int) -> IntArray:
    """``size`` iid draws of the discrete Gaussian ``P(y) ∝ exp(-y^2 / (2 t^2))``, exact.

    CKS 2020 Algorithm 3 with ``sigma = t`` (an integer): propose ``Y`` from the
    discrete Laplace of scale ``t``, accept with probability ``exp(-(|Y| - t)^2/(2 t^2))``
    (``sigma^2/t = t``). The acceptance ``Bernoulli(exp(-N/D))``, ``N = (|Y| - t)^2``,
    ``D = 2 t^2``, is the conjunction of ``floor(N/D)`` ``Bernoulli(exp(-1))`` successes
    (i.e. a geometric count ``V >= floor(N/D)``) and ``Bernoulli(exp(-(N mod D)/D))``
    (CKS Algorithm 1), all in integer arithmetic.
    """
    if t < 1 or t.bit_length() > MAX_GAUSS_BITS + 1:
        raise InvalidParameterError("sigma", t, f"integer sigma must be in [1, 2^{MAX_GAUSS_BITS}]")
    if size <= SCALAR_MAX:
        src = _Bits(rng)
        return np.array([_discrete_gaussian_py(src, t) for _ in range(size)], dtype=np.int64)
    den = 2 * t * t
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        y = discrete_laplace(rng, t, 1, m)
        dev = np.abs(y) - t
        safe = np.abs(dev) < _GAUSS_SAFE
        whole = np.zeros(m, dtype=np.int64)
        frac = np.zeros(m, dtype=np.int64)
        n_safe = dev[safe] * dev[safe]
        whole[safe] = n_safe // den
        frac[safe] = n_safe % den
        for i in np.flatnonzero(~safe):  # practically never runs
            big = int(dev[i]) ** 2
            whole[i] = min(big // den, 2**62)
            frac[i] = big % den
        geo = _geometric_exp1(rng, m)
        accept = (geo >= whole) & bernoulli_exp(rng, frac, den)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


@dataclass(frozen=True)
class GaussianGrid:
    """The discrete (grid) Gaussian release for one L2 sensitivity, sigma and dimension.

    The statistic is rounded to ``g Z`` (``g = 2^exponent``) as in :class:`LaplaceGrid`,
    and iid discrete Gaussian noise with integer ``sigma_g = t`` is added per coordinate.
    Rounding moves the L2 distance of two neighbours by at most ``sqrt(d)`` grid steps,
    bounded by the integer ``r = ceil(sqrt(d))``; ``t >= sigma/g + r sigma/Delta2``
    (exact) makes ``(Delta2/g + r)^2/(2 t^2) <= Delta2^2/(2 sigma^2) = rho``, so the
    release is ``rho``-zCDP (CKS 2020: the discrete Gaussian with integer shifts has
    at most the continuous Gaussian's Rényi divergences).
    """

    exponent: int
    t: int
    root_dimension: int

    @property
    def step(self) -> float:
        return math.ldexp(1.0, self.exponent)

    @property
    def sigma(self) -> float:
        """Noise standard deviation parameter in the statistic's units, ``t g``."""
        return math.ldexp(float(self.t), self.exponent)

    @classmethod
    def build(cls, l2_sensitivity: float, sigma: float, dimension: int = 1) -> GaussianGrid:
        """Grid and integer sigma for ``N(0, sigma^2)`` noise (cached pure function)."""
        return _gaussian_grid(float(l2_sensitivity), float(sigma), int(dimension))

    @classmethod
    def _build(cls, l2_sensitivity: float, sigma: float, dimension: int) -> GaussianGrid:
        if dimension < 1:
            raise InvalidParameterError("dimension", dimension, "must be >= 1")
        d2, sg = Fraction(l2_sensitivity), Fraction(sigma)
        if d2 <= 0 or sg <= 0:
            raise InvalidParameterError("sigma", sigma, "sensitivity and sigma must be > 0")
        r = _isqrt_up(dimension)
        check_gaussian_scale(l2_sensitivity, sigma, dimension)
        # g <= Delta2 / (r 2^21) (rounding adds <= 2^-21 relative) and g <= sigma 2^-24
        # (the ceiling of t adds <= 2^-24 relative).
        exponent = max(
            min(
                math.floor(math.log2(l2_sensitivity)) - GRID_BITS - math.ceil(math.log2(r)) - 1,
                math.floor(math.log2(sigma)) - MAX_GAUSS_BITS + 2,
            ),
            MIN_GRID_EXPONENT,
        )
        while True:
            g = Fraction(2) ** exponent
            t = math.ceil(sg / g + r * sg / d2)
            if t.bit_length() <= MAX_GAUSS_BITS:
                return cls(exponent=exponent, t=t, root_dimension=r)
            exponent += 1

    def round(self, exact: FloatArray) -> FloatArray:
        scaled = np.ldexp(np.asarray(exact, dtype=np.float64), -self.exponent)
        out: FloatArray = np.rint(np.clip(scaled, -MAX_GRID_INDEX, MAX_GRID_INDEX))
        return out

    def release(
        self, exact: FloatArray, rng: np.random.Generator, size: int | None = None
    ) -> FloatArray:
        f = np.asarray(exact, dtype=np.float64)
        base = self.round(f)
        shape = f.shape if size is None else (size, *f.shape)
        count = int(np.prod(shape)) if shape else 1
        y = discrete_gaussian(rng, self.t, count).reshape(shape).astype(np.float64)
        out: FloatArray = np.ldexp(base + y, self.exponent)
        return out


def check_laplace_scale(sensitivity: float, epsilon: float, dimension: int = 1,
                        multiplier: int = 1) -> None:
    """Raise :class:`NoiseRangeError` unless the grid Laplace sampler can represent
    ``Lap(multiplier sensitivity / epsilon)``: its scale in grid units is at least
    ``multiplier dimension / epsilon`` whatever the grid (the rounding slack), and must
    not exceed ``2^MAX_SCALE_BITS``. Without this check such parameters would make the
    grid search run forever; with it they are a clear error before anything is admitted
    (the noise would be more than ``2^44`` grid steps, far beyond any useful release)."""
    eps_q = Fraction(epsilon)
    if eps_q > 0 and Fraction(multiplier * dimension) / eps_q > 2**MAX_SCALE_BITS:
        raise NoiseRangeError(
            "epsilon", epsilon,
            f"too small for the discrete Laplace sampler: multiplier x dimension / epsilon "
            f"must be at most 2^{MAX_SCALE_BITS}")


def check_gaussian_scale(l2_sensitivity: float, sigma: float, dimension: int = 1) -> None:
    """Raise :class:`NoiseRangeError` unless the grid Gaussian sampler can represent
    ``N(0, sigma^2)`` for this sensitivity: its integer sigma is at least
    ``ceil(sqrt(dimension)) sigma / Delta2`` (the rounding slack) whatever the grid, and
    must stay below ``2^MAX_GAUSS_BITS`` (else the grid search would never end)."""
    d2, sg = Fraction(l2_sensitivity), Fraction(sigma)
    if d2 > 0 and sg > 0 and _isqrt_up(dimension) * sg / d2 >= 2**MAX_GAUSS_BITS - 1:
        raise NoiseRangeError(
            "sigma", sigma,
            f"too large for the discrete Gaussian sampler: sqrt(dimension) sigma / "
            f"sensitivity must be below 2^{MAX_GAUSS_BITS} - 1")


@functools.lru_cache(maxsize=1024)
def _laplace_grid(
    sensitivity: float, epsilon: float, dimension: int, multiplier: int
) -> LaplaceGrid:
    return LaplaceGrid._build(sensitivity, epsilon, dimension, multiplier)


@functools.lru_cache(maxsize=1024)
def _gaussian_grid(l2_sensitivity: float, sigma: float, dimension: int) -> GaussianGrid:
    return GaussianGrid._build(l2_sensitivity, sigma, dimension)


def float_laplace(
    rng: np.random.Generator, scale: float, shape: tuple[int, ...]
) -> FloatArray:
    """Plain floating-point ``Lap(scale)`` draws (NOT floating-point safe)."""
    return rng.laplace(0.0, scale, size=shape)
