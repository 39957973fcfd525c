"""Privacy costs and budgets with exact, conservative arithmetic.

A :class:`Cost` describes what one mechanism (or a composition) spends under each
accounting rule that applies to it:

* ``epsilon`` / ``delta``: an (eps, delta)-DP bound (``delta == 0`` for pure DP);
  ``epsilon is None`` when the mechanism has no such bound on its own (Gaussian).
* ``rho``: a zCDP bound; ``None`` when the mechanism is not zCDP (smooth-sensitivity
  median, which is only approximate DP).

All components are stored as exact :class:`fractions.Fraction` values. A float given
by the caller is converted to the exact rational it represents, so sums never lose
precision: totals are exact, and whatever rounding is unavoidable (logarithms and
square roots in conversions) is done against the user (costs and spent round up,
budgets and remaining round down). A budget split into ``k`` equal parts with
:func:`split_epsilon` fits exactly: each part is the largest float not above
``total / k``, so ``k`` parts sum to at most ``total`` in exact arithmetic.

See ``docs/privacy/costs-and-filter.md``.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from fractions import Fraction

from accounting.errors import InvalidParameterError

Number = float | int | Fraction

#: Relative slack used when a conversion needs transcendental functions (log, sqrt).
#: Float ``log``/``sqrt`` are accurate to a few ulps (~1e-16 relative); 1e-12 covers
#: them with a wide margin while being negligible for any practical budget.
CONVERSION_SLACK = 1e-12


def exact(value: Number, name: str, *, allow_zero: bool = True) -> Fraction:
    """The exact rational value of a finite, non-negative number (validated)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise InvalidParameterError(name, value, "must be a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParameterError(name, value, "must be finite")
    if not isinstance(value, float):
        # an int or Fraction beyond the float range (e.g. 10**400) is exact but would
        # overflow every later float conversion (displays, zCDP conversions, checks)
        try:
            float(value)
        except OverflowError:
            raise _beyond_float(name, value) from None
    q = Fraction(value)
    if q < 0 or (q == 0 and not allow_zero):
        requirement = "must be > 0" if not allow_zero else "must be >= 0"
        raise InvalidParameterError(name, value, requirement)
    return q


def _beyond_float(name: str, value: int | Fraction) -> InvalidParameterError:
    """The error for a number too large for a float, naming its magnitude (the digits of
    such a number can be too many to print: ``int`` refuses ``repr`` above 4300)."""
    q = Fraction(value)
    exponent = math.floor(math.log10(abs(q.numerator)) - math.log10(q.denominator))
    sign = "-" if q < 0 else ""
    return InvalidParameterError(
        name, f"{sign}{type(value).__name__} ~1e{exponent}",
        f"must be finite as a float (at most {sys.float_info.max!r})")


def round_up(q: Fraction) -> float:
    """The smallest float not below ``q``."""
    f = float(q)
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def round_down(q: Fraction) -> float:
    """The largest float not above ``q``."""
    f = float(q)
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def _display(q: Fraction | None) -> float | None:
    """``q`` rounded up to a float; ``None`` for ``None`` or beyond the float range."""
    if q is None:
        return None
    try:
        return round_up(q)
    except OverflowError:
        return None


def _opt_add(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    if a is None or b is None:
        return None
    # exact either way; skipping a zero saves a Fraction addition (a gcd) in hot loops
    return a if not b else b if not a else a + b


@dataclass(frozen=True)
class Cost:
    """The privacy cost of one mechanism (or of a composition) under each rule.

    Composition with ``+`` is basic composition componentwise: epsilons add, deltas
    add, rhos add; a component that is ``None`` on either side is ``None`` in the sum
    (the composition has no bound of that kind). Both rules are valid under fully
    adaptive composition when enforced by a filter (see :mod:`accounting.filter`).
    """

    epsilon: Fraction | None
    delta: Fraction
    rho: Fraction | None

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta", "rho"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, Fraction) or v < 0):
                raise InvalidParameterError(name, v, "must be a non-negative Fraction or None")
        if self.delta >= 1:
            raise InvalidParameterError("delta", self.delta, "must be < 1")
        if self.epsilon is None and self.rho is None:
            raise InvalidParameterError("cost", self, "needs an (eps, delta) or a zCDP bound")

    # -- constructors ---------------------------------------------------------------
    @classmethod
    def zero(cls) -> Cost:
        return cls(Fraction(0), Fraction(0), Fraction(0))

    @classmethod
    def pure(cls, epsilon: Number, *, bounded_range: bool = False) -> Cost:
        """Pure ``eps``-DP. Its zCDP bound is ``eps^2/2`` (Bun-Steinke 2016, Prop. 1.4),
        or ``eps^2/8`` for bounded-range mechanisms such as the exponential mechanism
        (Cesar-Rogers 2021, Lemma 3.2)."""
        e = exact(epsilon, "epsilon")
        rho = e * e / (8 if bounded_range else 2)
        return cls(e, Fraction(0), rho)

    @classmethod
    def approximate(cls, epsilon: Number, delta: Number) -> Cost:
        """(eps, delta)-DP with no zCDP bound."""
        e = exact(epsilon, "epsilon")
        d = exact(delta, "delta")
        if d >= 1:
            raise InvalidParameterError("delta", delta, "must be in [0, 1)")
        return cls(e, d, None)

    @classmethod
    def zcdp(cls, rho: Number) -> Cost:
        """rho-zCDP with no pure/approximate bound of its own (e.g. Gaussian)."""
        return cls(None, Fraction(0), exact(rho, "rho"))

    # -- arithmetic -----------------------------------------------------------------
    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        delta = _opt_add(self.delta, other.delta)
        assert delta is not None
        return Cost(_opt_add(self.epsilon, other.epsilon), delta, _opt_add(self.rho, other.rho))

    def times(self, k: int) -> Cost:
        """Basic composition of ``k`` copies (exact)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidParameterError("k", k, "must be an integer >= 0")
        return Cost(
            None if self.epsilon is None else self.epsilon * k,
            self.delta * k,
            None if self.rho is None else self.rho * k,
        )

    @property
    def is_pure(self) -> bool:
        return self.epsilon is not None and self.delta == 0

    def dominates(self, other: Cost) -> bool:
        """True when every bound of ``self`` is at least the corresponding bound of ``other``."""
        eps_ok = other.epsilon is None or (
            self.epsilon is not None and self.epsilon >= other.epsilon
        )
        rho_ok = other.rho is None or (self.rho is not None and self.rho >= other.rho)
        return eps_ok and rho_ok and self.delta >= other.delta

    def as_dict(self) -> dict[str, str | None]:
        """Exact JSON-friendly form (fractions as ``"p/q"`` strings)."""
        return {
            "epsilon": None if self.epsilon is None else str(self.epsilon),
            "delta": str(self.delta),
            "rho": None if self.rho is None else str(self.rho),
        }

    @classmethod
    def from_dict(cls, data: dict[str, str | None]) -> Cost:
        def parse(key: str) -> Fraction | None:
            v = data.get(key)
            return None if v is None else Fraction(v)

        delta = parse("delta")
        return cls(parse("epsilon"), Fraction(0) if delta is None else delta, parse("rho"))

    def summary(self) -> dict[str, float | None]:
        """Floats rounded up (for display; never feed these back into accounting).

        ``None`` for a component the cost does not have, or one beyond the float range
        (the zCDP bound ``eps^2/2`` of a pure cost with ``eps`` above ~1.3e154)."""
        return {
            "epsilon": _display(self.epsilon),
            "delta": _display(self.delta),
            "rho": _display(self.rho),
        }


@dataclass(frozen=True)
class Budget:
    """A user-facing (eps, delta) budget: ``eps > 0`` finite, ``0 <= delta < 1``."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        exact(self.epsilon, "epsilon", allow_zero=False)
        d = exact(self.delta, "delta")
        if d >= 1:
            raise InvalidParameterError("delta", self.delta, "must be in [0, 1)")

    @functools.cached_property
    def epsilon_exact(self) -> Fraction:
        return Fraction(self.epsilon)

    @functools.cached_property
    def delta_exact(self) -> Fraction:
        return Fraction(self.delta)

    def rho(self, delta_reserved: Number = 0) -> Fraction:
        """The largest zCDP rho whose conversion fits in this budget (rounded down).

        ``rho_for_budget(eps, delta - delta_reserved)``: the largest rho (rounded down)
        for which :func:`zcdp_to_epsilon` at ``delta' = delta - delta_reserved`` is at
        most ``eps``. Requires ``delta' > 0``.
        """
        return rho_for_budget(self.epsilon_exact, self.delta_exact - exact(delta_reserved, "delta"))

    def as_dict(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}


#: Search range of ``log(alpha - 1)`` for the Renyi order of the zCDP conversion. Any
#: order ``alpha > 1`` gives a valid bound; the range only limits how close to the
#: optimum the search can get (the optimum lies far inside it for every budget with
#: ``1e-300 < delta < 1`` and ``1e-12 < rho < 1e6``).
_LOG_ORDER_RANGE = (-25.0, 35.0)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _renyi_conversion(rho: float, log_inv_delta: float, log_order_m1: float) -> float:
    """Upper bound on eps from ``rho``-zCDP at one Renyi order ``alpha = 1 + e^u``.

    ``rho``-zCDP is ``(alpha, alpha rho)``-RDP for every ``alpha > 1``, and
    ``(alpha, tau)``-RDP implies ``(eps, delta)``-DP with
    ``eps = tau + log(1 - 1/alpha) - (log(delta) + log(alpha)) / (alpha - 1)``
    (Canonne, Kamath & Steinke 2020, "The discrete Gaussian for differential privacy",
    Prop. 12; the same bound is Asoodeh et al. 2020, eq. 20, and ``compute_epsilon`` of
    dp-accounting's RDP accountant). Each of the three terms is evaluated in floating
    point with a relative error of a few ulps; the result is raised by
    ``CONVERSION_SLACK`` times the sum of their magnitudes, so it is an upper bound.
    """
    alpha = 1.0 + math.exp(log_order_m1)
    # ``alpha`` is the order actually used; ``alpha - 1`` is exact for the floats in the
    # search range (Sterbenz below 2, an integer-spaced float below 2^53 above), and
    # ``log(1 - 1/alpha)`` is taken as ``log(alpha - 1) - log(alpha)``, which stays
    # accurate when ``alpha`` is close to 1 (``log1p(-1/alpha)`` would not).
    am1 = alpha - 1.0
    log_am1 = math.log(am1)
    log_alpha = math.log(alpha)
    t1 = alpha * rho
    t2 = log_am1 - log_alpha
    t3 = (log_inv_delta - log_alpha) / am1
    # t2 is a difference of two logarithms: bound its error by their magnitudes
    mag = abs(t1) + abs(log_am1) + abs(log_alpha) + abs(t3)
    return t1 + t2 + t3 + CONVERSION_SLACK * mag


def _best_renyi_conversion(rho: float, log_inv_delta: float) -> float:
    """The smallest :func:`_renyi_conversion` found by a golden-section search over
    ``log(alpha - 1)``.

    The search only chooses which order to use: every order evaluated gives a valid
    bound, so a search that misses the exact optimum costs utility, never privacy. It is
    deterministic (a fixed number of steps from a fixed range).
    """
    lo, hi = _LOG_ORDER_RANGE
    best = math.inf
    x1 = hi - _GOLDEN * (hi - lo)
    x2 = lo + _GOLDEN * (hi - lo)
    f1 = _renyi_conversion(rho, log_inv_delta, x1)
    f2 = _renyi_conversion(rho, log_inv_delta, x2)
    for _ in range(90):
        best = min(best, f1, f2)
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - _GOLDEN * (hi - lo)
            f1 = _renyi_conversion(rho, log_inv_delta, x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + _GOLDEN * (hi - lo)
            f2 = _renyi_conversion(rho, log_inv_delta, x2)
    return min(best, f1, f2)


@functools.lru_cache(maxsize=256)
def rho_for_budget(epsilon: Fraction, delta: Fraction) -> Fraction:
    """Largest rho (rounded down) with ``zcdp_to_epsilon(rho, delta) <= epsilon``.

    Starts from the closed-form solution of the Bun-Steinke conversion
    ``rho + 2 sqrt(rho ln(1/delta)) = epsilon`` (which :func:`zcdp_to_epsilon` never
    exceeds) and raises it by bisection against the tighter Renyi conversion. Every
    candidate is checked with the exact comparison ``zcdp_to_epsilon(q, delta) <=
    epsilon`` before it is kept, so the result always fits, whatever the floating-point
    search does. A pure function of two exact fractions, cached (the ledger re-checks
    the rule on every entry with the same budget).
    """
    if delta <= 0:
        raise InvalidParameterError(
            "delta", float(delta), "the zCDP rule needs delta > 0 to convert to (eps, delta)"
        )
    if epsilon <= 0:
        return Fraction(0)
    e = _finite_float(epsilon, "epsilon")
    L = math.log(1.0 / float(delta))
    root = math.sqrt(L + e) + math.sqrt(L)
    square = e * e
    if math.isfinite(square):
        # the start every earlier version used: the rho of an ordinary budget is unchanged
        rho = square / root**2 * (1.0 - CONVERSION_SLACK)
    else:
        # ``e * e`` overflows above ~1.3e154; ``e / root`` is below ``sqrt(e)`` and the
        # slack keeps its square below the largest float
        ratio = e / root
        rho = ratio * (ratio * (1.0 - CONVERSION_SLACK))
    q = Fraction(rho)
    # Belt and braces: the conversion of the rounded-down rho must fit.
    while not _conversion_fits(q, delta, epsilon):
        q *= Fraction(1) - Fraction(CONVERSION_SLACK)
    lo = float(q)
    if lo <= 0.0:
        return q

    def fits(r: float) -> bool:
        return math.isfinite(r) and _conversion_fits(Fraction(r), delta, epsilon)

    hi = 2.0 * lo
    for _ in range(64):
        if not fits(hi):
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - needs a conversion that never exceeds epsilon
        return Fraction(lo)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if fits(mid):
            lo = mid
        else:
            hi = mid
    # ``lo`` is float(q) (which may round above q and was never checked) unless the
    # search moved it to a checked value: check it once more rather than trust that.
    best = Fraction(lo)
    return best if best > q and fits(lo) else q


def _finite_float(q: Fraction, name: str) -> float:
    """``float(q)``, or :class:`InvalidParameterError` when ``q`` is beyond the float range."""
    try:
        return float(q)
    except OverflowError:
        raise _beyond_float(name, q) from None


def _conversion_float(rho: Fraction, delta: Fraction) -> float:
    """The bound of :func:`zcdp_to_epsilon` as a float; ``inf`` when it overflows."""
    if rho == 0:
        return 0.0
    L = math.log(1.0 / float(delta))
    # float(rho) is within half an ulp of rho: far inside CONVERSION_SLACK. The
    # Bun-Steinke expression is the one every earlier version of this function computed,
    # so the minimum never exceeds it and a rho that fitted before still fits.
    r = _finite_float(rho, "rho")
    rl = r * L
    # ``sqrt(r) * sqrt(L)`` only where ``r * L`` overflows (rho above ~1e305): the same
    # value up to a few ulps, far inside CONVERSION_SLACK
    root = math.sqrt(rl) if math.isfinite(rl) else math.sqrt(r) * math.sqrt(L)
    bun_steinke = (r + 2.0 * root) * (1.0 + CONVERSION_SLACK)
    renyi = _best_renyi_conversion(r, L)
    return min(bun_steinke, renyi)


def _conversion_fits(rho: Fraction, delta: Fraction, epsilon: Fraction) -> bool:
    """``zcdp_to_epsilon(rho, delta) <= epsilon``; false when the conversion overflows."""
    bound = _conversion_float(rho, delta)
    return math.isfinite(bound) and Fraction(bound) <= epsilon


def zcdp_to_epsilon(rho: Fraction, delta: Fraction) -> Fraction:
    """An upper bound, rounded up, on the eps of ``rho``-zCDP at ``delta``.

    The smaller of the Bun-Steinke bound ``rho + 2 sqrt(rho ln(1/delta))`` (2016,
    Prop. 1.3) and the Renyi conversion of Canonne, Kamath & Steinke (2020, Prop. 12)
    at the best order found by :func:`_best_renyi_conversion`; both are valid for every
    ``rho``-zCDP mechanism, so their minimum is. See ``docs/privacy/costs-and-filter.md``.
    Raises :class:`InvalidParameterError` when the bound is beyond the float range.
    """
    if delta <= 0:
        raise InvalidParameterError("delta", float(delta), "must be > 0 for the zCDP conversion")
    if rho == 0:
        return Fraction(0)
    bound = _conversion_float(rho, delta)
    if not math.isfinite(bound):
        raise InvalidParameterError(
            "rho", float(rho),
            f"is too large: its (eps, delta) conversion at delta={float(delta)!r} overflows "
            "a float")
    return Fraction(bound)


def split_epsilon(total: Number, k: int) -> float:
    """The largest float ``e`` with ``k * e <= total`` exactly: ``k`` parts always fit."""
    t = exact(total, "total", allow_zero=False)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidParameterError("k", k, "must be an integer >= 1")
    return round_down(t / k)


def split_rho(total: Fraction, k: int) -> Fraction:
    """Exact ``total / k`` (rho budgets are kept as fractions)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidParameterError("k", k, "must be an integer >= 1")
    return total / k
