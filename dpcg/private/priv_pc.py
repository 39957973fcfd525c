"""Priv-PC (Wang, Pang, Song 2020): sieve-and-examine over the PC engine.

A *round* is one sieve followed by one examine:

* **sieve**: ``SubsampledSparseVector(n, m, threshold=0, Delta_m, eps_base)`` (cutoff 1).
  The primitive draws a fresh subsample of ``m`` rows without replacement and a fresh
  noisy threshold when the round starts. Each test asks the query
  ``q = (T + t) - s_m(x, y | S)`` on the subsample: positive = noisy subsample score
  below the loosened threshold ``T + t`` (an independence candidate; see
  :mod:`dpcg.private.svt_pc` for why independence is the positive). ``Delta_m`` is the
  score's registered sensitivity at ``m`` rows; for the floored conditional Kendall z
  (normaliser ``sqrt(9m/4)``) it equals ``Delta_n sqrt(n/m)``.
* **examine**: on a sieve positive, ``Laplace(Delta_n(x, y), eps/2)`` on the full data
  against the untweaked ``T``: noisy score ``<= T`` means independent (edge removed).

Per-pair bounds: ``Delta_m`` and ``Delta_n`` are the source-level bounds (valid for every
pair); the pair's own bound ``Delta_m(x, y) <= Delta_m`` depends only on the declared
cardinalities. The sieve query is multiplied by ``Delta_m / Delta_m(x, y)`` (public), so
its sensitivity is ``Delta_m``; the examine uses ``Delta_n(x, y)`` directly (same cost).

After EVERY sieve positive the round ends; the next test starts a new round (fresh
subsample and threshold). The next round's sieve is admitted and started in the same
``Session.release_many`` batch as the examine (one ledger transaction) when a whole
further round fits after it; it stays charged, unused, if no test follows.

Costs: the sieve's ``eps_base`` is chosen so that its amplified cost
``ln(1 + (m/n)(e^{eps_base} - 1))`` is at
most ``eps_r/2`` (Balle-Barthe-Gaboardi 2018, sampling without replacement,
replace-one); the examine costs ``eps_r/2``. A round is admitted only if the level's plan
has a round left and both halves fit. Rule (public): ``basic`` or ``zcdp`` (a pure
``e``-DP half is ``e^2/2``-zCDP), whichever gives the rounds the larger epsilon.
Default plan: one per PC level, fixed when the level starts from public facts and the
count of released removals (:func:`level_rounds`, :func:`dpcg.private.planning.level_share`);
level 0 can never run out, and a level above asks per-test queries only while every
undecided pair keeps a round, then one per-pair query each (:class:`TestThenPairTester`),
so it never runs out either. When a plan is used up (a user's fixed plan) the run stops,
flagged, before admitting anything more (``exhaustion_note`` says what the user gets).
Subsample rate ``m/n = (e^{eps_r/2} - 1)/3.9216`` clipped to ``[1/20, 1]``.

Hub switch (``hub_mode``; default when ``n eps >= 100,000`` and level 0 would select):
level 0 first releases, by one Laplace of sensitivity ``1/clip`` (1/25 of the budget),
the mean over the pairs of the selections' marginal utility clipped to ``[0, clip]``
over ``clip``; when it and it times ``p - 1`` pass public cuts (post-processing), level
0 is Hub-PC's per-node selection instead, with no level-0 test, and the per-pair levels
run to depth 3 with more sieve asks and a removal margin (:meth:`PairSieveTester.
_hub_switch`, :meth:`PairSieveTester._hub_level_zero`).
Proof note: ``docs/privacy/algorithm-priv-pc.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import islice
from typing import Any, cast

import numpy as np

from accounting.costs import Cost
from accounting.errors import BudgetExceededError, SessionHaltedError
from accounting.mechanisms import Exponential, Laplace, SparseVectorRun, SubsampledSparseVector
from accounting.relations import Relation
from accounting.session import ReleaseRequest, Session
from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.engines.grouped import column_set
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import CandidateSets, LevelCandidates, Pair, Sepset, hand_over
from dpcg.private import planning
from dpcg.private.common import (
    SETS_PER_SIDE,
    DiscreteAlgorithm,
    PlanSizeParams,
    ScreenedPairs,
    announce,
    bound_given,
    check_count_field,
    check_number_field,
    check_screen_selection,
    exhaustion_note,
    fits,
    marginal_utilities,
    plan_count,
    plan_level0_selection,
    ranked_sets,
    screen_selection_option,
    select_node_partners,
    select_pairs,
    select_pairs_screened,
    unspent,
)
from dpcg.private.contract import RunSettings
from dpcg.private.hub_pc import HUB_NEIGHBOURS, HUB_SELECT_SHARE, HUB_WIDE_AT
from dpcg.private.planning import (
    HUB_DEPTH,
    PRIV_PC_ROUNDS_PER_PAIR,
    PRIV_PC_SELECT_GAIN,
    PRIV_PC_SELECT_GROW,
    SELECT_SHARE,
    SIEVE_EPSILON_CAP,
    amplified_base_epsilon,
    choose_unit_rule,
    default_rounds,
    level_share,
    level_units,
    n_pairs,
    planned_depth,
    screened_selection,
    selection_epsilon,
    subsample_size,
    unit_epsilon,
)
from dpcg.private.registry import register_algorithm

#: Default threshold tweak ``t`` of the sieve (score scale), fixed before any benchmark.
DEFAULT_TWEAK = 0.5

#: Times a per-pair level's sieve asks a pair's query before the pair counts as dependent
#: (``--sieve-asks``): a dependent answer costs the SVT nothing, so asking again is free;
#: measured on generated families (``docs/privacy/algorithm-priv-pc.md``, "A pair asked
#: twice").
PRIV_PC_SIEVE_ASKS = 2

#: The hub switch (``hub_mode='auto'``, ``docs/privacy/algorithm-priv-pc.md``, "The hub
#: switch"): the share of the budget its one Laplace release costs (epsilon under
#: ``basic``, rho under ``zcdp``), the noise sd of the released mean it aims at, and the
#: two cuts the noisy mean must both reach for the run to take Hub-PC's per-node
#: selection: the mean itself (most pairs strongly dependent) and the mean times
#: ``p - 1`` (strongly dependent partners per node, far more than a global selection
#: of ``2p`` pairs keeps); measured on the tuning seeds 11, 12
#: (``docs/benchmarks/hubs-private.md``, section 5).
HUB_CHECK_SHARE = Fraction(1, 25)
HUB_CHECK_SD = 0.05
HUB_CHECK_DENSITY = 0.35
HUB_CHECK_PARTNERS = 22.0
#: Sieve queries per pair at levels >= 1 under the hub switch (a dependent answer is
#: free): with the margin, a pair the sieve lets through is removed by the examine more
#: often than a pair the sieve never lets through; measured 2 / 4 / 8 / 16 on the tuning
#: seeds (``docs/benchmarks/hubs-private.md``, section 5).
HUB_SIEVE_ASKS = 8
#: The examines' removal margin under the hub switch, in sd of their Laplace noise
#: (Hub-PC's rule with a smaller default than its ``HUB_MARGIN = 1``: an examine's noise is
#: larger than a Hub-PC release's, half a round's budget split with the pick); measured
#: 0.5 / 0.75 / 1 on the tuning seeds (``docs/benchmarks/hubs-private.md``, section 5).
HUB_BRANCH_MARGIN = 0.75

#: Most column sets announced to a round's subsample at a time (``_announce_sub``): one
#: ``GROUPING SETS`` scan of the DuckDB and Spark engines (``SETS_PER_SCAN``).
SUB_WINDOW_SETS = 64
#: Fewest: a round's first window is twice the tables the previous round's sieve read,
#: within these bounds, and doubles when the round reads past it.
SUB_WINDOW_MIN = 4


@dataclass(frozen=True)
class PrivPCParams(PlanSizeParams):
    """Priv-PC's options: the plan (``plan_size`` rounds or ``test_epsilon`` per round),
    the sieve's threshold ``tweak`` and its subsample size ``m``."""

    tweak: float = option(DEFAULT_TWEAK, type=float, metavar="T",
                          help=f"threshold tweak t of the sieve on the score scale "
                               f"(default {DEFAULT_TWEAK})")
    m: int | None = option(None, type=int, flag="--subsample-rows", metavar="M",
                           help="rows m of the sieve's subsample (default from the "
                                "round's epsilon)")
    select: float | None = option(
        None, type=float, metavar="KAPPA",
        help="per-level plans: level 0 first keeps the top K = KAPPA p pairs by one top-K "
             "release and sieves only those; 0: sieve every pair (default: 4, used where "
             "it is no noisier than sieving every pair)")
    screen_selection: int | None = screen_selection_option()
    node_select: int | None = option(
        None, type=int, metavar="K",
        help="per-level plans: level 0 first keeps each node's K strongest partners by one "
             "top-K release per node (Hub-PC's selection, for hub networks) instead of "
             "the top KAPPA p pairs, and sieves only those (default: off)")

    hub_mode: str | None = option(
        None, type=str, metavar="MODE",
        help="the hub switch of per-level plans: 'auto' releases how densely the pairs "
             "depend (one Laplace release, 1/25 of the budget) and, on a dense network, "
             "uses Hub-PC's per-node selection, margin and depth instead; 'on': always "
             "that; 'off': never (default: 'auto' where rows x epsilon >= 100,000 and "
             "level 0 would make its top-K selection, else 'off')")
    margin: float | None = option(
        None, type=float, metavar="M",
        help="per-level plans: an examine removes a pair when its noisy value is at most "
             "M standard deviations of its Laplace noise above the threshold (M >= 0; "
             "0: at most the threshold; default 0)")

    release: str | None = option(
        None, type=str, metavar="WHAT",
        help="per-level plans, what a level >= 1 asks: 'pair': one sieve query per open "
             "pair on its smallest subsample score - T over its conditioning sets, "
             "examined on the full data the same way, then one selection of the "
             "separating set per removed pair; 'test': one query per test while every "
             "undecided pair keeps a round of the level's plan, then 'pair' (default: "
             "'pair')")

    sieve_asks: int | None = option(
        None, type=int, metavar="R",
        help=f"per-pair levels: times the sieve asks a pair's query (on the same round's "
             f"subsample, with fresh query noise) before the pair counts as dependent; "
             f"a dependent answer costs nothing (default: {PRIV_PC_SIEVE_ASKS})")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number_field("tweak", self.tweak, nonnegative=True)
        if self.sieve_asks is not None:
            check_count_field("sieve_asks", self.sieve_asks)
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("sieve_asks: applies only to the per-level plans "
                                     "(give neither plan_size nor test_epsilon)")
        if self.release is not None:
            if self.release not in ("pair", "test"):
                raise AlgorithmError(f"release: expected 'pair' or 'test', got "
                                     f"{self.release!r}")
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("release: applies only to the per-level plans (give "
                                     "neither plan_size nor test_epsilon)")
        if self.select is not None:
            check_number_field("select", self.select, nonnegative=True)
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("select: applies only to the per-level plans (give "
                                     "neither plan_size nor test_epsilon)")
        if self.m is not None:
            check_count_field("m", self.m)
        if self.hub_mode is not None:
            if self.hub_mode not in ("auto", "on", "off"):
                raise AlgorithmError(f"hub_mode: expected 'auto', 'on' or 'off', got "
                                     f"{self.hub_mode!r}")
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("hub_mode: applies only to the per-level plans (give "
                                     "neither plan_size nor test_epsilon)")
            if self.hub_mode != "off" and (
                    self.node_select is not None or self.select is not None
                    or self.screen_selection is not None or self.release == "test"):
                raise AlgorithmError("hub_mode: 'auto' and 'on' apply to the default "
                                     "selection and per-pair levels; give hub_mode='off' "
                                     "with node_select, select, screen_selection or "
                                     "release='test'")
        if self.margin is not None:
            check_number_field("margin", self.margin, nonnegative=True)
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("margin: applies only to the per-level plans (give "
                                     "neither plan_size nor test_epsilon)")
        check_screen_selection(self.screen_selection)
        if self.node_select is not None:
            check_count_field("node_select", self.node_select)
            if self.plan_size is not None or self.test_epsilon is not None:
                raise AlgorithmError("node_select: applies only to the per-level plans "
                                     "(give neither plan_size nor test_epsilon)")
            if self.select is not None or self.screen_selection is not None:
                raise AlgorithmError("node_select: replaces the top-K selection; give "
                                     "neither select nor screen_selection with it")


@dataclass(frozen=True)
class RoundParams:
    """The public parameters of one round: the examine's ``eps/2`` (the amplified sieve
    spends at most the same), the subsample size ``m``, the sieve's base budget and its
    sensitivity at ``m`` rows."""

    epsilon_half: float
    epsilon_base: float
    m: int
    sensitivity_sub: float


@dataclass(frozen=True)
class PrivPCPlan:
    """The public plan. ``per_level``: every level gets its own plan of rounds when it
    starts (:func:`level_rounds`); the fields describe level 0's, which is fixed from
    public facts alone. Otherwise (``plan_size`` / ``test_epsilon`` given) ``rounds``
    rounds of ``epsilon_round`` over the whole run."""

    rule: str
    rounds: int
    epsilon_round: float
    epsilon_half: float
    epsilon_base: float
    n: int
    m: int
    tweak: float
    sensitivity_full: float
    sensitivity_sub: float
    max_depth: int | None
    per_level: bool = False
    depth: int = 0
    pairs: int = 0
    m_fixed: int | None = None
    select_k: int = 0
    select_epsilon: float = 0.0
    pair_release: bool = False
    #: screened selection: whether it is used, and its first release (``screen_k = 0``:
    #: none; ``select_k``/``select_epsilon`` are then the second release's)
    screened: bool = False
    screen_k: int = 0
    screen_epsilon: float = 0.0
    #: per-pair levels: sieve queries a pair may ask before it counts as dependent
    sieve_asks: int = 1
    #: with ``node_select``: partners kept per node by the per-node selection (0: the
    #: top-K selection, or none); ``select_k`` is then ``p node_k``, its step count
    node_k: int = 0
    #: an examine removes a pair when its noisy value is at most ``margin`` sd of its
    #: Laplace noise above the threshold (0: at most the threshold)
    margin: float = 0.0
    #: the hub switch (``hub_mode``; 0 partners: off): level 0 first releases the mean
    #: over its pairs of ``min(max(u, 0), clip)/clip`` (``u`` the selections' marginal
    #: utility, sensitivity 1) by ``Laplace(1/clip, check_epsilon)``; when that times
    #: ``p - 1`` is at least ``check_partners`` and the mean at least ``check_density``
    #: (``hub_force``: always, nothing
    #: released), level 0 is instead the per-node selection (``hub_k`` partners,
    #: ``hub_select_epsilon`` per step) and levels 1..``hub_depth`` remove below
    #: ``hub_margin`` sd
    hub_k: int = 0
    hub_force: bool = False
    check_epsilon: float = 0.0
    check_clip: float = 0.0
    check_partners: float = 0.0
    check_density: float = 0.0
    hub_select_epsilon: float = 0.0
    hub_depth: int = 0
    hub_margin: float = 0.0
    hub_sieve_asks: int = 0

    @property
    def first(self) -> RoundParams:
        return RoundParams(self.epsilon_half, self.epsilon_base, self.m, self.sensitivity_sub)

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "plan_size": self.rounds,
                "epsilon_per_round": self.epsilon_round,
                "epsilon_sieve_amplified": self.epsilon_half,
                "epsilon_examine": self.epsilon_half,
                "epsilon_sieve_base": self.epsilon_base, "n": self.n, "m": self.m,
                "subsample_rate": self.m / self.n, "tweak": self.tweak,
                "sensitivity_full": self.sensitivity_full,
                "sensitivity_subsample": self.sensitivity_sub, "positive": "independent",
                "max_depth": self.max_depth,
                "horizon": self.depth if self.per_level else None,
                "select_k": self.select_k, "select_epsilon": self.select_epsilon,
                "screened": self.screened, "screen_k": self.screen_k,
                "screen_epsilon": self.screen_epsilon,
                **({"release": "pair" if self.pair_release else "test",
                    "sieve_asks": self.sieve_asks} if self.per_level else {}),
                **({"node_select": self.node_k} if self.node_k else {}),
                **({"margin": self.margin} if self.margin else {}),
                **({"hub_switch": {
                    "mode": "on" if self.hub_force else "auto",
                    "check_epsilon": self.check_epsilon, "check_clip": self.check_clip,
                    "check_partners": self.check_partners,
                    "check_density": self.check_density, "neighbours": self.hub_k,
                    "select_epsilon": self.hub_select_epsilon, "depth": self.hub_depth,
                    "margin": self.hub_margin, "sieve_asks": self.hub_sieve_asks}}
                   if self.hub_k else {})}


def _sieve(n: int, m: int, eps_base: float, sens_m: float) -> SubsampledSparseVector:
    return SubsampledSparseVector(n=n, m=m, threshold=0.0, sensitivity=sens_m,
                                  epsilon=eps_base)


def fit_base_epsilon(n: int, m: int, eps_half: float, sens_m: float) -> float:
    """The largest ``eps_base`` (found by stepping down from the closed form) whose
    declared amplified cost, as the primitive computes it, is at most ``eps_half``."""
    eps = amplified_base_epsilon(n, m, eps_half)
    target = Fraction(eps_half)
    for _ in range(64):
        cost = _sieve(n, m, eps, sens_m).cost(_relation())
        if cost.epsilon is not None and cost.epsilon <= target:
            return eps
        eps *= 1.0 - 1e-12
    raise BudgetExceededError(  # pragma: no cover - would mean a broken cost function
        f"no sieve budget fits in eps/2 = {eps_half}"
    )


def _relation() -> Relation:
    return Relation.REPLACE_ONE


def round_params(n: int, eps_half: float, source: StatisticSource,
                 m_fixed: int | None = None) -> RoundParams:
    """A round's parameters for an examine budget ``eps_half`` (public)."""
    m = int(m_fixed or subsample_size(n, 2.0 * eps_half))
    sens_m = source.sensitivity(m)
    # The sieve never needs more than SIEVE_EPSILON_CAP (spending less is always allowed).
    eps_base = fit_base_epsilon(n, m, min(eps_half, SIEVE_EPSILON_CAP), sens_m)
    return RoundParams(eps_half, eps_base, m, sens_m)


def checked_round(first: RoundParams, n: int, sens_n: float) -> RoundParams:
    """``first`` after building its sieve and examine once: parameters their samplers
    cannot represent (a vanishing budget) fail here, before the run is reserved."""
    _sieve(n, first.m, first.epsilon_base, first.sensitivity_sub).base.noise_plan()
    Laplace(sens_n, first.epsilon_half)
    return first


def level_rounds(open_pairs: int, level: int) -> int:
    """Rounds a level's plan provides: one per open pair at level 0 (each pair is tested
    once there, so the level can never need more), :data:`PRIV_PC_ROUNDS_PER_PAIR` per
    open pair above (public rule; ``docs/privacy/algorithm-priv-pc.md``)."""
    return level_units(open_pairs, level, per_pair=PRIV_PC_ROUNDS_PER_PAIR)


def make_plan(params: PrivPCParams, settings: RunSettings,
              source: StatisticSource) -> PrivPCPlan:
    budget = settings.budget()
    tweak = float(params.tweak)
    n = source.n
    pairs = n_pairs(source.p)
    sens_n = source.sensitivity()
    if params.plan_size is None and params.test_epsilon is None:
        # per-level plans; level 0's from public facts alone
        # with the per-node selection the run is capped at HUB_DEPTH unless given
        cap = (HUB_DEPTH if params.node_select is not None and settings.max_depth is None
               else settings.max_depth)
        depth = planned_depth(source.p, cap)
        r = level_rounds(pairs, 0)
        units = r * max(depth + 1, 1)
        rule = choose_unit_rule(budget.epsilon, budget.delta, units, parts=2)
        total = budget.epsilon_exact if rule == "basic" else budget.rho()
        level0 = Fraction(total) / max(depth + 1, 1)  # what level_share gives r rounds
        node_k = 0
        got: tuple[int, float] | None
        hub = hub_switch_mode(params, n, float(budget.epsilon))
        check = Fraction(0)
        if hub == "check" and (params.hub_mode == "auto" or plan_level0_selection(
                rule, level0, source, params.select, gain=PRIV_PC_SELECT_GAIN,
                grow=PRIV_PC_SELECT_GROW) is not None):
            # the check's release comes first; the default plan shares the rest
            check = Fraction(HUB_CHECK_SHARE)
            level0 = Fraction(total) * (1 - check) / max(depth + 1, 1)
        if params.node_select is not None:  # Hub-PC's per-node selection, p node_k steps
            node_k = min(params.node_select, max(source.p - 1, 1))
            steps = source.p * node_k
            got = (steps, selection_epsilon(rule, level0 * Fraction(SELECT_SHARE), steps))
            if got[1] <= 0.0:
                raise AlgorithmError("epsilon: too small for priv-pc's per-node selection; "
                                     "give a larger budget")
        else:
            got = plan_level0_selection(rule, level0, source, params.select,
                                        gain=PRIV_PC_SELECT_GAIN, grow=PRIV_PC_SELECT_GROW)
        k, eps_sel = (0, 0.0) if got is None else got
        screen = None
        if got is None:  # level 0's rounds share what the check (if any) leaves
            eps_half = unit_epsilon(level_share(Fraction(total) * (1 - check), r, 0, depth),
                                    rule, parts=2)
        else:  # the kept pairs' rounds share the rest of level 0's share
            # (a round's budget is that of a plan of k rounds; with a screened selection
            # only its k2 < k kept pairs use one, and the rest carries over)
            eps_half = unit_epsilon(level0 * (1 - Fraction(SELECT_SHARE)) / k, rule, parts=2)
            if params.screen_selection != 0 and not node_k:  # Priv-PC's rule: screen
                # every top-K selection
                screen = screened_selection(rule, level0 * Fraction(SELECT_SHARE), k, pairs)
                k, eps_sel = screen.k, screen.epsilon
            r = k
        first = checked_round(round_params(n, eps_half, source, params.m), n, sens_n)
        if got is None and params.hub_mode is None:
            check = Fraction(0)  # the default checks only where level 0 would select
        switch = (hub_switch_plan(rule, Fraction(total), check, source, settings.max_depth,
                                  params.sieve_asks, params.margin)
                  if check > 0 or hub == "force" else {})
        return PrivPCPlan(rule, r, 2.0 * eps_half, eps_half, first.epsilon_base, n,
                          first.m, tweak, sens_n, first.sensitivity_sub, cap,
                          **switch,
                          per_level=True, depth=depth, pairs=pairs, m_fixed=params.m,
                          select_k=k, select_epsilon=eps_sel,
                          screened=screen is not None,
                          screen_k=0 if screen is None else screen.first_k,
                          screen_epsilon=0.0 if screen is None else screen.first_epsilon,
                          # per-pair levels by default, with or without a selection
                          # (docs/privacy/algorithm-priv-pc.md, "Per-pair queries
                          # without a selection")
                          pair_release=params.release != "test",
                          sieve_asks=(PRIV_PC_SIEVE_ASKS if params.sieve_asks is None
                                      else params.sieve_asks),
                          node_k=node_k,
                          margin=0.0 if params.margin is None else float(params.margin))
    r = plan_count(params, settings, default_rounds(source.p))
    if params.test_epsilon is not None:
        rule = "basic"
        eps_half = float(params.test_epsilon) / 2.0
    else:
        rule = choose_unit_rule(budget.epsilon, budget.delta, max(r, 1), parts=2)
        total = budget.epsilon_exact if rule == "basic" else budget.rho()
        eps_half = unit_epsilon(total / max(r, 1), rule, parts=2)
    first = checked_round(round_params(n, eps_half, source, params.m), n, sens_n)
    return PrivPCPlan(rule, r, 2.0 * eps_half, eps_half, first.epsilon_base, n, first.m,
                      tweak, sens_n, first.sensitivity_sub, settings.max_depth,
                      pairs=pairs, m_fixed=params.m)


def hub_switch_mode(params: PrivPCParams, n: int, epsilon: float) -> str:
    """The hub switch from public facts (the options and ``n epsilon``): ``'off'``
    outside the default per-level plan (``node_select``, ``select``,
    ``screen_selection``, ``release='test'``, a fixed plan) or with ``hub_mode='off'``;
    ``'force'`` with ``hub_mode='on'``; ``'check'`` with ``hub_mode='auto'``, and by
    default when ``n epsilon >= HUB_WIDE_AT`` (Hub-PC's wide defaults; below it the
    default plan is unchanged). By default the check is then made only where level 0
    would make its top-K selection (:func:`make_plan`)."""
    if params.hub_mode == "off" or params.plan_size is not None \
            or params.test_epsilon is not None:
        return "off"
    if params.node_select is not None or params.select is not None \
            or params.screen_selection is not None or params.release == "test":
        return "off"
    if params.hub_mode == "on":
        return "force"
    return "check" if params.hub_mode == "auto" or n * epsilon >= HUB_WIDE_AT else "off"


def hub_switch_plan(rule: str, total: Fraction, check: Fraction, source: StatisticSource,
                    max_depth: int | None, sieve_asks: int | None = None,
                    margin: float | None = None) -> dict[str, Any]:
    """The switch's public plan fields for a run of ``total`` (epsilon under ``basic``,
    rho under ``zcdp``): the check's Laplace costs ``check`` of it (``check = 0``: no
    check, the switch is forced), its clip is ``sqrt(2)/(HUB_CHECK_SD eps_check)``
    sensitivities (so the released mean has noise sd ``HUB_CHECK_SD``); the per-node
    selection costs ``HUB_SELECT_SHARE`` of what the check leaves, over ``p k`` steps;
    the levels' sieve asks a pair ``HUB_SIEVE_ASKS`` times and their examines remove
    below ``HUB_BRANCH_MARGIN`` sd, unless ``sieve_asks`` / ``margin`` are given."""
    p = source.p
    k = min(HUB_NEIGHBOURS, max(p - 1, 1))
    rest = total * (1 - check)
    sel = selection_epsilon(rule, rest * Fraction(HUB_SELECT_SHARE), max(p * k, 1))
    if sel <= 0.0:
        raise AlgorithmError("epsilon: too small for priv-pc's per-node selection; give a "
                             "larger budget or hub_mode='off'")
    out: dict[str, Any] = {"hub_k": k, "hub_force": check == 0,
                           "hub_select_epsilon": sel,
                           "hub_depth": planned_depth(p, max_depth, default=HUB_DEPTH),
                           "hub_margin": HUB_BRANCH_MARGIN if margin is None else float(margin),
                           "hub_sieve_asks": HUB_SIEVE_ASKS if sieve_asks is None
                           else sieve_asks}
    if check > 0:
        eps = unit_epsilon(total * check, rule)
        if eps <= 0.0:
            raise AlgorithmError("epsilon: too small for priv-pc's hub check; give a larger "
                                 "budget or hub_mode='off'")
        clip = math.sqrt(2.0) / (HUB_CHECK_SD * eps)
        Laplace(1.0 / clip, eps)  # the check's mechanism: an unrepresentable one fails
        # here, before the session opens, not at the release
        out.update(check_epsilon=eps, check_clip=clip,
                   check_partners=HUB_CHECK_PARTNERS, check_density=HUB_CHECK_DENSITY)
    return out


def _show(cost: Cost) -> str:
    """A declared cost for a message (public: a function of the plan)."""
    return ", ".join(f"{k}={v:.6g}" for k, v in cost.summary().items() if v is not None)


class SieveExamineTester(ScreenedPairs):
    """Edge tester running sieve-and-examine rounds, with a plan of rounds per level."""

    def __init__(self, plan: PrivPCPlan, source: StatisticSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.sieve: SparseVectorRun | None = None
        self.sub: StatisticSource | None = None
        self.rounds = 0
        self.examines = 0
        #: the running sieve's round parameters (it may have been started a level before)
        self._run_params = plan.first
        #: the current level's round parameters, and its rounds not yet admitted
        self._params = plan.first
        self._left = plan.rounds
        self._level = -1
        self._removed = 0  # independence answers so far (each removes a distinct pair)
        self._costs: dict[RoundParams, tuple[Cost, Cost]] = {}
        #: the next round's sieve, started with the last examine, and its parameters
        self._next: SparseVectorRun | None = None
        self._next_params = plan.first
        #: per-level record (post-processing of released decisions)
        self.levels: list[dict[str, Any]] = []
        #: what the user gets when the run stops early (for the result's message)
        self.exhaustion_note: str | None = None
        #: level 0's kept pairs (``None``: no selection, or not made yet)
        self._kept: set[tuple[int, int]] | None = None
        self._screened = set()  # ScreenedPairs
        #: the level's pairs and their candidate sets in the order they are asked, the
        #: index of the pair being asked, and the end of the pairs announced to the
        #: current round's subsample (:meth:`_stream`, :meth:`_announce_sub`)
        self._upcoming: list[tuple[int, int, Sequence[Sepset]]] = []
        self._pos = 0
        self._sub_until = 0
        self._index: dict[Pair, int] = {}  # pair -> its place in _upcoming (per-test mode)
        self._window = SUB_WINDOW_MIN  # column sets of the next subsample announcement
        self._sub_reads = 0  # tables the current round's sieve read
        #: the levels the per-level plans provision for, and the examines' removal
        #: margin (both switch to the hub plan's when level 0 takes the hub switch)
        self._horizon = plan.depth
        self._margin = plan.margin
        self._asks = plan.sieve_asks
        #: the hub switch's decision (``None``: not made / not planned) and the noisy
        #: mean it released (``None``: forced, or not made)
        self.hub: bool | None = None
        self.hub_density: float | None = None

    def _examine_mech(self, params: RoundParams, sensitivity: float | None = None) -> Laplace:
        """``Laplace(Delta, eps/2)``; the pair's own bound when given (same cost)."""
        sens = self.plan.sensitivity_full if sensitivity is None else sensitivity
        return Laplace(sens, params.epsilon_half)

    @property
    def unused_sieves(self) -> int:
        """1 if the last sieve, started together with the last examine, was never used
        (no test came after it); it is charged all the same."""
        return int(self._next is not None)

    def _round_costs(self, params: RoundParams) -> tuple[Cost, Cost]:
        """``(round, examine)``: the declared cost of one round with ``params`` (sieve
        plus examine) and of its examine (public)."""
        got = self._costs.get(params)
        if got is None:
            rel = self.session.relation
            examine = self._examine_mech(params).cost(rel)  # any pair: same eps/2
            got = (self._new_sieve(params).cost(rel) + examine, examine)
            self._costs[params] = got
        return got

    def _new_sieve(self, params: RoundParams) -> SubsampledSparseVector:
        return _sieve(self.plan.n, params.m, params.epsilon_base, params.sensitivity_sub)

    def _sieve_purpose(self) -> str:
        return f"priv-pc sieve {self.rounds + 1}"

    def _fits(self, need: Cost) -> tuple[bool, Cost]:
        """Whether the declared cost ``need`` fits what the session has left (and that)."""
        remaining = self.session.remaining()
        return fits(need, remaining), remaining

    def _stop(self, why: str) -> BudgetExceededError:
        self.exhaustion_note = exhaustion_note(self._level, why)
        return BudgetExceededError(f"priv-pc: {why}")

    def _enter_level(self, level: int, units: int | None = None) -> None:
        """Fix the level's plan when its first test comes (public facts and the count of
        released removals only; ``units``: the level's rounds when the caller knows them
        from the released graph)."""
        self._level = level
        if not self.plan.per_level:
            return
        if level == 0 and self.plan.select_k > 0 and self._kept is None:
            if self.plan.node_k:
                self._kept = set(select_node_partners(
                    self.source, self.session, self.plan.node_k, self.plan.select_epsilon,
                    "priv-pc"))
            elif self.plan.screened:
                self._kept, self._screened = select_pairs_screened(
                    self.source, self.session, self.plan.screen_k, self.plan.screen_epsilon,
                    self.plan.select_k, self.plan.select_epsilon, "priv-pc")
            else:
                self._kept = select_pairs(self.source, self.session, self.plan.select_k,
                                          self.plan.select_epsilon, "priv-pc")
            self.levels.append({"level": 0, "open_pairs": self.plan.pairs,
                                "selected": len(self._kept),
                                **({"screened_out": len(self._screened)}
                                   if self.plan.screened else {}),
                                "rounds_planned": self.plan.rounds, "rounds": 0,
                                "epsilon_per_round": self.plan.epsilon_round})
            self._params = self.plan.first
            self._left = self.plan.rounds
            return
        open_pairs = max(self.plan.pairs - self._removed, 0)
        if units is None:
            units = level_rounds(open_pairs, level)
        rem = self.session.remaining()
        total = rem.epsilon if self.plan.rule == "basic" else rem.rho
        assert total is not None
        # a round still in flight (a running sieve, or one started with the last examine)
        # may still charge its examine: keep that out of the level's share
        if self._next is not None or (self.sieve is not None and not self.sieve.halted):
            params = self._next_params if self._next is not None else self._run_params
            pending = self._round_costs(params)[1]
            owed = pending.epsilon if self.plan.rule == "basic" else pending.rho
            assert owed is not None
            total = max(total - owed, Fraction(0))
        eps_half = unit_epsilon(level_share(total, units, level, self._horizon),
                                self.plan.rule, parts=2)
        record: dict[str, Any] = {"level": level, "open_pairs": open_pairs,
                                  "rounds_planned": units, "rounds": 0,
                                  "epsilon_per_round": 2.0 * eps_half}
        self.levels.append(record)
        if eps_half <= 0.0:
            self._left = 0
            return
        self._params = (self.plan.first if level == 0
                        else round_params(self.plan.n, eps_half, self.source,
                                          self.plan.m_fixed))
        record["m"] = self._params.m
        self._left = units

    def _count_round(self) -> None:
        self._left -= 1
        if self.levels:
            self.levels[-1]["rounds"] += 1

    def _start_round(self) -> None:
        if self._left <= 0:
            if self.levels and self.levels[-1]["epsilon_per_round"] <= 0.0:
                raise self._stop(f"the budget is used up: nothing is left for level "
                                 f"{self._level}")
            planned = self.levels[-1]["rounds_planned"] if self.levels else self.plan.rounds
            raise self._stop(f"level {self._level}'s plan of {planned} rounds is used up")
        need = self._round_costs(self._params)[0]
        ok, remaining = self._fits(need)
        if not ok:
            # The round would not fit: admit nothing more (halt, nothing charged).
            raise self._stop(f"a sieve-and-examine round costs {_show(need)} but only "
                             f"{_show(remaining)} remains")
        run = self.session.start(self._new_sieve(self._params), purpose=self._sieve_purpose())
        self._count_round()
        self._begin(run, self._params)

    def _begin(self, run: SparseVectorRun, params: RoundParams) -> None:
        self.sieve = run
        self._run_params = params
        self.sub = None
        self.rounds += 1

    def _ensure_sieve(self) -> None:
        """A running sieve: the one started with the last examine, else a new round."""
        if self.sieve is None or self.sieve.halted:
            if self._next is not None:  # started together with the last examine
                self._begin(self._next, self._next_params)
                self._next = None
            else:
                self._start_round()

    def _examine(self, request: ReleaseRequest) -> float:
        """Release the round's examine (``request``) and return its noisy value.

        The round ends here. The next round's sieve does not depend on this examine's
        output (its parameters are the level plan's), so when the level's plan has a
        round left and a whole further round fits after this examine (at the examine's
        planned cost), it is admitted and started in the same batch: one ledger
        transaction instead of two. If no further test comes, it stays charged unused."""
        rp = self._run_params
        requests: list[ReleaseRequest] = [request]
        nxt = self._params
        prefetch = self._left > 0 and self._fits(
            self._round_costs(rp)[1] + self._round_costs(nxt)[0])[0]
        if prefetch:
            requests.append((self._new_sieve(nxt), None, self._sieve_purpose()))
        out = self.session.release_many(requests)
        if len(out) > 1:
            self._next = cast(SparseVectorRun, out[1])  # a started stateful mechanism
            self._next_params = nxt
            self._count_round()
        self.examines += 1
        return float(np.asarray(out[0]))

    def _stream(self, upcoming: Sequence[tuple[int, int, Sequence[Sepset]]]) -> None:
        """A level's tests, in the order the tester asks them (the engine's candidates
        and :func:`~dpcg.private.common.ranked_sets`: public, post-processing of earlier
        releases). They are announced to the full data's source
        (:meth:`StatisticSource.expect`), which the examines read, and in windows to each
        round's subsample (:meth:`_announce_sub`), which the sieve reads: on an engine
        that counts where the data live, the scans of a batch instead of one per test.
        Nothing is counted before a release that reads it was admitted, and the same
        scores are computed (``docs/scale.md``)."""
        self._upcoming = list(upcoming)
        self._pos = 0
        self._sub_until = 0
        self._index = {}
        announce(self.source, ((x, y, S) for x, y, sets in upcoming for S in sets))

    def start_level(self, level: int, adjacency: Sequence[frozenset[int]],
                    pairs: Sequence[Pair]) -> None:
        """The PC engine's level start when it asks one test at a time (a fixed plan,
        :class:`~dpcg.pc.engine.LevelListener`): the level's tests are the engine's
        candidates of the frozen adjacency, in its order (:meth:`_stream`)."""
        self._stream([(x, y, CandidateSets(x, y, level, adjacency)) for x, y in pairs])
        self._index = {pair: i for i, pair in enumerate(pairs)}

    def _announce_sub(self) -> None:
        """Announce to the round's subsample the tests of the pairs from the one being
        asked on, up to ``_window`` column sets (a round ends at its first positive, so
        a subsample is told about the next few pairs, not the level; the window follows
        the length of the rounds, which the released positives fix). Level 0's pairs
        that a selection did not keep ask nothing and are skipped."""
        assert self.sub is not None
        kept = self._kept if self._level == 0 else None
        window: list[tuple[int, int, tuple[int, ...]]] = []
        columns: set[tuple[int, ...]] = set()
        i = self._pos
        while i < len(self._upcoming):
            x, y, sets = self._upcoming[i]
            if kept is None or (min(x, y), max(x, y)) in kept:
                more = {column_set((x, y, S)) for S in sets} - columns
                if window and len(columns) + len(more) > self._window:
                    break
                columns |= more
                window.extend((x, y, S) for S in sets)
            i += 1
        self._sub_until = i
        self.sub.expect(window)

    def _sub_score(self, rows: np.ndarray, x: int, y: int, S: tuple[int, ...]) -> float:
        if self.sub is None:
            self.sub = self.source.subset(rows)
            self._sub_until = self._pos
            self._window = min(max(2 * self._sub_reads, SUB_WINDOW_MIN), SUB_WINDOW_SETS)
            self._sub_reads = 0
        elif self._pos >= self._sub_until:
            self._window = min(2 * self._window, SUB_WINDOW_SETS)
        if self._pos >= self._sub_until and self._pos < len(self._upcoming):
            self._announce_sub()
        self._sub_reads += 1
        return self.sub.score(x, y, S)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        self._pos = self._index.get((x, y), self._pos)
        if len(S) != self._level:
            self._enter_level(len(S))
        if not S and self._kept is not None and (min(x, y), max(x, y)) not in self._kept:
            self._removed += 1  # not kept by level 0's selection: independent given {}
            return CIResult(True, None, None)
        self._ensure_sieve()
        src = self.source
        rp = self._run_params
        T = src.threshold(x, y, S)
        bar = T + self.plan.tweak
        # public: the sieve's Delta_m over the test's own bound at m rows (>= 1; the
        # smaller bound of a test given the empty set where the score has one)
        k = rp.sensitivity_sub / src.sensitivity(rp.m, pair=(x, y), S=bound_given(S))
        assert self.sieve is not None  # started above
        positive = bool(self.sieve.test(
            lambda rows: k * (bar - self._sub_score(rows, x, y, S))))
        if not positive:
            return CIResult(False, None, None)
        mech = self._examine_mech(rp, src.sensitivity(pair=(x, y), S=bound_given(S)))
        noisy = self._examine((mech, lambda: src.score(x, y, S),
                               f"priv-pc examine {x} _||_ {y} | {list(S)}"))
        independent = noisy <= T + self._margin * laplace_noise_sd(mech)
        if independent:
            self._removed += 1
        return CIResult(independent, noisy, None)


def laplace_noise_sd(mech: Laplace) -> float:
    """The standard deviation ``sqrt(2) Delta/eps`` of an examine's Laplace noise (a
    function of the public mechanism)."""
    return math.sqrt(2.0) * mech.scale


def split_examine(epsilon_half: float, rule: str) -> tuple[float, float]:
    """``(examine, pick)`` epsilons of a per-pair round whose examine half is
    ``epsilon_half``: together they cost at most one ``Laplace(eps/2)`` examine. Under
    ``basic``: ``3/4`` and ``1/4`` of it; under ``zcdp`` (a pure ``e`` examine costs
    ``e^2/2``, the bounded-range pick ``e^2/8``): ``sqrt(3)/2`` of it and all of it,
    ``3/8 + 1/8 = 1/2``. Checked in exact arithmetic (public)."""
    e = Fraction(epsilon_half)
    if rule == "basic":
        ex = 0.75 * epsilon_half
        pick = epsilon_half - ex
        while Fraction(ex) + Fraction(pick) > e:  # pragma: no cover - exact in binary
            pick = math.nextafter(pick, 0.0)
        return ex, pick
    ex, pick = epsilon_half * math.sqrt(3.0) / 2.0, epsilon_half
    while Fraction(ex) ** 2 / 2 + Fraction(pick) ** 2 / 8 > e * e / 2:
        ex = math.nextafter(ex, 0.0)
    return ex, pick


class PairSieveTester(SieveExamineTester):
    """Priv-PC with per-pair queries (``release='pair'``, the default of the per-level
    plans): a level strategy (:class:`dpcg.pc.engine.LevelStrategy`).

    Level 0 is :class:`SieveExamineTester`'s (one test per pair, or the selection). At a
    level ``l >= 1`` each open pair with candidate sets ``C`` (the ranked subsets of
    :func:`dpcg.private.common.ranked_sets` when there are many; strength = released
    level-0 examine values, pairs the sieve kept without an examine ranking first) asks
    one sieve query, ``k max_S (T + t - s_m(x, y | S))`` on the round's subsample
    (sensitivity ``Delta_m``, as for one test: a maximum of functions each within
    ``Delta_m(x, y)``, scaled by ``k``), again with fresh query noise after a dependent
    answer, up to ``plan.sieve_asks`` times (a dependent answer costs the SVT nothing).
    On a positive, the examine releases
    ``min_S (s(x, y | S) - T) + Lap(Delta(x, y)/e_x)`` on the full data (removed when
    ``<= 0``), and a removed pair with several sets picks its separating set with one
    ``Exponential(Delta(x, y), e_p)`` on ``T - s``; ``(e_x, e_p) = split_examine(eps/2)``
    costs at most the round's examine. A level's plan has one round per open pair (a
    pair asks once). Proof note: ``docs/privacy/algorithm-priv-pc.md``."""

    def __init__(self, plan: PrivPCPlan, source: StatisticSource, session: Session) -> None:
        super().__init__(plan, source, session)
        self._strength: dict[Pair, float] = {}  # released level-0 values (post-processing)
        self.picks = 0

    def decide_level(self, level: int, candidates: LevelCandidates) -> dict[Pair, Sepset]:
        pairs = [pair for pair in candidates if candidates[pair]]
        removals: dict[Pair, Sepset] = {}
        try:
            if level == 0 and self.plan.hub_k and self._hub_switch(pairs):
                return self._hub_level_zero(pairs, candidates)
            if self.hub and level > self._horizon:
                return removals  # the hub plan's depth: nothing more is asked
            if level == 0:
                self._stream([(x, y, ((),)) for x, y in pairs])
                for i, (x, y) in enumerate(pairs):
                    self._pos = i
                    res = self.test(x, y, ())
                    candidates.record(x, y, (), res)
                    self._strength[(x, y)] = (math.inf if res.statistic is None
                                              else float(res.statistic))
                    if res.independent:
                        removals[(x, y)] = ()
                return removals
            if not pairs:
                return removals
            self._enter_level(level, units=len(pairs))
            asked = [(x, y, ranked_sets(level, (x, y), candidates, self._strength))
                     for x, y in pairs]
            self._stream(asked)
            for i, (x, y, sets) in enumerate(asked):
                self._pos = i
                res, S = self._pair(x, y, sets)
                if res.independent:
                    removals[(x, y)] = S
                    candidates.record(x, y, S, res)
            return removals
        except (BudgetExceededError, SessionHaltedError) as exc:
            hand_over(exc, removals)
            raise

    def _hub_switch(self, pairs: Sequence[Pair]) -> bool:
        """Level 0's hub switch: forced (nothing released), or one
        ``Laplace(1/clip, check_epsilon)`` release of the mean over level 0's pairs of
        ``min(max(u, 0), clip)/clip``, ``u = (s(x, y | {}) - T(x, y))/Delta(x, y)`` the
        selections' marginal utility (each term moves by at most ``1/clip`` between
        neighbours, so the mean does too); the switch is taken when the noisy mean is
        at least ``check_density`` and times ``p - 1`` at least ``check_partners``
        (post-processing)."""
        plan = self.plan
        if plan.hub_force:
            self.hub = True
            return True
        src = self.source
        clip = plan.check_clip

        def density() -> float:
            u = marginal_utilities(src, pairs, planning.SELECTION_EMPTY_SET_BOUND)
            return float(np.mean(np.clip(u, 0.0, clip))) / clip if len(u) else 0.0

        try:
            noisy = float(np.asarray(self.session.release(
                Laplace(1.0 / clip, plan.check_epsilon), density,
                purpose=f"priv-pc level 0: hub check, mean over {len(pairs)} pairs of the "
                        f"marginal utility clipped to [0, {clip:.6g}] / {clip:.6g}")))
        except (BudgetExceededError, SessionHaltedError) as exc:
            self.exhaustion_note = exhaustion_note(0, str(exc))
            raise
        self.hub_density = noisy
        self.hub = (noisy >= plan.check_density
                    and noisy * (src.p - 1) >= plan.check_partners)
        return self.hub

    def _hub_level_zero(self, pairs: list[Pair], candidates: LevelCandidates
                        ) -> dict[Pair, Sepset]:
        """Level 0 under the hub switch: Hub-PC's per-node selection (one top-k release
        per node with more than ``hub_k`` pairs, :func:`select_node_partners`); the pairs
        no endpoint keeps are removed with the empty set, the kept ones are not tested
        at level 0; levels ``1..hub_depth`` then share what is left, their sieve asks a
        pair up to ``hub_sieve_asks`` times, and their examines remove below
        ``hub_margin`` sd."""
        plan = self.plan
        self._level = 0
        try:
            strength = select_node_partners(self.source, self.session, plan.hub_k,
                                            plan.hub_select_epsilon, "priv-pc", pairs=pairs)
        except BudgetExceededError as exc:
            self.exhaustion_note = exhaustion_note(0, str(exc))
            raise
        self._kept = set(strength)
        self._strength = dict(strength)  # post-processing of the selection
        self._horizon = plan.hub_depth
        self._margin = plan.hub_margin
        self._asks = plan.hub_sieve_asks
        removals: dict[Pair, Sepset] = {}
        for x, y in pairs:
            kept = (x, y) in strength
            candidates.record(x, y, (), CIResult(not kept, None, None))
            if not kept:
                removals[(x, y)] = ()
        self._removed += len(removals)
        self.levels.append({"level": 0, "open_pairs": len(pairs), "hub": True,
                            "selected": len(strength), "rounds_planned": 0, "rounds": 0})
        return removals

    def _pair(self, x: int, y: int, sets: tuple[Sepset, ...]) -> tuple[CIResult, Sepset]:
        """One pair at a level >= 1: sieve query, examine, separating-set pick."""
        self._ensure_sieve()
        src = self.source
        rp = self._run_params
        tweak = self.plan.tweak
        k = rp.sensitivity_sub / src.sensitivity(rp.m, pair=(x, y))
        sieve = self.sieve
        assert sieve is not None  # started above

        def query(rows: np.ndarray) -> float:
            return k * max(src.threshold(x, y, S) + tweak - self._sub_score(rows, x, y, S)
                           for S in sets)

        positive = False
        for _ in range(self._asks):  # a dependent answer is free (SVT)
            if sieve.test(query):
                positive = True
                break
        if not positive:
            return CIResult(False, None, None), sets[0]
        e_x, e_p = split_examine(rp.epsilon_half, self.plan.rule)
        sens = src.sensitivity(pair=(x, y))
        noisy = self._examine((
            Laplace(sens, e_x),
            lambda: min(src.score(x, y, S) - src.threshold(x, y, S) for S in sets),
            f"priv-pc examine: min over {len(sets)} level-{len(sets[0])} sets of score - T, "
            f"{x} _||_ {y}"))
        if noisy > self._margin * laplace_noise_sd(Laplace(sens, e_x)):
            return CIResult(False, noisy, None), sets[0]
        self._removed += 1
        S = sets[0]
        if len(sets) > 1:
            idx = int(self.session.release(
                Exponential(sens, e_p),
                lambda: np.array([src.threshold(x, y, T) - src.score(x, y, T) for T in sets],
                                 dtype=np.float64),
                purpose=f"priv-pc level-{len(sets[0])} separating set of {x} _||_ {y}"))
            S = sets[idx]
            self.picks += 1
        return CIResult(True, noisy, None), S


class TestThenPairTester(PairSieveTester):
    """Priv-PC's per-level plans with ``release='test'`` (the default without a level-0
    selection until 2026-12-02): one sieve query per test, as published, until the
    level's plan could no longer give every undecided pair one more round; from then on
    one per-pair query (:class:`PairSieveTester`) per undecided pair over its remaining
    sets. So a level never uses up its plan: a per-test query is asked only while the
    rounds available (those left in the plan, plus a sieve already running) exceed the
    undecided pairs, and a query uses at most one round, after which a dependent answer
    leaves every undecided pair its round (``docs/privacy/algorithm-priv-pc.md``). Where
    that condition never binds, the queries, their order and their costs are the
    per-test tester's."""

    def decide_level(self, level: int, candidates: LevelCandidates) -> dict[Pair, Sepset]:
        if level == 0:
            return super().decide_level(level, candidates)
        pairs = [pair for pair in candidates if candidates[pair]]
        removals: dict[Pair, Sepset] = {}
        if not pairs:
            return removals
        try:
            self._enter_level(level)  # the per-test plan: level_rounds(open pairs, level)
            undecided = len(pairs)
            per_test = True
            self._stream([(x, y, candidates[(x, y)]) for x, y in pairs])
            for i, (x, y) in enumerate(pairs):
                self._pos = i
                sets = candidates[(x, y)]
                for j, S in enumerate(sets):
                    if per_test and self._available() <= undecided:
                        per_test = False
                        if self.levels:
                            self.levels[-1]["per_pair_from"] = len(pairs) - undecided
                    if not per_test:
                        rest = self._remaining_sets(level, (x, y), candidates,
                                                    tuple(islice(sets, j, None)))
                        res, sep = self._pair(x, y, rest)
                        if res.independent:
                            removals[(x, y)] = sep
                            candidates.record(x, y, sep, res)
                        break
                    res = self.test(x, y, S)
                    candidates.record(x, y, S, res)
                    if res.independent:
                        removals[(x, y)] = S
                        break
                undecided -= 1
            return removals
        except (BudgetExceededError, SessionHaltedError) as exc:
            hand_over(exc, removals)
            raise

    def _available(self) -> int:
        """Rounds this level can still start: those left in its plan, plus one if a
        sieve is already running (started, or started together with the last
        examine)."""
        running = self._next is not None or (self.sieve is not None and not self.sieve.halted)
        return self._left + int(running)

    def _remaining_sets(self, level: int, pair: Pair, candidates: LevelCandidates,
                        rest: tuple[Sepset, ...]) -> tuple[Sepset, ...]:
        """The sets a per-pair query runs over: the pair's untested sets, ranked as
        :func:`dpcg.private.common.ranked_sets` ranks them when there are many."""
        if len(rest) <= 2 * SETS_PER_SIDE:
            return rest
        left = set(rest)
        ranked = tuple(S for S in ranked_sets(level, pair, candidates, self._strength)
                       if S in left)
        return ranked or rest[:2 * SETS_PER_SIDE]


class PrivPC(DiscreteAlgorithm[PrivPCParams, PrivPCPlan, SieveExamineTester]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``priv-pc``."""

    name = "priv-pc"
    description = "Priv-PC sieve-and-examine: subsampled SVT sieve + Laplace examine per round"
    params = PrivPCParams
    proof_note = "docs/privacy/algorithm-priv-pc.md"

    def plan(self, params: PrivPCParams, settings: RunSettings,
             source: StatisticSource) -> PrivPCPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: PrivPCPlan, source: StatisticSource,
               session: Session) -> SieveExamineTester:
        if plan.per_level and plan.pair_release:
            return PairSieveTester(plan, source, session)
        if plan.per_level:
            return TestThenPairTester(plan, source, session)
        return SieveExamineTester(plan, source, session)

    def usage(self, tester: SieveExamineTester) -> dict[str, object]:
        out: dict[str, object] = {
            "used_rounds": tester.rounds, "used_unused_sieves": tester.unused_sieves,
            "used_examines": tester.examines, "used_levels": tester.levels,
            "used_unspent": unspent(tester.session)}
        if isinstance(tester, PairSieveTester):
            out["used_sepset_picks"] = tester.picks
        if tester.plan.hub_k:
            out["used_hub_switch"] = bool(tester.hub)
            out["used_hub_density"] = tester.hub_density
        return out


def optimal_rate_check(eps_round: float) -> float:
    """``(e^{eps/2} - 1)/3.9216`` before clipping (for docs/tests)."""
    return math.expm1(eps_round / 2.0) / 3.9216


ALGORITHM = register_algorithm(PrivPC())
