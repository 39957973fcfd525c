"""Planning a run before it starts (public information only).

* :func:`laplace_epsilon_per_test` / :func:`laplace_plan`: per-test Laplace epsilon for
  a plan of ``k`` tests under the basic rule (``k`` of them fit exactly).
* :func:`gaussian_sigma_per_test` / :func:`gaussian_plan`: per-test Gaussian sigma for
  ``k`` tests of L2 sensitivity ``Delta2`` under the zCDP rule within a budget.
* :func:`choose_rule`: the rule with the smaller per-test noise standard deviation
  for a plan of ``k`` equal tests; this is how a run "picks the better rule before
  the run" (PRIVACY.md section 7). The choice uses only public quantities.
* :func:`report_plan`: PLD and RDP epsilons (dp-accounting) for a plan whose list of
  mechanisms is FIXED IN ADVANCE, next to the basic and zCDP totals. These numbers
  are reports about a non-adaptive plan; they are never used as a stopping rule
  (``docs/privacy/costs-and-filter.md``).

dp-accounting 0.6.0 caveats handled here (``docs/privacy/costs-and-filter.md``):

* ``PLDAccountant.compose(RandomizedResponseDpEvent, count)`` ignores ``count``:
  :func:`compose_pld` composes such events one at a time.
* There is no pure-eps event: pure mechanisms enter the PLD through
  ``from_privacy_parameters`` (their (eps, 0) dominating pair) and the RDP through
  ``ZCDpEvent(rho)`` with their zCDP bound.
* PLD and RDP disagree under ``REPLACE_ONE`` (the PLD Gaussian doubles the
  sensitivity, RDP does not). We therefore account under ``ADD_OR_REMOVE_ONE`` with
  sensitivities converted and normalised explicitly: for additive noise (Laplace,
  Gaussian) the privacy loss of a neighbouring pair depends only on the shift
  ``|f(D) - f(D')| <= Delta``, so a replace-one sensitivity ``Delta_R1`` accounted as
  a shift of ``Delta_R1`` is exactly the replace-one analysis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from accounting.costs import Budget, Cost, round_up, split_epsilon, split_rho, zcdp_to_epsilon
from accounting.errors import InvalidParameterError
from accounting.mechanisms import Gaussian, Laplace, SmoothSensitivityMedian
from accounting.relations import Relation

#: Default PLD discretisation (dp-accounting's default); pessimistic estimates.
VALUE_DISCRETIZATION_INTERVAL = 1e-4


def _k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidParameterError("k", k, "must be an integer >= 1")
    return k


def _budget(budget: object) -> Budget:
    if not isinstance(budget, Budget):
        raise InvalidParameterError("budget", budget, "must be an accounting.Budget")
    return budget


# ---------------------------------------------------------------------------------
# per-test parameters
# ---------------------------------------------------------------------------------
def laplace_epsilon_per_test(budget: Budget, k: int) -> float:
    """Largest float ``e`` with ``k e <= eps_B`` exactly (basic rule)."""
    return split_epsilon(_budget(budget).epsilon, _k(k))


def laplace_plan(
    budget: Budget, k: int, sensitivity: float, relation: Relation = Relation.REPLACE_ONE
) -> Laplace:
    """The Laplace mechanism of each of ``k`` equal tests under the basic rule."""
    return Laplace(sensitivity, laplace_epsilon_per_test(budget, k), relation=relation)


def gaussian_plan(
    budget: Budget, k: int, l2_sensitivity: float, relation: Relation = Relation.REPLACE_ONE
) -> Gaussian:
    """The Gaussian mechanism of each of ``k`` equal tests under the zCDP rule.

    Each costs at most ``Budget.rho()/k`` exactly, so ``k`` of them fit. Needs
    ``budget.delta > 0``.
    """
    b = _budget(budget)
    if b.delta <= 0:
        raise InvalidParameterError("delta", b.delta, "the zcdp rule needs delta > 0")
    return Gaussian.for_rho(l2_sensitivity, split_rho(b.rho(), _k(k)), relation=relation)


def gaussian_sigma_per_test(
    budget: Budget, k: int, l2_sensitivity: float, relation: Relation = Relation.REPLACE_ONE
) -> float:
    """``sigma`` of :func:`gaussian_plan` (about ``Delta2 / sqrt(2 rho_B / k)``)."""
    return gaussian_plan(budget, k, l2_sensitivity, relation).sigma


def noise_sd(budget: Budget, k: int, sensitivity: float, rule: str) -> float:
    """Per-test noise standard deviation of a plan of ``k`` equal scalar tests.

    ``basic``: Laplace ``sqrt(2) Delta / e``; ``zcdp``: Gaussian ``sigma``.
    """
    if rule == "basic":
        return math.sqrt(2.0) * laplace_plan(budget, k, sensitivity).scale
    if rule == "zcdp":
        return gaussian_sigma_per_test(budget, k, sensitivity)
    raise InvalidParameterError("rule", rule, "expected 'basic' or 'zcdp'")


def choose_rule(budget: Budget, k: int, sensitivity: float) -> Literal["basic", "zcdp"]:
    """The rule with the smaller per-test noise sd for ``k`` equal scalar tests.

    A scalar test has equal L1 and L2 sensitivity. Without a delta only ``basic``
    applies. Ties go to ``basic`` (pure DP). Inputs are public (budget, the planned
    number of tests, the declared sensitivity), so choosing is free.
    """
    b = _budget(budget)
    _k(k)
    if b.delta <= 0:
        return "basic"
    lap = noise_sd(b, k, sensitivity, "basic")
    gau = noise_sd(b, k, sensitivity, "zcdp")
    return "zcdp" if gau < lap else "basic"


# ---------------------------------------------------------------------------------
# dp-accounting helpers
# ---------------------------------------------------------------------------------
def _flatten(event: Any, count: int) -> list[tuple[Any, int]]:
    """(event, count) pairs with randomized-response events expanded to count 1."""
    import dp_accounting

    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _flatten(event.event, count * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        out: list[tuple[Any, int]] = []
        for e in event.events:
            out.extend(_flatten(e, count))
        return out
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return [(event, 1)] * count
    return [(event, count)]


def compose_pld(
    events: Sequence[tuple[Any, int]],
    neighboring_relation: Any = None,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> Any:
    """A ``PLDAccountant`` with ``events`` composed, working around the 0.6.0 bug that
    ignores ``count`` for randomized-response events (they are composed one at a time,
    also inside ``SelfComposedDpEvent``/``ComposedDpEvent``)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import PLDAccountant

    rel = NeighboringRelation.ADD_OR_REMOVE_ONE if neighboring_relation is None else (
        neighboring_relation
    )
    acc = PLDAccountant(rel, value_discretization_interval=value_discretization_interval)
    for event, count in events:
        for e, c in _flatten(event, _k(count)):
            acc.compose(e, c)
    return acc


@dataclass(frozen=True)
class PlanReport:
    """Epsilons (at ``delta``) of a plan fixed in advance, under several analyses.

    ``basic``: sum of epsilons (``None`` if some mechanism has no eps bound) and the
    summed deltas in ``basic_delta``; ``zcdp``: :func:`accounting.costs.zcdp_to_epsilon` of
    the summed rho (``None`` if some mechanism has no rho); ``pld``: dp-accounting
    PLD (pessimistic); ``rdp``: dp-accounting RDP (``None`` when a mechanism has no
    RDP description, e.g. the smooth median). All rounded up. ``delta`` must exceed
    the summed deltas of (eps, delta) mechanisms for the PLD value to be finite.
    """

    delta: float
    basic: float | None
    basic_delta: float
    zcdp: float | None
    pld: float
    rdp: float | None

    def best(self) -> float:
        """The smallest of the valid epsilons (for a NON-adaptive plan only)."""
        values = [v for v in (self.zcdp, self.pld, self.rdp) if v is not None]
        if self.basic is not None and self.basic_delta <= self.delta:
            values.append(self.basic)
        return min(values)


def _pld_of(mech: Any, relation: Relation, interval: float) -> Any:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    if isinstance(mech, Laplace):
        eps = float(mech.epsilon_under(relation))
        return pld_mod.from_laplace_mechanism(
            1.0 / eps, sensitivity=1.0, pessimistic_estimate=True,
            value_discretization_interval=interval,
        )
    if isinstance(mech, Gaussian):
        ev = mech.dp_event(relation)
        return pld_mod.from_gaussian_mechanism(
            ev.noise_multiplier, sensitivity=1.0, pessimistic_estimate=True,
            value_discretization_interval=interval,
        )
    cost: Cost = mech.cost(relation)
    assert cost.epsilon is not None
    params = common.DifferentialPrivacyParameters(round_up(cost.epsilon), round_up(cost.delta))
    return pld_mod.from_privacy_parameters(params, value_discretization_interval=interval)


def _rdp_event(mech: Any, relation: Relation) -> Any | None:
    import dp_accounting

    if isinstance(mech, Laplace | Gaussian):
        return mech.dp_event(relation)
    if isinstance(mech, SmoothSensitivityMedian):
        return None
    cost: Cost = mech.cost(relation)
    if cost.rho is None:
        return None
    return dp_accounting.ZCDpEvent(round_up(cost.rho))


def report_plan(
    plan: Sequence[tuple[Any, int]],
    delta: float,
    relation: Relation = Relation.REPLACE_ONE,
    value_discretization_interval: float = VALUE_DISCRETIZATION_INTERVAL,
) -> PlanReport:
    """Report a plan of ``(mechanism, count)`` pairs fixed before the run.

    Every mechanism's cost and event is taken under ``relation`` (explicit
    conversion), then accounted in dp-accounting under ``ADD_OR_REMOVE_ONE`` with the
    sensitivity normalised to 1 (see the module docstring). Never use the result to
    decide adaptively whether to run more mechanisms.
    """
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    if not plan:
        raise InvalidParameterError("plan", plan, "must list at least one mechanism")
    d = float(delta)
    if not 0 < d < 1:
        raise InvalidParameterError("delta", delta, "must be in (0, 1)")
    relation = Relation.parse(relation)
    total = Cost.zero()
    pld_total = None
    rdp = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    rdp_ok = True
    for mech, count in plan:
        c = _k(count)
        total = total + mech.cost(relation).times(c)
        one = _pld_of(mech, relation, value_discretization_interval)
        piece = one.self_compose(c) if c > 1 else one
        pld_total = piece if pld_total is None else pld_total.compose(piece)
        ev = _rdp_event(mech, relation)
        if ev is None:
            rdp_ok = False
        elif rdp_ok:
            rdp.compose(ev, c)
    assert pld_total is not None
    basic = None if total.epsilon is None else round_up(total.epsilon)
    zcdp = None
    if total.rho is not None and total.delta == 0:
        zcdp = round_up(zcdp_to_epsilon(total.rho, Fraction(d)))
    pld_eps = float(pld_total.get_epsilon_for_delta(d))
    rdp_eps = float(rdp.get_epsilon(d)) if rdp_ok else None
    return PlanReport(
        delta=d,
        basic=basic,
        basic_delta=round_up(total.delta),
        zcdp=zcdp,
        pld=pld_eps,
        rdp=rdp_eps,
    )
