"""Hub-PC: each node's strongest neighbours by a private top-k, then per-pair releases.

On hub networks at large ``n`` nearly every pair is marginally dependent, so level 0
removes little, and a global top-K of the pairs (Laplace-PC's and Priv-PC's level-0
selection) ranks two children of a hub or a grandparent and its grandchild as high as
true edges: it keeps too few true edges (``docs/benchmarks/hubs-private.md``). Hub-PC
replaces level 0 by a **per-node** selection:

* **Level 0.** For each node ``a`` (in index order, all chosen before any output is seen)
  one :class:`~accounting.mechanisms.TopK` release keeps its ``k`` strongest partners
  among the pairs the engine asks at level 0, on the utilities
  ``u(a, b) = (s(a, b | {}) - T(a, b)) / Delta(a, b)`` (sensitivity 1; ``Delta`` the bound
  of a test given the empty set, as in the family's level-0 selections). A node with at
  most ``k`` such pairs keeps them all without a release (a count of public pairs). The
  candidate skeleton is the union of the kept pairs; every other pair is removed with
  the empty separating set (as the family's selections do). Nothing else is released at
  level 0. The ``p`` releases cost ``p k`` exponential-mechanism steps of
  ``eps_step`` each, fixed in the plan from ``select_share`` of the budget.
* **Levels 1..D.** Laplace-PC's per-pair releases (:class:`PairMinTest`): per open pair
  one noisy ``min_S (s - T)`` over its (ranked) candidate sets, then one exponential-
  mechanism pick of the separating set per removed pair; a pair is removed when its
  noisy minimum is at most ``margin`` standard deviations of its release's noise
  (0 is Laplace-PC's rule). Defaults from public facts (:func:`hub_defaults`): ``k = 8``
  and ``margin = 1`` when ``n eps >= 100,000``, else ``k = 4`` and ``margin = 0``. Level ``l`` gets
  ``1/(D - l + 1)`` of what is left when it starts, so the last level (``D``, the depth
  cap, default :data:`HUB_DEPTH`) spends the rest. The neighbours' strengths that rank
  the candidate sets are post-processing of the selection (a partner kept ``j``-th of
  ``k`` has strength ``k - j``, the larger of its two endpoints').

Every release goes through the session (the filter admits it before any score is
computed). Proof note: ``docs/privacy/algorithm-hub-pc.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from accounting.errors import BudgetExceededError, InvalidParameterError
from accounting.mechanisms import Gaussian, Laplace
from accounting.session import Session
from dpcg.citests.base import CIResult
from dpcg.citests.private import StatisticSource
from dpcg.citests.registry import option
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import LevelCandidates, Pair, Sepset, hand_over
from dpcg.private.common import (
    DiscreteAlgorithm,
    check_count_field,
    check_number_field,
    exhaustion_note,
    node_pairs,
    select_node_partners,
    unspent,
)
from dpcg.private.contract import RunSettings
from dpcg.private.laplace_pc import (
    SEPSET_SHARE,
    LaplacePlan,
    PairMinTest,
    choose_rule,
    level_release,
)
from dpcg.private.planning import HUB_DEPTH, n_pairs, selection_epsilon
from dpcg.private.registry import register_algorithm

__all__ = [
    "HUB_DEPTH",
    "HUB_MARGIN",
    "HUB_NEIGHBOURS",
    "HUB_NEIGHBOURS_NARROW",
    "HUB_SELECT_SHARE",
    "HUB_WIDE_AT",
    "HubPC",
    "HubPCParams",
    "HubPlan",
    "HubTest",
    "hub_defaults",
    "make_plan",
    "noise_sd",
]

#: Default partners kept per node when ``n eps >= HUB_WIDE_AT`` (public;
#: ``docs/benchmarks/hubs-private.md``: tuned with :data:`HUB_MARGIN` on the tuning seeds
#: 11, 12 of hub-50 and hub-100 at 100,000 rows; the noise-free per-node selection holds
#: .83 of the true edges at k = 4 on hub-50, and a larger selection pays off once the
#: levels remove the pairs their noise keeps).
HUB_NEIGHBOURS = 8
#: Default partners per node below ``HUB_WIDE_AT`` (the former default: where the
#: per-pair noise is large against the signal, fewer candidates and no margin do better).
HUB_NEIGHBOURS_NARROW = 4
#: Default share of the budget (epsilon under ``basic``, rho under ``zcdp``) that the
#: level-0 selection costs; levels 1..D share the rest.
HUB_SELECT_SHARE = 0.25
#: Default removal margin of levels 1..D when ``n eps >= HUB_WIDE_AT``, in standard
#: deviations of a pair's release noise (public; ``docs/benchmarks/hubs-private.md``): at
#: large ``n`` a dependent pair's margin is far above the noise and a separable one's a
#: few sensitivities below 0, so the noise, not the sign, keeps the false pairs; removing
#: below one sd trades little recall for precision. Below ``HUB_WIDE_AT``: 0.
HUB_MARGIN = 1.0
#: ``n eps`` (rows times the run's total epsilon, both public) from which the defaults
#: are the wide selection with a margin (``k = 8, M = 1``) rather than ``k = 4, M = 0``:
#: measured better at 100,000 rows and eps 1 and 5, worse at 10,000 rows and eps 1
#: (hub-50 and the uniform 50-node family), about even at 10,000 rows and eps 5.
HUB_WIDE_AT = 100_000


def hub_defaults(n: int, epsilon: float) -> tuple[int, float]:
    """The default ``(k, M)`` from public facts: ``(HUB_NEIGHBOURS, HUB_MARGIN)`` when
    ``n epsilon >= HUB_WIDE_AT``, else ``(HUB_NEIGHBOURS_NARROW, 0)``."""
    if n * epsilon >= HUB_WIDE_AT:
        return HUB_NEIGHBOURS, HUB_MARGIN
    return HUB_NEIGHBOURS_NARROW, 0.0


@dataclass(frozen=True)
class HubPCParams:
    """Hub-PC's options (all public hyper-parameters)."""

    neighbours: int | None = option(
        None, type=int, metavar="K",
        help="level 0: partners kept per node by its private top-k (the candidate "
             "skeleton is the union); default 8 when rows x epsilon >= 100,000, else 4")
    select_share: float = option(
        HUB_SELECT_SHARE, type=float, metavar="F",
        help="share of the budget the level-0 selection costs (0 < F < 1); levels "
             "1..D share the rest")
    margin: float | None = option(
        None, type=float, metavar="M",
        help="levels 1..D: a pair is removed when its noisy minimum of score - T is at "
             "most M standard deviations of its release's noise (M >= 0; 0: at most 0); "
             "default 1 when rows x epsilon >= 100,000, else 0")
    rule: str | None = option(
        None, type=str,
        help="composition rule: basic (Laplace) or zcdp (Gaussian); default: chosen "
             "from public information")

    def __post_init__(self) -> None:
        if self.neighbours is not None:
            check_count_field("neighbours", self.neighbours)
        if self.margin is not None:
            check_number_field("margin", self.margin, nonnegative=True)
        check_number_field("select_share", self.select_share, positive=True)
        if not 0.0 < self.select_share < 1.0:
            raise AlgorithmError(f"select_share: expected a number in (0, 1), got "
                                 f"{self.select_share!r}")
        if self.rule is not None and self.rule not in ("basic", "zcdp"):
            raise AlgorithmError(f"rule: expected 'basic', 'zcdp' or None, got {self.rule!r}")


@dataclass(frozen=True)
class HubPlan:
    """The public plan: ``k`` partners per node at ``select_epsilon`` per top-k step
    (``p`` releases at most), then Laplace-PC's per-pair levels (``base``) up to
    ``depth``."""

    base: LaplacePlan
    k: int
    select_epsilon: float
    select_share: float
    depth: int
    margin: float = 0.0

    @property
    def rule(self) -> str:
        return self.base.rule

    @property
    def max_depth(self) -> int | None:
        return self.depth

    def describe(self) -> dict[str, Any]:
        return {"rule": self.rule, "sensitivity": self.base.sensitivity,
                "max_depth": self.depth, "neighbours": self.k,
                "select_epsilon": self.select_epsilon, "select_share": self.select_share,
                "release": "pair", "sepset_share": float(SEPSET_SHARE),
                "margin": self.margin}


def make_plan(params: HubPCParams, settings: RunSettings,
              source: StatisticSource) -> HubPlan:
    """The plan from public facts (``p``, the budget, the score's sensitivity and the
    options); refuses (before anything is charged) a budget too small for a useful
    release."""
    budget = settings.budget()
    if params.rule == "zcdp" and budget.delta <= 0:
        raise AlgorithmError("rule: 'zcdp' needs delta > 0 to convert to (epsilon, delta)")
    p = source.p
    depth = max(0, min(HUB_DEPTH if settings.max_depth is None else settings.max_depth,
                       p - 2))
    wide_k, wide_m = hub_defaults(source.n, float(budget.epsilon))
    k = min(wide_k if params.neighbours is None else params.neighbours, max(p - 1, 1))
    margin = wide_m if params.margin is None else float(params.margin)
    sens = source.sensitivity()
    pairs = n_pairs(p)
    try:
        rule = params.rule or choose_rule(budget, max(p * k * (depth + 1), 1), sens)
    except InvalidParameterError:  # a budget beyond the samplers' range
        raise AlgorithmError("epsilon: too small for hub-pc's releases; give a larger "
                             "budget") from None
    total = Fraction(budget.epsilon_exact) if rule == "basic" else Fraction(budget.rho())
    share = Fraction(params.select_share)
    eps = selection_epsilon(rule, total * share, max(p * k, 1))
    # the levels' per-pair releases as first sized (descriptive; each level re-plans)
    first = level_release(rule, total * (1 - share) / max(depth, 1) / max(p * k, 1))
    if eps <= 0.0 or first is None:
        raise AlgorithmError("epsilon: too small for hub-pc's level-0 selection and "
                             "per-pair levels; give a larger budget")
    base = LaplacePlan(rule, pairs, first, sens, depth, per_level=True, depth=depth,
                       pair_release=True)
    return HubPlan(base, k, eps, float(params.select_share), depth, margin)


def noise_sd(mech: Laplace | Gaussian) -> float:
    """The standard deviation of a per-pair release's noise: ``sqrt(2) Delta/eps``
    (Laplace) or ``sigma`` (Gaussian), a function of the public mechanism."""
    if isinstance(mech, Laplace):
        return math.sqrt(2.0) * mech.scale
    return float(mech.sigma)


class HubTest(PairMinTest):
    """Hub-PC's level strategy: :class:`PairMinTest` with level 0 replaced by the
    per-node top-k selection (module docstring)."""

    def __init__(self, plan: HubPlan, source: StatisticSource, session: Session) -> None:
        super().__init__(plan.base, source, session)
        self.hplan = plan

    def level_slots(self, level: int) -> int:
        """Level ``l >= 1`` gets ``1/(D - l + 1)`` of what is left when it starts, so
        level ``D`` spends the rest (public; level 0's selection has its own fixed
        cost)."""
        return max(self.hplan.depth - level + 1, 1)

    def removal_cut(self, x: int, y: int) -> float:
        """Levels ``1..D`` remove a pair when its noisy minimum is at most ``margin``
        standard deviations of its release's noise (public: the plan's margin, the
        level's mechanism and the pair's bound)."""
        if self.hplan.margin == 0.0:
            return 0.0
        return self.hplan.margin * noise_sd(self.mechanism(x, y))

    def _level_zero(self, pairs: list[Pair], candidates: LevelCandidates
                    ) -> dict[Pair, Sepset]:
        src = self.source
        k = self.hplan.k
        asked = sum(1 for idx in node_pairs(src.p, pairs) if len(idx) > k)
        rec = self.levels[-1]
        # the selection's planned share (nothing is spent before level 0)
        rec.update(rounds=1, tests=0, selections=asked,
                   share=float(Fraction(self.hplan.select_share) * self._remaining()))
        try:
            strength = select_node_partners(src, self.session, k, self.hplan.select_epsilon,
                                            "hub-pc", pairs=pairs)
        except BudgetExceededError as exc:
            self.exhaustion_note = exhaustion_note(0, str(exc))
            raise hand_over(exc, {}) from None
        self.releases += asked
        self._strength = strength
        removals: dict[Pair, Sepset] = {}
        for x, y in pairs:
            kept = (x, y) in strength
            candidates.record(x, y, (), CIResult(not kept, None, None))
            if not kept:
                removals[(x, y)] = ()
        rec["selected"] = len(strength)
        return removals


class HubPC(DiscreteAlgorithm[HubPCParams, HubPlan, HubTest]):
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``hub-pc``."""

    name = "hub-pc"
    description = ("PC for hub networks: each node keeps its k strongest partners by a "
                   "private top-k, then per-pair noisy minima within the selection up to "
                   "depth 3")
    params = HubPCParams
    proof_note = "docs/privacy/algorithm-hub-pc.md"
    reproduces_pc = False  # the selection decides which pairs are tested at all

    def plan(self, params: HubPCParams, settings: RunSettings,
             source: StatisticSource) -> HubPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: HubPlan, source: StatisticSource, session: Session) -> HubTest:
        return HubTest(plan, source, session)

    def usage(self, tester: HubTest) -> dict[str, object]:
        return {"used_releases": tester.releases, "used_levels": tester.levels,
                "used_unspent": unspent(tester.session)}


ALGORITHM = register_algorithm(HubPC())
