"""Re-derive an entry's privacy cost from its stored public parameters.

The verifier must not trust the cost a session declared: it rebuilds the mechanism
from its kind and public parameters with
:func:`accounting.mechanisms.mechanism_from_params` and asks it for its cost under the
entry's relation.
"""

from __future__ import annotations

from collections.abc import Mapping

from accounting.costs import Cost
from accounting.entries import JSONValue
from accounting.errors import AccountingError
from accounting.ledger._format import canonical_json
from accounting.mechanisms import mechanism_from_params
from accounting.relations import Relation

#: Re-derived costs by (kind, canonical parameters, relation): the derivation is a pure
#: function of these, and a ledger repeats the same few parameter sets many times.
_CACHE: dict[tuple[str, str, str], tuple[Cost, float | None]] = {}
_CACHE_SIZE = 4096


def rederive(kind: str, params: Mapping[str, JSONValue], relation: Relation, *,
             params_json: str | None = None) -> tuple[Cost, float | None]:
    """The cost under ``relation`` and the declared sensitivity of mechanism ``kind``
    rebuilt from its public ``params``.

    Raises :class:`~accounting.errors.AccountingError` (unknown kind, missing, extra or
    invalid parameters), ``ValueError``/``TypeError`` (parameters JSON cannot encode) or
    ``ArithmeticError`` (absurd magnitudes) when the cost cannot be re-derived.
    ``params_json``, when given, must be ``canonical_json(params)`` (the writer has it).
    """
    key = (kind, canonical_json(dict(params)) if params_json is None else params_json,
           relation.value)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    mech = mechanism_from_params(kind, dict(params))
    cost = mech.cost(relation)
    if not isinstance(cost, Cost):
        raise AccountingError(f"mechanism {kind!r} returned a non-Cost {cost!r}")
    sensitivity = mech.sensitivity
    if sensitivity is not None:
        sensitivity = float(sensitivity)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[key] = (cost, sensitivity)
    return cost, sensitivity
