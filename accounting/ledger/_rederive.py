"""Re-derive an entry's privacy cost from its stored public parameters.

The verifier must not trust the cost a session declared: it rebuilds the mechanism
from its kind and public parameters and asks it for its cost. When
``accounting.mechanisms.mechanism_from_params`` is available it is used; otherwise a
small table of the primitives of PRIVACY.md section 2 is used.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from accounting.costs import Cost, exact, round_up
from accounting.entries import JSONValue
from accounting.errors import AccountingError, InvalidParameterError
from accounting.ledger._format import canonical_json
from accounting.relations import Relation


def _num(params: Mapping[str, JSONValue], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameterError(key, value, "must be a number in the stored parameters")
    if not math.isfinite(value) or value < 0:
        raise InvalidParameterError(key, value, "must be finite and >= 0")
    return float(value)


def _pos(params: Mapping[str, JSONValue], key: str) -> float:
    v = _num(params, key)
    if v <= 0:
        raise InvalidParameterError(key, v, "must be > 0")
    return v


def _laplace(p: Mapping[str, JSONValue]) -> Cost:
    _num(p, "sensitivity")
    return Cost.pure(_pos(p, "epsilon"))


def _gaussian(p: Mapping[str, JSONValue]) -> Cost:
    d2 = exact(_num(p, "l2_sensitivity"), "l2_sensitivity")
    sigma = exact(_pos(p, "sigma"), "sigma")
    return Cost.zcdp(d2 * d2 / (2 * sigma * sigma))


def _rnm(p: Mapping[str, JSONValue]) -> Cost:
    _num(p, "sensitivity")
    noise = p.get("noise", "exponential")
    if noise not in ("exponential", "gumbel", "laplace"):
        raise InvalidParameterError("noise", noise, "expected exponential, gumbel or laplace")
    return Cost.pure(_pos(p, "epsilon"), bounded_range=noise != "laplace")


def _exponential(p: Mapping[str, JSONValue]) -> Cost:
    _num(p, "sensitivity")
    return Cost.pure(_pos(p, "epsilon"), bounded_range=True)


def _svt(p: Mapping[str, JSONValue]) -> Cost:
    _num(p, "sensitivity")
    return Cost.pure(_pos(p, "epsilon"))


def _subsampled_svt(p: Mapping[str, JSONValue]) -> Cost:
    n, m = _pos(p, "n"), _pos(p, "m")
    if m > n:
        raise InvalidParameterError("m", m, "must be <= n")
    eps = _pos(p, "epsilon")
    amplified = math.log1p((m / n) * math.expm1(eps))
    return Cost.pure(round_up(Fraction(amplified) * (1 + Fraction(1, 10**12))))


def _smooth_median(p: Mapping[str, JSONValue]) -> Cost:
    return Cost.approximate(_pos(p, "epsilon"), _pos(p, "delta"))


#: Fallback cost table (PRIVACY.md section 2), used only while
#: ``accounting.mechanisms.mechanism_from_params`` is unavailable.
FALLBACK_COSTS: dict[str, Callable[[Mapping[str, JSONValue]], Cost]] = {
    "laplace": _laplace,
    "gaussian": _gaussian,
    "report-noisy-max": _rnm,
    "exponential": _exponential,
    "sparse-vector": _svt,
    "subsampled-sparse-vector": _subsampled_svt,
    "smooth-sensitivity-median": _smooth_median,
}


#: Re-derived costs by (kind, canonical parameters, relation): the derivation is a pure
#: function of these, and a ledger repeats the same few parameter sets many times.
_CACHE: dict[tuple[str, str, str], Cost] = {}
_CACHE_SIZE = 4096


def _factory() -> Callable[[str, Mapping[str, JSONValue]], Any] | None:
    try:
        mechanisms = importlib.import_module("accounting.mechanisms")
    except ImportError:
        return None
    factory = getattr(mechanisms, "mechanism_from_params", None)
    return factory if callable(factory) else None


def rederive_cost(kind: str, params: Mapping[str, JSONValue], relation: Relation) -> Cost:
    """The cost of mechanism ``kind`` with public ``params``, under ``relation``.

    Raises :class:`~accounting.errors.AccountingError` (or ``ValueError``/``TypeError``
    from a malformed parameter set) when the cost cannot be re-derived.
    """
    factory = _factory()
    if factory is not None:
        key = (kind, canonical_json(dict(params)), relation.value)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        mech = factory(kind, dict(params))
        cost = mech.cost(relation)
        if not isinstance(cost, Cost):
            raise AccountingError(f"mechanism {kind!r} returned a non-Cost {cost!r}")
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = cost
        return cost
    table = FALLBACK_COSTS.get(kind)
    if table is None:
        raise InvalidParameterError("mechanism", kind, "unknown mechanism kind")
    return table(params)
