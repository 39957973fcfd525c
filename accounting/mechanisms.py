"""Privacy primitives: frozen, validated mechanisms that declare their cost.

Every mechanism is a frozen dataclass validated in ``__post_init__`` (bad parameters
raise :class:`~accounting.errors.InvalidParameterError` naming the parameter). The
common surface (``docs/internals.md``):

* ``kind``: the stored name (``"laplace"``, ``"sparse-vector"``, ...);
* ``relation``: the neighbouring relation the sensitivity is declared under;
* ``sensitivity``: the declared sensitivity (``None`` where not applicable);
* ``cost(relation)``: the declared cost under the ledger's relation, from public
  parameters only. A bound declared under add/remove is converted to replace-one
  explicitly (:func:`accounting.relations.convert_sensitivity`: the sensitivity
  doubles, so the epsilon doubles and rho quadruples); replace-one never converts to
  add/remove;
* ``public_params()``: JSON-compatible parameters, enough for
  :func:`mechanism_from_params` to rebuild the mechanism;
* ``dp_event(relation)``: the dp-accounting event, or ``None`` where dp-accounting has
  none.

One-shot mechanisms have ``release(exact, rng)`` and a vectorised
``sample(exact, rng, size)``. :class:`SparseVector` and
:class:`SubsampledSparseVector` are stateful: a session starts them and returns a
run handle (:class:`SparseVectorRun`).

Proof notes: ``docs/privacy/<kind>.md``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from accounting.costs import Cost, round_up
from accounting.entries import JSONValue
from accounting.errors import InvalidParameterError, MechanismStateError, StatisticError
from accounting.flip import permute_and_flip
from accounting.gumbel import Keys, gumbel_keys, orders, top, winners
from accounting.noise import (
    SAMPLERS,
    FloatArray,
    GaussianGrid,
    LaplaceGrid,
    check_gaussian_scale,
    check_laplace_scale,
    float_laplace,
)
from accounting.relations import Relation, convert_sensitivity

IntArray = npt.NDArray[np.int64]

#: Noise kinds of report-noisy-max.
RNM_NOISES = ("exponential", "gumbel", "laplace")

#: Significant bits of the ``sigma`` that :meth:`Gaussian.for_rho` picks (rounded up to
#: ``m 2^e`` with an integer ``m < 2^SIGMA_BITS``). The exact cost ``Delta^2/(2 sigma^2)``
#: then has a denominator dividing ``2^j m_odd^2``, so the exact total of a run that uses
#: many different noise scales stays a short fraction (with full 53-bit sigmas every new
#: scale added about 106 bits to the total's denominator, and a long run's total outgrew
#: what Python will print). The noise is at most ``2^-(SIGMA_BITS - 1)`` (0.8%) larger than
#: the budget allows.
SIGMA_BITS = 8


def round_up_bits(x: float, bits: int = SIGMA_BITS) -> float:
    """The smallest ``m 2^e >= x`` with an integer ``0 < m <= 2^bits`` (``x > 0`` finite)."""
    mant, exp = math.frexp(x)  # x = mant 2^exp, 0.5 <= mant < 1
    return math.ldexp(math.ceil(math.ldexp(mant, bits)), exp - bits)


#: Relative slack added to transcendental cost formulas (amplified epsilon) before
#: rounding up; matches ``accounting.ledger._rederive``.
AMPLIFICATION_SLACK = Fraction(1, 10**12)


# ---------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------
def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction | np.number):
        raise InvalidParameterError(name, value, "must be a real number")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidParameterError(name, value, "must be finite")
    return v


def _positive(name: str, value: object) -> float:
    v = _real(name, value)
    if v <= 0:
        raise InvalidParameterError(name, value, "must be > 0")
    return v


def _delta(name: str, value: object, *, positive: bool = False) -> float:
    v = _real(name, value)
    if v < 0 or v >= 1 or (positive and v == 0):
        raise InvalidParameterError(name, value, "must be in (0, 1)" if positive else "in [0, 1)")
    return v


def _int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidParameterError(name, value, "must be an integer")
    v = int(value)
    if v < minimum:
        raise InvalidParameterError(name, value, f"must be >= {minimum}")
    return v


def _relation(value: object) -> Relation:
    if isinstance(value, Relation):
        return value
    if isinstance(value, str):
        return Relation.parse(value)
    raise InvalidParameterError("relation", value, "must be a Relation")


def _sampler(value: object) -> str:
    if value not in SAMPLERS:
        raise InvalidParameterError("sampler", value, f"expected one of {SAMPLERS}")
    return str(value)


def _factor(sensitivity: float, declared: Relation, target: Relation) -> Fraction:
    """Exact ratio of the sensitivity under ``target`` to the declared one (1 or 2)."""
    target = _relation(target)
    converted = convert_sensitivity(sensitivity, declared, target)
    return Fraction(converted) / Fraction(sensitivity)


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def as_exact(value: object, name: str = "exact", *, vector_ok: bool = True) -> FloatArray:
    """The exact statistic as a finite float64 array of dimension 0 or 1."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise StatisticError(f"{name}: not a real number or 1-D array of reals ({err})") from err
    if arr.ndim > (1 if vector_ok else 0):
        raise StatisticError(f"{name}: expected a scalar or 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise StatisticError(f"{name}: empty array")
    if not np.all(np.isfinite(arr)):
        raise StatisticError(f"{name}: contains NaN or infinite values")
    return arr


def _finite_scalar(value: object) -> float | None:
    """``value`` as a float when it is a finite Python or NumPy real scalar (not a
    bool), else ``None`` (then :func:`as_exact` decides, and raises for bad input)."""
    if type(value) is float or isinstance(value, np.floating | np.integer) or (
            type(value) is int):
        try:
            x = float(value)
        except OverflowError:  # an int beyond float range: as_exact reports it
            return None
        return x if math.isfinite(x) else None
    return None


def _vector(value: object, name: str) -> FloatArray:
    arr = as_exact(value, name)
    if arr.ndim != 1:
        raise StatisticError(f"{name}: expected a 1-D array, got a scalar")
    return arr


def _size(size: object) -> int:
    return _int("size", size, 1)


def _output(arr: FloatArray, scalar: bool) -> float | FloatArray:
    return float(arr) if scalar else arr


# ---------------------------------------------------------------------------------
# protocols
# ---------------------------------------------------------------------------------
@runtime_checkable
class Mechanism(Protocol):
    """What every mechanism declares (public information only)."""

    kind: ClassVar[str]

    @property
    def relation(self) -> Relation: ...

    @property
    def sensitivity(self) -> float | None: ...

    def cost(self, relation: Relation) -> Cost: ...

    def public_params(self) -> dict[str, JSONValue]: ...

    def dp_event(self, relation: Relation) -> Any: ...


@runtime_checkable
class OneShotMechanism(Mechanism, Protocol):
    """A mechanism released in one call."""

    def release(self, exact: Any, rng: np.random.Generator) -> Any: ...

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> Any: ...


# ---------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Laplace:
    """``f(D) + Lap(Delta/eps)`` per coordinate (Delta = L1 sensitivity); pure eps-DP.

    Cost ``eps`` (rho ``eps^2/2``). Default sampler ``"discrete"``: the statistic is
    rounded to a ``2^-k`` grid and exact discrete Laplace noise is added, with the
    grid step charged in the sensitivity (``accounting.noise.LaplaceGrid``);
    ``"float"`` is the textbook float sampler (audits only). dp-accounting event:
    ``LaplaceDpEvent(noise_multiplier=1/eps')`` with ``eps'`` the epsilon under the
    requested relation (sensitivity normalised to 1). Note ``docs/privacy/laplace.md``.
    """

    sensitivity: float
    epsilon: float
    relation: Relation = Relation.REPLACE_ONE
    sampler: str = "discrete"
    kind: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        _set(self, "sensitivity", _positive("sensitivity", self.sensitivity))
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        _set(self, "relation", _relation(self.relation))
        _set(self, "sampler", _sampler(self.sampler))
        if self.sampler == "discrete":  # an impossible grid is an error before admission
            check_laplace_scale(self.sensitivity, self.epsilon)

    @property
    def scale(self) -> float:
        """The nominal noise scale ``Delta/eps`` (the grid sampler's is at most 2^-20
        relatively larger)."""
        return self.sensitivity / self.epsilon

    def epsilon_under(self, relation: Relation) -> Fraction:
        return Fraction(self.epsilon) * _factor(self.sensitivity, self.relation, relation)

    def cost(self, relation: Relation) -> Cost:
        return Cost.pure(self.epsilon_under(relation))

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "relation": self.relation.value,
            "sampler": self.sampler,
        }

    def dp_event(self, relation: Relation) -> Any:
        import dp_accounting

        eps = float(self.epsilon_under(relation))
        return dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / eps)

    def grid(self, dimension: int) -> LaplaceGrid:
        return LaplaceGrid.build(self.sensitivity, self.epsilon, dimension)

    def _noisy(self, f: FloatArray, rng: np.random.Generator, size: int | None) -> FloatArray:
        if self.sampler == "discrete":
            return self.grid(max(1, f.size)).release(f, rng, size)
        shape = f.shape if size is None else (size, *f.shape)
        return f + float_laplace(rng, self.scale, shape)

    def release(self, exact: Any, rng: np.random.Generator) -> float | FloatArray:
        x = _finite_scalar(exact)
        if x is not None and self.sampler == "discrete":
            return self.grid(1).release_scalar(x, rng)  # the array path's value
        f = as_exact(exact)
        return _output(self._noisy(f, rng, None), f.ndim == 0)

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> FloatArray:
        """``size`` independent releases, shape ``(size, *exact.shape)``."""
        return self._noisy(as_exact(exact), rng, _size(size))


@dataclass(frozen=True)
class GroupedLaplace(Laplace):
    """Sums of an exact per-row vector over ``groups`` SECRET random groups, plus
    ``Lap(Delta/eps)`` per group sum; pure eps-DP (PrivGCM's grouped release).

    ``release(exact)`` takes the ``n`` per-row values ``v`` (``n >= groups``), draws a
    uniformly random permutation ``pi`` of the rows from the privacy generator, sums
    ``v[pi[i]]`` into group ``i mod groups`` and adds the Laplace noise of
    :class:`Laplace` (same sampler, same grid) to the ``groups`` sums. ``sensitivity``
    is the L1 sensitivity of the per-row vector under POSITIONAL neighbours (the replaced
    row keeps its position); the group sums have at most that L1 change (triangle
    inequality). Because the grouping is secret and uniform, the output's law depends on
    the rows as an unordered multiset, so the guarantee holds for unordered replace-one
    neighbours too (coupling: map the replaced row's position in one table to its
    position in the other; docs/privacy/privgcm.md, "Secret grouping"). Only the noisy
    sums are released, never ``pi``. Cost and dp-accounting event are :class:`Laplace`'s.
    """

    groups: int = 2
    kind: ClassVar[str] = "grouped-laplace"

    def __post_init__(self) -> None:
        super().__post_init__()
        _set(self, "groups", _int("groups", self.groups, 2))

    def public_params(self) -> dict[str, JSONValue]:
        return {**super().public_params(), "groups": self.groups}

    def group_sums(self, exact: Any, rng: np.random.Generator) -> FloatArray:
        """The secret grouping's sums (NOT a release: the input of the noise)."""
        v = as_exact(exact).reshape(-1)
        if v.size < self.groups:
            raise InvalidParameterError("exact", int(v.size),
                                        f"needs at least groups={self.groups} values")
        order = rng.permutation(v.size)
        sums = np.bincount(np.arange(v.size) % self.groups, weights=v[order],
                           minlength=self.groups)
        return np.asarray(sums, dtype=np.float64)

    def release(self, exact: Any, rng: np.random.Generator) -> float | FloatArray:
        sums = self.group_sums(exact, rng)
        return _output(self._noisy(sums, rng, None), False)

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> FloatArray:
        """``size`` independent releases (each with its own grouping), ``(size, groups)``."""
        return np.stack([np.asarray(self.release(exact, rng), dtype=np.float64)
                         for _ in range(_size(size))])


# ---------------------------------------------------------------------------------
# Gaussian
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gaussian:
    """``f(D) + N(0, sigma^2)`` per coordinate (Delta2 = L2 sensitivity).

    Cost: zCDP ``rho = Delta2^2/(2 sigma^2)`` (Bun-Steinke 2016, Prop. 1.6), no pure
    epsilon, so the basic rule refuses it. dp-accounting event:
    ``GaussianDpEvent(noise_multiplier=sigma/Delta2')``. Default sampler
    ``"discrete"``: the statistic is rounded to a ``2^-k`` grid and exact discrete
    Gaussian noise is added (``accounting.noise.GaussianGrid``; the grid step is
    charged in the sensitivity, the noise is at most ~0.6% larger, typically
    ``< 10^-5``); ``"float"`` is NumPy's normal sampler (audits only). Note
    ``docs/privacy/gaussian.md``.
    """

    l2_sensitivity: float
    sigma: float
    relation: Relation = Relation.REPLACE_ONE
    sampler: str = "discrete"
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        _set(self, "l2_sensitivity", _positive("l2_sensitivity", self.l2_sensitivity))
        _set(self, "sigma", _positive("sigma", self.sigma))
        _set(self, "relation", _relation(self.relation))
        _set(self, "sampler", _sampler(self.sampler))
        if self.sampler == "discrete":  # an impossible grid is an error before admission
            check_gaussian_scale(self.l2_sensitivity, self.sigma)

    @classmethod
    def for_rho(
        cls,
        l2_sensitivity: float,
        rho: float | Fraction,
        relation: Relation = Relation.REPLACE_ONE,
        sampler: str = "discrete",
    ) -> Gaussian:
        """The Gaussian mechanism with the smallest ``sigma`` of :data:`SIGMA_BITS`
        significant bits whose exact cost (under ``relation``) is at most ``rho``: ``k``
        of them fit a budget ``k rho``."""
        d2 = _positive("l2_sensitivity", l2_sensitivity)
        r = Fraction(_positive("rho", rho)) if not isinstance(rho, Fraction) else rho
        if r <= 0:
            raise InvalidParameterError("rho", rho, "must be > 0")
        sigma = round_up_bits(d2 / math.sqrt(2.0 * float(r)))
        mech = cls(d2, sigma, relation, sampler)
        while mech.rho_under(mech.relation) > r:
            sigma = round_up_bits(math.nextafter(sigma, math.inf))
            mech = cls(d2, sigma, relation, sampler)
        return mech

    @property
    def sensitivity(self) -> float:
        return self.l2_sensitivity

    def rho_under(self, relation: Relation) -> Fraction:
        d2 = Fraction(self.l2_sensitivity) * _factor(self.l2_sensitivity, self.relation, relation)
        s = Fraction(self.sigma)
        return d2 * d2 / (2 * s * s)

    def cost(self, relation: Relation) -> Cost:
        return Cost.zcdp(self.rho_under(relation))

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "l2_sensitivity": self.l2_sensitivity,
            "sigma": self.sigma,
            "relation": self.relation.value,
            "sampler": self.sampler,
        }

    def dp_event(self, relation: Relation) -> Any:
        import dp_accounting

        d2 = self.l2_sensitivity * float(_factor(self.l2_sensitivity, self.relation, relation))
        return dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma / d2)

    def grid(self, dimension: int) -> GaussianGrid:
        return GaussianGrid.build(self.l2_sensitivity, self.sigma, dimension)

    def _noisy(self, f: FloatArray, rng: np.random.Generator, size: int | None) -> FloatArray:
        if self.sampler == "discrete":
            return self.grid(max(1, f.size)).release(f, rng, size)
        shape = f.shape if size is None else (size, *f.shape)
        return f + rng.normal(0.0, self.sigma, size=shape)

    def release(self, exact: Any, rng: np.random.Generator) -> float | FloatArray:
        f = as_exact(exact)
        return _output(self._noisy(f, rng, None), f.ndim == 0)

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> FloatArray:
        """``size`` independent releases, shape ``(size, *exact.shape)``."""
        return self._noisy(as_exact(exact), rng, _size(size))


# ---------------------------------------------------------------------------------
# Report noisy max and the exponential mechanism
# ---------------------------------------------------------------------------------
def _argmax_rows(noisy: FloatArray) -> IntArray:
    out: IntArray = np.argmax(noisy, axis=-1).astype(np.int64)
    return out


@dataclass(frozen=True)
class ReportNoisyMax:
    """Index of the largest ``s_r + noise``; only the index is released.

    ``Delta`` bounds ``|s_r(D) - s_r(D')|`` for every candidate ``r``. Noise:
    ``"exponential"``: ``Expo(2 Delta/eps)`` (= permute-and-flip, Ding et al. 2021),
    drawn exactly as permute-and-flip with exact Bernoulli(exp(-x)) coins
    (:mod:`accounting.flip`);
    ``"gumbel"``: ``Gumbel(2 Delta/eps)`` (= the exponential mechanism);
    ``"laplace"``: ``Lap(2 Delta/eps)``, on the grid by default. Cost ``eps``; rho
    ``eps^2/8`` for gumbel (the exponential mechanism is eps-bounded-range,
    Cesar-Rogers 2021) and ``eps^2/2`` for exponential and laplace. Permute-and-flip
    is NOT eps-bounded-range (its Rényi divergence exceeds ``alpha eps^2/8``; see
    ``docs/privacy/report-noisy-max.md``), so PRIVACY.md's ``eps^2/8`` for it is not
    used. ``dp_event`` returns ``None``: dp-accounting 0.6.0 has no
    pure-eps event for it. Note ``docs/privacy/report-noisy-max.md``.
    """

    sensitivity: float
    epsilon: float
    noise: str = "exponential"
    relation: Relation = Relation.REPLACE_ONE
    sampler: str = "discrete"
    kind: ClassVar[str] = "report-noisy-max"

    def __post_init__(self) -> None:
        _set(self, "sensitivity", _positive("sensitivity", self.sensitivity))
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        if self.noise not in RNM_NOISES:
            raise InvalidParameterError("noise", self.noise, f"expected one of {RNM_NOISES}")
        _set(self, "relation", _relation(self.relation))
        _set(self, "sampler", _sampler(self.sampler))

    @property
    def scale(self) -> float:
        return 2.0 * self.sensitivity / self.epsilon

    def epsilon_under(self, relation: Relation) -> Fraction:
        return Fraction(self.epsilon) * _factor(self.sensitivity, self.relation, relation)

    def cost(self, relation: Relation) -> Cost:
        # Only the Gumbel variant (= the exponential mechanism) is eps-bounded-range.
        # Permute-and-flip (exponential noise) is not: see report-noisy-max.md.
        return Cost.pure(self.epsilon_under(relation), bounded_range=self.noise == "gumbel")

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "noise": self.noise,
            "relation": self.relation.value,
            "sampler": self.sampler,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: dp-accounting has no event for report-noisy-max."""
        _factor(self.sensitivity, self.relation, relation)
        return None

    def _noisy(self, s: FloatArray, rng: np.random.Generator, size: int | None) -> FloatArray:
        shape = s.shape if size is None else (size, *s.shape)
        if self.sampler == "discrete":
            # Each score moves by <= Delta; noise 2 Delta/eps per score (multiplier 2).
            grid = LaplaceGrid.build(self.sensitivity, self.epsilon, 1, multiplier=2)
            base = grid.round(s)
            count = int(np.prod(shape))
            return base + grid.noise(rng, count).reshape(shape).astype(np.float64)
        return s + float_laplace(rng, self.scale, shape)

    def _gumbel(self, s: FloatArray, rng: np.random.Generator, size: int | None) -> IntArray:
        """Winners of ``s + Gumbel(2 Delta/eps)``, exactly (``accounting.gumbel``)."""
        scale = self.scale
        return winners(gumbel_keys(s, s / scale, self.epsilon, self.sensitivity, rng,
                                   size, scale=scale))

    def release(self, exact: Any, rng: np.random.Generator) -> int:
        s = _vector(exact, "scores")
        if self.noise == "gumbel":
            return int(self._gumbel(s, rng, None)[0])
        if self.noise == "exponential":  # permute-and-flip, drawn exactly
            return permute_and_flip(s, self.epsilon, self.sensitivity, rng)
        return int(np.argmax(self._noisy(s, rng, None)))

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> IntArray:
        """``size`` independent indices (int64 array)."""
        s = _vector(exact, "scores")
        if self.noise == "gumbel":
            return self._gumbel(s, rng, _size(size))
        if self.noise == "exponential":
            return np.array([permute_and_flip(s, self.epsilon, self.sensitivity, rng)
                             for _ in range(_size(size))], dtype=np.int64)
        return _argmax_rows(self._noisy(s, rng, _size(size)))


@dataclass(frozen=True)
class Exponential:
    """The exponential mechanism: index ``r`` with probability ``∝ exp(eps u_r/(2 Delta_u))``.

    Sampled by the Gumbel-max trick (``argmax u_r + Gumbel(2 Delta_u/eps)``), which is
    exact and numerically stable for any utilities. Cost ``eps``, rho ``eps^2/8``
    (McSherry-Talwar 2007; Cesar-Rogers 2021). ``dp_event`` returns ``None``.
    Note ``docs/privacy/exponential.md``.
    """

    sensitivity: float
    epsilon: float
    relation: Relation = Relation.REPLACE_ONE
    kind: ClassVar[str] = "exponential"

    def __post_init__(self) -> None:
        _set(self, "sensitivity", _positive("sensitivity", self.sensitivity))
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        _set(self, "relation", _relation(self.relation))

    def epsilon_under(self, relation: Relation) -> Fraction:
        return Fraction(self.epsilon) * _factor(self.sensitivity, self.relation, relation)

    def cost(self, relation: Relation) -> Cost:
        return Cost.pure(self.epsilon_under(relation), bounded_range=True)

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "relation": self.relation.value,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: dp-accounting has no event for the exponential mechanism."""
        _factor(self.sensitivity, self.relation, relation)
        return None

    def probabilities(self, utilities: Any) -> FloatArray:
        """Exact selection probabilities (log-sum-exp), for tests and audits."""
        u = _vector(utilities, "utilities")
        logits = self.epsilon * u / (2.0 * self.sensitivity)
        logits -= logits.max()
        w = np.exp(logits)
        return np.asarray(w / w.sum(), dtype=np.float64)

    def _noisy(self, u: FloatArray, rng: np.random.Generator, size: int | None) -> Keys:
        logits = self.epsilon * u / (2.0 * self.sensitivity)
        return gumbel_keys(u, logits, self.epsilon, self.sensitivity, rng, size)

    def release(self, exact: Any, rng: np.random.Generator) -> int:
        u = _vector(exact, "utilities")
        return int(winners(self._noisy(u, rng, None))[0])

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> IntArray:
        u = _vector(exact, "utilities")
        return winners(self._noisy(u, rng, _size(size)))


@dataclass(frozen=True)
class TopK:
    """One-shot top-``k`` selection: the indices of the ``k`` largest
    ``eps u_r/(2 Delta_u) + Gumbel(1)``, in decreasing order.

    Its output has the law of ``k`` rounds of peeling with :class:`Exponential`
    (``eps`` each) on the indices not yet chosen (Durfee-Rogers 2019, Lemma 4.2), so
    it costs what ``k`` adaptively composed exponential mechanisms cost: ``k eps``
    pure, rho ``k eps^2/8`` (each is ``eps``-bounded-range, Cesar-Rogers 2021). With
    ``k`` at least the number of utilities every index is returned, in noisy order
    (the same peeling, run to the end). ``Delta_u`` bounds the change of every
    utility between neighbours (non-monotone utilities allowed).
    Note ``docs/privacy/top-k.md``.
    """

    sensitivity: float
    epsilon: float
    k: int
    relation: Relation = Relation.REPLACE_ONE
    kind: ClassVar[str] = "top-k"

    def __post_init__(self) -> None:
        _set(self, "sensitivity", _positive("sensitivity", self.sensitivity))
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        _set(self, "k", _int("k", self.k, 1))
        _set(self, "relation", _relation(self.relation))

    def epsilon_under(self, relation: Relation) -> Fraction:
        """One selection's epsilon under ``relation``."""
        return Fraction(self.epsilon) * _factor(self.sensitivity, self.relation, relation)

    def cost(self, relation: Relation) -> Cost:
        return Cost.pure(self.epsilon_under(relation), bounded_range=True).times(self.k)

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "k": self.k,
            "relation": self.relation.value,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: dp-accounting has no event for the exponential mechanism."""
        _factor(self.sensitivity, self.relation, relation)
        return None

    def _keys(self, u: FloatArray, rng: np.random.Generator, size: int | None) -> Keys:
        """Gumbel-max keys ``eps u_r/(2 Delta_u) + G_r``, as in :class:`Exponential`
        (named apart from ``Exponential._noisy`` so that each has its own anchor in
        ``audits/mutate/catalogue.py``)."""
        logits = self.epsilon * u / (2.0 * self.sensitivity)
        return gumbel_keys(u, logits, self.epsilon, self.sensitivity, rng, size)

    def _top(self, keys: Keys) -> IntArray:
        """Per row, the indices of the ``k`` largest exact keys, in decreasing order."""
        return top(keys, min(self.k, keys.keys.shape[-1]))

    def release(self, exact: Any, rng: np.random.Generator) -> IntArray:
        u = _vector(exact, "utilities")
        out: IntArray = self._top(self._keys(u, rng, None))[0]
        return out

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> IntArray:
        """``size`` independent releases, one per row (shape ``(size, min(k, len))``)."""
        u = _vector(exact, "utilities")
        return self._top(self._keys(u, rng, _size(size)))


def group_digest(labels: IntArray) -> str:
    """SHA-256 of the group labels as little-endian int64 (what a ledger stores)."""
    return hashlib.sha256(np.ascontiguousarray(labels, dtype="<i8").tobytes()).hexdigest()


def _labels(groups: object) -> IntArray:
    try:
        arr = np.asarray(groups)
    except (TypeError, ValueError) as err:
        raise InvalidParameterError("groups", type(groups).__name__,
                                    "must be a 1-D array of integers") from err
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise InvalidParameterError("groups", f"shape {arr.shape}, dtype {arr.dtype}",
                                    "must be a non-empty 1-D array of integers")
    if int(arr.min()) < 0:
        raise InvalidParameterError("groups", "a negative label", "labels must be >= 0")
    out = np.array(arr, dtype=np.int64)  # a copy, frozen: the digest stays its digest
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class GroupTopK(TopK):
    """Top-``k`` over candidates in public groups, at most one per group: the law of
    ``k`` rounds of peeling with :class:`Exponential` (``eps`` each) where a chosen
    candidate's whole group leaves the pool (EM-PC's picks: a removed pair takes its
    other conditioning sets with it).

    Sampled in one pass: the keys ``eps u_r/(2 Delta_u) + Gumbel(1)`` of
    :class:`TopK`, walked in decreasing order, keeping each group's first candidate,
    until ``k`` are kept. By the exponential-race form of the Gumbel-max trick and the
    memorylessness of the exponential distribution, each kept candidate is an
    exponential-mechanism draw over the candidates whose group is still open, whatever
    was kept before; so it costs what :class:`TopK` costs (``k eps`` pure, rho
    ``k eps^2/8``). The group labels are public (fixed before the data is read) and are
    stored as their count and SHA-256 (:func:`group_digest`); a mechanism rebuilt from
    stored parameters declares the same cost but cannot release. Build one with
    :meth:`over`. Note ``docs/privacy/group-top-k.md``.
    """

    groups_sha256: str = ""
    candidates: int = 0
    kind: ClassVar[str] = "group-top-k"
    labels: IntArray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        digest = self.groups_sha256
        if not (isinstance(digest, str) and len(digest) == 64
                and all(c in "0123456789abcdef" for c in digest)):
            raise InvalidParameterError("groups_sha256", digest, "must be a SHA-256 hex digest")
        _set(self, "candidates", _int("candidates", self.candidates, 1))

    @classmethod
    def over(cls, groups: object, sensitivity: float, epsilon: float, k: int,
             relation: Relation = Relation.REPLACE_ONE) -> GroupTopK:
        """The mechanism for the public labels ``groups`` (one per candidate)."""
        labels = _labels(groups)
        mech = cls(sensitivity, epsilon, k, relation, group_digest(labels), int(labels.size))
        _set(mech, "labels", labels)
        return mech

    def public_params(self) -> dict[str, JSONValue]:
        return {**super().public_params(), "groups_sha256": self.groups_sha256,
                "candidates": self.candidates}

    def _firsts(self, order: IntArray) -> IntArray:
        """Per row of ``order`` (key indices, decreasing), the positions of each group's
        first candidate, increasing (vectorised over rows: a group's first position is
        the smallest position among its candidates)."""
        labels = self.labels
        assert labels is not None
        pos = np.empty_like(order)
        np.put_along_axis(pos, order, np.arange(order.shape[1])[None, :], axis=1)
        by_group = np.argsort(labels, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(labels[by_group]) != 0])
        first = np.minimum.reduceat(pos[:, by_group], starts, axis=1)
        first.sort(axis=1)
        return np.asarray(first, dtype=np.int64)

    def _walk(self, keys: Keys) -> IntArray:
        """Each row's exact keys walked in decreasing order, keeping each group's first
        candidate, the first ``k`` kept (certain up to the ``k``-th kept)."""
        def prefix(order: IntArray) -> IntArray:
            first = self._firsts(order)
            return np.asarray(first[:, min(self.k, first.shape[1]) - 1] + 1, dtype=np.int64)

        order = orders(keys, prefix)
        first = self._firsts(order)
        return np.take_along_axis(order, first[:, : self.k], axis=1).astype(np.int64)

    def _utilities(self, exact: Any) -> FloatArray:
        if self.labels is None:
            raise MechanismStateError(
                "group-top-k: rebuilt from stored parameters, it has no group labels and "
                "cannot release (build it with GroupTopK.over)")
        u = _vector(exact, "utilities")
        if u.size != self.candidates:
            raise StatisticError(
                f"utilities: expected {self.candidates} values (one per candidate), got "
                f"{u.size}")
        return u

    def release(self, exact: Any, rng: np.random.Generator) -> IntArray:
        u = self._utilities(exact)
        out: IntArray = self._walk(self._keys(u, rng, None))[0]
        return out

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> IntArray:
        """``size`` independent releases, one per row (shape ``(size, min(k, groups))``)."""
        u = self._utilities(exact)
        return self._walk(self._keys(u, rng, _size(size)))


# ---------------------------------------------------------------------------------
# Smooth-sensitivity median
# ---------------------------------------------------------------------------------
def dilation_defect(epsilon: float, delta: float) -> float:
    """Tail mass of ``Lap(1)`` outside the dilation-good set at ``|lambda| = beta``.

    With ``beta = eps/(2 ln(2/delta))`` the Laplace density satisfies the dilation
    condition of NRS 2007 (Def. 2.5) with slack ``delta/2`` iff this is ``<= delta/2``
    (``docs/privacy/smooth-sensitivity-median.md``).
    """
    beta = epsilon / (2.0 * math.log(2.0 / delta))
    return math.exp(-(epsilon / 2.0 + beta) / math.expm1(beta))


def smooth_sensitivity_median(
    values: FloatArray, lower: float, upper: float, beta: float
) -> float:
    """Exact ``beta``-smooth sensitivity of the (lower) median of ``values`` clipped to
    ``[lower, upper]`` (Nissim, Raskhodnikova & Smith 2007, Prop. 3.4):

    ``S* = max_{k>=0} e^{-k beta} max_{0<=t<=k+1} (x_{m+t} - x_{m+t-k-1})`` with the
    sorted clipped values ``x_1..x_n``, ``m = floor((n+1)/2)``, ``x_i = lower`` for
    ``i < 1`` and ``x_i = upper`` for ``i > n``. Vectorised over (k, t) in chunks; the
    scan stops once ``e^{-k beta}(upper - lower)`` cannot beat the maximum so far.
    """
    x = np.sort(np.clip(np.asarray(values, dtype=np.float64), lower, upper))
    n = x.shape[0]
    m = (n + 1) // 2  # 1-based rank of the lower median
    pad = n + 2
    # padded[j + pad - 1] = x_j for 1-based j in [1 - pad, n + pad]
    padded = np.concatenate([np.full(pad, lower), x, np.full(pad, upper)])
    width = upper - lower
    best = 0.0
    k_max = n + 1  # for k >= n+1 every window is [lower, upper]: e^{-k beta} width
    chunk = max(1, (1 << 21) // (k_max + 2))
    for k0 in range(0, k_max + 1, chunk):
        if math.exp(-k0 * beta) * width <= best:
            break
        ks = np.arange(k0, min(k0 + chunk, k_max + 1), dtype=np.int64)
        ts = np.arange(0, int(ks[-1]) + 2, dtype=np.int64)
        hi = m + ts[None, :]  # 1-based index m + t
        lo = hi - ks[:, None] - 1
        diff = padded[hi + pad - 1] - padded[lo + pad - 1]
        diff = np.where(ts[None, :] <= ks[:, None] + 1, diff, -np.inf)
        a_k = diff.max(axis=1)
        best = max(best, float(np.max(np.exp(-ks * beta) * a_k)))
    return best


@dataclass(frozen=True)
class SmoothSensitivityMedian:
    """Median of block values clipped to public ``[lower, upper]`` plus
    ``(2 S*_beta/eps) Lap(1)``, ``beta = eps/(2 ln(2/delta))`` (NRS 2007).

    (eps, delta)-DP under replace-one of one block value (the blocks are a fixed
    partition of the rows, so replacing a row changes at most one block value). No
    zCDP bound, so the zcdp rule refuses it. ``dp_event`` returns ``None``.
    The admissibility of Laplace noise needs ``delta <= 2/e`` and the dilation
    condition checked by :func:`dilation_defect`; parameters violating it are refused.
    Note ``docs/privacy/smooth-sensitivity-median.md``.
    """

    epsilon: float
    delta: float
    lower: float
    upper: float
    relation: Relation = Relation.REPLACE_ONE
    kind: ClassVar[str] = "smooth-sensitivity-median"

    def __post_init__(self) -> None:
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        _set(self, "delta", _delta("delta", self.delta, positive=True))
        _set(self, "lower", _real("lower", self.lower))
        _set(self, "upper", _real("upper", self.upper))
        if not self.upper > self.lower:
            raise InvalidParameterError("upper", self.upper, "must be > lower")
        _set(self, "relation", _relation(self.relation))
        if self.relation is not Relation.REPLACE_ONE:
            raise InvalidParameterError(
                "relation", self.relation.value, "the smooth median is analysed under replace-one"
            )
        if self.delta > 2.0 / math.e:
            raise InvalidParameterError("delta", self.delta, "must be <= 2/e for Laplace noise")
        if dilation_defect(self.epsilon, self.delta) > self.delta / 2.0:
            raise InvalidParameterError(
                "epsilon",
                self.epsilon,
                "too large for this delta: Laplace noise is not (eps/2, beta)-dilation "
                "admissible (see docs/privacy/smooth-sensitivity-median.md)",
            )

    @property
    def sensitivity(self) -> None:
        return None

    @property
    def beta(self) -> float:
        return self.epsilon / (2.0 * math.log(2.0 / self.delta))

    def cost(self, relation: Relation) -> Cost:
        if _relation(relation) is not Relation.REPLACE_ONE:
            raise InvalidParameterError(
                "relation", relation, "the smooth median is analysed under replace-one only"
            )
        return Cost.approximate(self.epsilon, self.delta)

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "lower": self.lower,
            "upper": self.upper,
            "relation": self.relation.value,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: there is no dp-accounting event for smooth-sensitivity noise."""
        self.cost(relation)
        return None

    def median(self, values: FloatArray) -> float:
        x = np.sort(np.clip(values, self.lower, self.upper))
        return float(x[(x.shape[0] + 1) // 2 - 1])

    def smooth_sensitivity(self, values: Any) -> float:
        v = _vector(values, "block values")
        return smooth_sensitivity_median(v, self.lower, self.upper, self.beta)

    def release(self, exact: Any, rng: np.random.Generator) -> float:
        v = _vector(exact, "block values")
        s = smooth_sensitivity_median(v, self.lower, self.upper, self.beta)
        return self.median(v) + (2.0 * s / self.epsilon) * float(rng.laplace(0.0, 1.0))

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> FloatArray:
        v = _vector(exact, "block values")
        s = smooth_sensitivity_median(v, self.lower, self.upper, self.beta)
        return self.median(v) + (2.0 * s / self.epsilon) * rng.laplace(0.0, 1.0, _size(size))


# ---------------------------------------------------------------------------------
# Sparse vector (Lyu, Su & Li 2017, Alg. 1) and its subsampled variant
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _SvtNoise:
    """Threshold/query noise of one SVT configuration (grid or float)."""

    threshold: float
    threshold_scale: float
    query_scale: float
    grid_threshold: LaplaceGrid | None
    grid_query: LaplaceGrid | None

    def draw_threshold(self, rng: np.random.Generator, size: int) -> FloatArray:
        if self.grid_threshold is not None:
            base = self.grid_threshold.round(np.asarray(self.threshold))
            return base + self.grid_threshold.noise(rng, size).astype(np.float64)
        return self.threshold + rng.laplace(0.0, self.threshold_scale, size)

    def noisy_queries(self, answers: FloatArray, rng: np.random.Generator) -> FloatArray:
        if self.grid_query is not None:
            base = self.grid_query.round(answers)
            return base + self.grid_query.noise(rng, answers.size).reshape(answers.shape)
        return answers + rng.laplace(0.0, self.query_scale, answers.shape)


@dataclass(frozen=True)
class SparseVector:
    """AboveThreshold with cutoff ``c`` (Lyu, Su & Li 2017, Algorithm 1).

    ``eps1 = eps2 = eps/2``; threshold noise ``Lap(Delta/eps1)``; query noise
    ``Lap(2 c Delta/eps2)`` (``Lap(c Delta/eps2)`` for monotone queries); answers
    ``q_i + nu_i >= T + rho`` with one threshold draw per instance (never refreshed);
    halts after ``c`` positives. Cost ``eps`` (rho ``eps^2/2``), charged when the
    instance starts. Only the booleans are released. ``dp_event`` returns ``None``.
    Default noise: exact discrete Laplace on a grid (``sampler="discrete"``).
    Note ``docs/privacy/sparse-vector.md``.
    """

    threshold: float
    sensitivity: float
    epsilon: float
    cutoff: int = 1
    monotone: bool = False
    relation: Relation = Relation.REPLACE_ONE
    sampler: str = "discrete"
    kind: ClassVar[str] = "sparse-vector"

    def __post_init__(self) -> None:
        _set(self, "threshold", _real("threshold", self.threshold))
        _set(self, "sensitivity", _positive("sensitivity", self.sensitivity))
        _set(self, "epsilon", _positive("epsilon", self.epsilon))
        _set(self, "cutoff", _int("cutoff", self.cutoff, 1))
        if not isinstance(self.monotone, bool):
            raise InvalidParameterError("monotone", self.monotone, "must be a bool")
        _set(self, "relation", _relation(self.relation))
        _set(self, "sampler", _sampler(self.sampler))

    @property
    def epsilon1(self) -> float:
        return self.epsilon / 2.0

    @property
    def epsilon2(self) -> float:
        return self.epsilon - self.epsilon1

    @property
    def threshold_scale(self) -> float:
        return self.sensitivity / self.epsilon1

    @property
    def query_scale(self) -> float:
        c = self.cutoff if self.monotone else 2 * self.cutoff
        return c * self.sensitivity / self.epsilon2

    def epsilon_under(self, relation: Relation) -> Fraction:
        return Fraction(self.epsilon) * _factor(self.sensitivity, self.relation, relation)

    def cost(self, relation: Relation) -> Cost:
        return Cost.pure(self.epsilon_under(relation))

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "threshold": self.threshold,
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "cutoff": self.cutoff,
            "monotone": self.monotone,
            "relation": self.relation.value,
            "sampler": self.sampler,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: dp-accounting has no event for the sparse vector technique."""
        _factor(self.sensitivity, self.relation, relation)
        return None

    def noise_plan(self) -> _SvtNoise:
        if self.sampler == "discrete":
            # Threshold: scale Delta/eps1 over the (rounded) query sensitivity.
            gt = LaplaceGrid.build(self.sensitivity, self.epsilon1, 1)
            mult = self.cutoff if self.monotone else 2 * self.cutoff
            gq = LaplaceGrid.build(self.sensitivity, self.epsilon2, 1, multiplier=mult)
            # Both grids must be the same for comparisons: take the finer one's step
            # for both (rebuild the coarser with the same exponent when needed).
            if gt.exponent != gq.exponent:
                gt, gq = _common_grid(self.sensitivity, self.epsilon1, self.epsilon2, mult)
            return _SvtNoise(self.threshold, self.threshold_scale, self.query_scale, gt, gq)
        return _SvtNoise(self.threshold, self.threshold_scale, self.query_scale, None, None)

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> npt.NDArray[np.int8]:
        """Vectorised simulation of ``size`` independent runs over fixed ``answers``.

        Returns ``(size, len(answers))`` int8: 1 = above, 0 = below, -1 = not asked
        (the run had halted after ``cutoff`` positives).
        """
        answers = _vector(exact, "answers")
        return _simulate_svt(self.noise_plan(), answers, self.cutoff, rng, _size(size))


def _common_grid(
    sensitivity: float, eps1: float, eps2: float, mult: int
) -> tuple[LaplaceGrid, LaplaceGrid]:
    """Threshold and query grids with one common step (the larger exponent)."""
    gt = LaplaceGrid.build(sensitivity, eps1, 1)
    gq = LaplaceGrid.build(sensitivity, eps2, 1, multiplier=mult)
    exponent = max(gt.exponent, gq.exponent)
    return (
        _grid_at(sensitivity, eps1, 1, exponent),
        _grid_at(sensitivity, eps2, mult, exponent),
    )


def _grid_at(sensitivity: float, epsilon: float, mult: int, exponent: int) -> LaplaceGrid:
    from accounting.noise import MAX_SCALE_BITS

    g = Fraction(2) ** exponent
    grid_sens = mult * (math.floor(Fraction(sensitivity) / g) + 1)
    required = Fraction(grid_sens) / Fraction(epsilon)
    shift = max(0, MAX_SCALE_BITS - math.ceil(required).bit_length())
    s = 2**shift
    t = math.ceil(required * s)
    return LaplaceGrid(exponent=exponent, t=t, s=s, grid_sensitivity=grid_sens)


def _simulate_svt(
    plan: _SvtNoise, answers: FloatArray, cutoff: int, rng: np.random.Generator, size: int
) -> npt.NDArray[np.int8]:
    rho = plan.draw_threshold(rng, size)
    noisy = plan.noisy_queries(np.broadcast_to(answers, (size, answers.shape[-1])).copy(), rng)
    pos = noisy >= rho[:, None]
    before: IntArray = np.cumsum(pos, axis=1) - pos  # positives before query i
    asked = before < cutoff
    return np.where(asked, pos, -1).astype(np.int8)


@dataclass(frozen=True)
class SubsampledSparseVector:
    """SVT(cutoff 1) on ``m`` of ``n`` rows drawn without replacement by the primitive.

    ``sensitivity`` is the statistic's sensitivity on ``m`` rows. The base mechanism is
    ``SparseVector(threshold, sensitivity, epsilon, cutoff=1)``; its cost is amplified
    by sampling without replacement under replace-one (Balle, Barthe & Gaboardi 2018,
    Thm. 9): ``eps' = ln(1 + (m/n)(e^eps - 1))``, rounded up. Only replace-one (after
    explicit conversion of an add/remove sensitivity). ``dp_event`` returns ``None``.
    Note ``docs/privacy/subsampled-sparse-vector.md``.
    """

    n: int
    m: int
    threshold: float
    sensitivity: float
    epsilon: float
    monotone: bool = False
    relation: Relation = Relation.REPLACE_ONE
    sampler: str = "discrete"
    kind: ClassVar[str] = "subsampled-sparse-vector"
    base: SparseVector = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "n", _int("n", self.n, 1))
        _set(self, "m", _int("m", self.m, 1))
        if self.m > self.n:
            raise InvalidParameterError("m", self.m, f"must be <= n = {self.n}")
        base = SparseVector(
            self.threshold, self.sensitivity, self.epsilon, 1, self.monotone, self.relation,
            self.sampler,
        )
        _set(self, "threshold", base.threshold)
        _set(self, "sensitivity", base.sensitivity)
        _set(self, "epsilon", base.epsilon)
        _set(self, "relation", base.relation)
        _set(self, "sampler", base.sampler)
        _set(self, "base", base)

    @property
    def cutoff(self) -> int:
        return 1

    def epsilon_under(self, relation: Relation) -> Fraction:
        relation = _relation(relation)
        if relation is not Relation.REPLACE_ONE:
            raise InvalidParameterError(
                "relation",
                relation.value,
                "sampling without replacement is analysed under replace-one only",
            )
        base_eps = float(self.base.epsilon_under(relation))
        amplified = math.log1p((self.m / self.n) * math.expm1(base_eps))
        return Fraction(round_up(Fraction(amplified) * (1 + AMPLIFICATION_SLACK)))

    def cost(self, relation: Relation) -> Cost:
        return Cost.pure(self.epsilon_under(relation))

    def public_params(self) -> dict[str, JSONValue]:
        return {
            "n": self.n,
            "m": self.m,
            "threshold": self.threshold,
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "monotone": self.monotone,
            "relation": self.relation.value,
            "sampler": self.sampler,
        }

    def dp_event(self, relation: Relation) -> None:
        """``None``: dp-accounting has no event for (subsampled) SVT."""
        self.epsilon_under(relation)
        return None

    def draw_subsample(self, rng: np.random.Generator) -> IntArray:
        """Sorted int64 row indices of a uniform ``m``-subset of ``range(n)``.

        ``shuffle=False``: the subset is uniform either way and is sorted here; without
        the shuffle, NumPy samples small subsets by Floyd's algorithm over a hash set
        (~100 KB) instead of a partial shuffle of ``arange(n)`` (8 n bytes per draw,
        which evicts the caches that the rest of a Priv-PC round works in)."""
        return np.sort(rng.choice(self.n, size=self.m, replace=False, shuffle=False)).astype(
            np.int64, copy=False)

    def draw_subsamples(self, rng: np.random.Generator, size: int) -> IntArray:
        """``(size, m)`` independent subsamples (vectorised; for audits)."""
        keys = rng.random((_size(size), self.n))
        idx = np.argpartition(keys, self.m - 1, axis=1)[:, : self.m]
        return np.sort(idx, axis=1).astype(np.int64)

    def sample(self, exact: Any, rng: np.random.Generator, size: int) -> npt.NDArray[np.int8]:
        """Simulated runs of the base SVT on given answers: ``answers`` of shape ``(L,)``
        (the same for every run) or ``(size, L)`` (one row per run, computed by the
        caller on the subsamples from :meth:`draw_subsamples`)."""
        k = _size(size)
        arr = np.asarray(exact, dtype=np.float64)
        if arr.ndim == 2:
            if arr.shape[0] != k or not np.all(np.isfinite(arr)) or arr.shape[1] == 0:
                raise StatisticError(f"answers: expected finite ({k}, L) array, got {arr.shape}")
            plan = self.base.noise_plan()
            rho = plan.draw_threshold(rng, k)
            noisy = plan.noisy_queries(arr.copy(), rng)
            pos = noisy >= rho[:, None]
            before: IntArray = np.cumsum(pos, axis=1) - pos
            return np.where(before < 1, pos, -1).astype(np.int8)
        return self.base.sample(arr, rng, k)


class SparseVectorRun:
    """A started SVT instance (created by :meth:`accounting.session.Session.start`).

    The threshold noise is drawn once, at start. ``test(compute)`` evaluates the exact
    query (``compute()`` for :class:`SparseVector`, ``compute(indices)`` with the
    subsample's row indices for :class:`SubsampledSparseVector`), adds query noise and
    answers above/below. After ``cutoff`` positives the run halts; testing a halted
    run raises :class:`~accounting.errors.MechanismStateError` without calling
    ``compute``.
    """

    def __init__(
        self,
        mechanism: SparseVector | SubsampledSparseVector,
        rng: np.random.Generator,
        sequence: int | None = None,
        on_answer: Callable[[SparseVectorRun, bool], None] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.sequence = sequence
        self._rng = rng
        base = mechanism.base if isinstance(mechanism, SubsampledSparseVector) else mechanism
        self._cutoff = base.cutoff
        self._plan = base.noise_plan()
        self.indices: IntArray | None = None
        if isinstance(mechanism, SubsampledSparseVector):
            self.indices = mechanism.draw_subsample(rng)
        grid = self._plan.grid_threshold
        if grid is not None:  # the array path's value, bit for bit (scalar path)
            self._noisy_threshold = grid.noisy_index(self._plan.threshold, rng)
        else:
            self._noisy_threshold = float(self._plan.draw_threshold(rng, 1)[0])
        self.positives = 0
        self.queries = 0
        self.answers: list[bool] = []
        self._on_answer = on_answer

    @property
    def halted(self) -> bool:
        return self.positives >= self._cutoff

    def test(self, compute: Callable[..., Any]) -> bool:
        if self.halted:
            raise MechanismStateError(
                f"{self.mechanism.kind} run halted after {self.positives} positive(s); "
                "start a new instance"
            )
        raw = compute() if self.indices is None else compute(self.indices)
        x = _finite_scalar(raw)
        grid = self._plan.grid_query
        if x is not None and grid is not None:
            noisy = grid.noisy_index(x, self._rng)  # the array path's value, bit for bit
        else:
            q = as_exact(raw, "query answer", vector_ok=False)
            noisy = float(self._plan.noisy_queries(q.reshape(1), self._rng)[0])
        above = noisy >= self._noisy_threshold
        self.queries += 1
        if above:
            self.positives += 1
        self.answers.append(bool(above))
        if self._on_answer is not None:
            self._on_answer(self, bool(above))
        return bool(above)


# ---------------------------------------------------------------------------------
# Rebuilding from stored parameters
# ---------------------------------------------------------------------------------
MECHANISMS: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        Laplace,
        GroupedLaplace,
        Gaussian,
        ReportNoisyMax,
        Exponential,
        TopK,
        GroupTopK,
        SmoothSensitivityMedian,
        SparseVector,
        SubsampledSparseVector,
    )
}


def mechanism_from_params(kind: str, params: Mapping[str, JSONValue]) -> Any:
    """Rebuild a mechanism from its stored ``kind`` and ``public_params()``.

    Unknown kinds, missing or extra parameters raise
    :class:`~accounting.errors.InvalidParameterError`; values are validated by the
    mechanism's constructor. The ledger's verifier uses this to re-derive costs.
    """
    cls = MECHANISMS.get(kind)
    if cls is None:
        raise InvalidParameterError("mechanism", kind, f"unknown kind; known: {sorted(MECHANISMS)}")
    if not isinstance(params, Mapping):
        raise InvalidParameterError("params", params, "must be a mapping")
    fields = {f.name for f in cls.__dataclass_fields__.values() if f.init}
    unknown = set(params) - fields
    if unknown:
        raise InvalidParameterError("params", sorted(unknown), f"unknown parameters for {kind}")
    try:
        return cls(**dict(params))
    except TypeError as err:
        raise InvalidParameterError(
            "params", dict(params), f"incomplete for {kind}: {err}"
        ) from err
