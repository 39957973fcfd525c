"""Marginal-PC: CI tests that share releases of noisy marginal contingency tables.

Every discrete CI test ``x _||_ y | S`` is a function of the marginal table over
``{x, y} u S``. Marginal-PC releases such tables (zCDP, the Gaussian mechanism on the
full count tables) and derives every test from them. A level's tables are released as
ONE Gaussian mechanism on their concatenated counts (L2 sensitivity ``sqrt(2 T)`` for
``T`` tables under replace-one, :func:`dpcg.stats.marginals.joint_table_l2`), so a run
makes one release per level and every test of the level is read from it:

* **level 0**: one 2-way table per pair (every pair's test given the empty set);
* **level l >= 1**: for each pair still adjacent, up to ``sets_per_pair`` of its
  candidate sets (ranked by the released level-0 strength of each member to *both*
  endpoints, :meth:`MarginalTester._ranked`); the level releases one table per
  distinct variable set ``{x, y} u S`` among those tests, so a 3-way table ``(x, y, z)``
  serves ``x _||_ y | z``, ``x _||_ z | y`` and ``y _||_ z | x`` when all three are asked,
  and a ``(l + 2)``-way table up to ``C(l + 2, 2)`` tests. A test is read from the
  released table over the fewest cells that holds its variables (a wider table serves a
  narrower test by summation, with the summed noise's variance).

Which tables a level releases is decided from the frozen adjacency (post-processing of
earlier released decisions) and released strengths; each level's budget from public
facts: level ``l`` gets ``1/(D - l + 2)`` of the zCDP budget the filter has left (``D``
the planned depth), shared equally by the tables it releases (the joint release's cost;
every cell's noise variance is the level's ``T / rho_level``). A table whose size exceeds
``max_cells`` (public: schema and ``n``) is not released; its tests are not asked.

**Level 0 by a private selection** (``level0 = "select"``, or ``"auto"`` by the public
rule :func:`level0_mode`): level 0 first keeps pairs by the per-test family's top-k on
the marginal utilities of ``select_score`` (each node's ``select_per_node`` strongest
partners, Hub-PC's selection, or one global top-K over the pairs), at ``select_share`` of
the budget; the other pairs are removed with the empty set, and only the kept pairs'
2-way tables are released (one joint release; ``kept_tables = 0``: none, the selection's
order ranks level 1's sets). It costs in the number of kept pairs, not of pairs.

Each test is :func:`dpcg.citests.noisy_g2.noisy_g2_test` on the released sub-table
(negative counts projected to 0, the noise's variance in a Monte-Carlo null), so at zero
noise it is the G-test. A pair is removed when some asked test does not reject at
``alpha``; its separating set is the one with the largest p-value (PC-Max's rule).
Proof note: ``docs/privacy/algorithm-marginal-pc.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from accounting.costs import round_down
from accounting.errors import AccountingError, BudgetExceededError
from accounting.mechanisms import Gaussian
from accounting.noise import check_gaussian_scale
from accounting.relations import Relation
from accounting.session import Session
from dpcg.citests.base import CIResult
from dpcg.citests.noisy_g2 import DEFAULT_DRAWS, noisy_g2_test
from dpcg.citests.nonprivate import G2Options
from dpcg.citests.private import DEFAULT_SCORE, SCORES, StatisticSource, source_for_dataset
from dpcg.citests.registry import NoOptions, option
from dpcg.data.dataset import Dataset
from dpcg.errors import AlgorithmError, DpcgError
from dpcg.pc.engine import LevelCandidates, Pair, Sepset
from dpcg.private.common import (
    SETS_PER_SIDE,
    check_count_field,
    exhaustion_note,
    node_pairs,
    select_node_partners,
    select_pairs_ranked,
    unspent,
)
from dpcg.private.contract import RunSettings, ScoreCache
from dpcg.private.planning import planned_depth, selection_epsilon
from dpcg.private.registry import register_algorithm
from dpcg.stats.marginals import (
    COUNT_TABLE_L2,
    cells,
    joint_table_l2,
    marginal_counts,
    marginals_of_pairs,
    strata_view,
)

__all__ = ["MarginalPC", "MarginalPCParams", "MarginalPlan", "MarginalSource",
           "MarginalTester", "level_slots"]

#: Levels provisioned for when ``max_depth`` is not given (public).
DEFAULT_DEPTH = 2
#: The smallest per-table rho worth releasing (noise sd above ~2^20 counts otherwise).
MIN_TABLE_RHO = 2.0 ** -41
#: Default share of the budget for level 0's 2-way tables (public; level 0's tests have
#: the strongest signals, the later levels need more tables: measured on alarm,
#: insurance and child at eps 1, docs/benchmarks/marginal-pc.md).
LEVEL0_SHARE = 0.15
#: Default ``max_noise``: at level ``l``, per-cell noise variance at most this many
#: mean counts over ``l`` (deeper tables are wider, their tests spread a dependence over
#: more degrees of freedom; measured on child, insurance, alarm and random-50 at eps 1,
#: docs/benchmarks/marginal-pc.md).
MAX_NOISE = 60.0
#: Default ``max_cells``: a table is released only if ``n / cells >= ROWS_PER_CELL``.
ROWS_PER_CELL = 20
#: ``level0`` values: ``tables`` (one 2-way table per pair), ``select`` (a private
#: selection of pairs first, then 2-way tables of the kept pairs only), ``auto`` (the
#: public rule :func:`level0_mode`).
LEVEL0_MODES = ("tables", "select", "auto")
#: ``select_by`` values: ``pairs`` (one global top-K over the pairs, Laplace-PC's and
#: Priv-PC's level-0 selection), ``nodes`` (Hub-PC's per-node top-k) or ``both`` (the
#: per-node releases and one global top-K, the union kept).
SELECT_BY = ("pairs", "nodes", "both")
#: Default share of the budget (rho) the level-0 selection costs under ``select``.
SELECT_SHARE = 0.10
#: Default pairs kept per node by the selection: ``K = ceil(SELECT_PER_NODE p)`` pairs
#: (``pairs``), ``SELECT_PER_NODE`` partners per node (``nodes``).
SELECT_PER_NODE = 6


def level_slots(level: int, depth: int) -> int:
    """Level ``l`` gets ``1/level_slots`` of what is left: ``D - l + 2`` up to the
    planned depth ``D``, 2 past it (public; every level has something)."""
    return depth - level + 2 if level <= depth else 2


@dataclass(frozen=True)
class MarginalPCParams:
    """Marginal-PC's options (all public hyper-parameters)."""

    sets_per_pair: int = option(
        4, type=int, metavar="K",
        help="at a level >= 1, the candidate sets asked per pair (the K ranked first by "
             "the released level-0 strengths of the endpoints' neighbours)")
    max_cells: int | None = option(
        None, type=int, metavar="C",
        help="largest table released (cells); default n / 20 (public)")
    draws: int = option(
        DEFAULT_DRAWS, type=int, metavar="B",
        help="Monte-Carlo draws of each test's noisy null (post-processing)")
    max_noise: float = option(
        MAX_NOISE, type=float, metavar="G",
        help="at a level l >= 1, a table is released only while its per-cell noise "
             "variance is at most G/l times its mean count n/cells (a test whose noise "
             "swamps its counts has no power and would remove true edges); the level "
             "releases the most-shared tables that fit")
    level0_share: float | None = option(
        None, type=float, metavar="F",
        help=f"share of the budget for level 0's 2-way tables (default {LEVEL0_SHARE}); "
             "with --level0 select, for the kept pairs' tables")
    level0: str = option(
        "auto", type=str, metavar="tables|select|auto",
        help="level 0: 'tables' releases one 2-way table per pair; 'select' first keeps "
             "pairs by a private top-k on the per-test family's marginal utilities, then "
             "releases 2-way tables of the kept pairs only; 'auto' (default): 'select' "
             "from 40 variables on or where the tables' level-0 noise sd per cell would be "
             ">= 400 counts (public: p and the budget)")
    select_by: str = option(
        "nodes", type=str, metavar="pairs|nodes|both",
        help="with --level0 select: one global top-K over the pairs ('pairs'), each "
             "node's top-k partners ('nodes', Hub-PC's selection) or the union of both "
             "('both')")
    select_share: float = option(
        SELECT_SHARE, type=float, metavar="F",
        help="with --level0 select: share of the budget the selection costs (0 < F < 1)")
    select_per_node: int = option(
        SELECT_PER_NODE, type=int, metavar="K",
        help="with --level0 select: pairs kept per node (K p pairs in all for 'pairs', K "
             "partners per node for 'nodes')")
    select_score: str = option(
        DEFAULT_SCORE, type=str, metavar="SCORE",
        help="with --level0 select: the per-test family's score whose marginal utilities "
             f"the selection ranks (one of {', '.join(SCORES)}; default {DEFAULT_SCORE})")
    horizon: int | None = option(
        None, type=int, metavar="D",
        help=f"levels the budget is planned over (level l gets 1/(D - l + 2) of what is "
             f"left; deeper levels still run on half of the rest); default "
             f"{DEFAULT_DEPTH}, or --max-depth when given")
    kept_tables: int = option(
        1, type=int, metavar="0|1",
        help="with --level0 select: 1 releases the kept pairs' 2-way tables (one joint "
             "release; their G-tests decide level 0 and rank level 1's sets); 0 ranks by "
             "the selection's order and tests nothing at level 0")

    def __post_init__(self) -> None:
        check_count_field("sets_per_pair", self.sets_per_pair)
        if self.max_cells is not None:
            check_count_field("max_cells", self.max_cells, minimum=4)
        check_count_field("draws", self.draws, minimum=19)
        g = self.max_noise
        if isinstance(g, bool) or not isinstance(g, int | float) or not (
                math.isfinite(g) and g > 0.0):
            raise AlgorithmError(f"max_noise: expected a finite number > 0, got {g!r}")
        if self.level0_share is not None:
            v = self.level0_share
            if isinstance(v, bool) or not isinstance(v, int | float) or not (
                    math.isfinite(v) and 0.0 < v < 1.0):
                raise AlgorithmError(f"level0_share: expected a number in (0, 1), got {v!r}")
        if not isinstance(self.level0, str) or self.level0 not in LEVEL0_MODES:
            raise AlgorithmError(f"level0: expected one of {', '.join(LEVEL0_MODES)}, got "
                                 f"{self.level0!r}")
        if not isinstance(self.select_by, str) or self.select_by not in SELECT_BY:
            raise AlgorithmError(f"select_by: expected one of {', '.join(SELECT_BY)}, got "
                                 f"{self.select_by!r}")
        f = self.select_share
        if isinstance(f, bool) or not isinstance(f, int | float) or not (
                math.isfinite(f) and 0.0 < f < 1.0):
            raise AlgorithmError(f"select_share: expected a number in (0, 1), got {f!r}")
        check_count_field("select_per_node", self.select_per_node)
        if not isinstance(self.select_score, str) or self.select_score not in SCORES:
            raise AlgorithmError(f"select_score: expected one of {', '.join(SCORES)}, got "
                                 f"{self.select_score!r}")
        if self.horizon is not None:
            check_count_field("horizon", self.horizon)
        if type(self.kept_tables) is not int or self.kept_tables not in (0, 1):
            raise AlgorithmError(f"kept_tables: expected 0 or 1, got {self.kept_tables!r}")


class MarginalSource:
    """The rows a run counts its marginal tables from, with the public facts: declared
    cardinalities, ``n``, ``p`` and names. Nothing here is released."""

    def __init__(self, codes: NDArray[np.integer], cardinalities: Sequence[int],
                 names: Sequence[str], relation: Relation = Relation.REPLACE_ONE,
                 selector: Callable[[str], StatisticSource] | None = None) -> None:
        self.codes = codes
        self.cardinalities = tuple(int(c) for c in cardinalities)
        self.names = tuple(names)
        self.p = len(self.cardinalities)
        self.n = int(np.asarray(codes).shape[1])
        self.relation = relation
        self._make_selector = selector
        self._selectors: dict[str, StatisticSource] = {}

    def selector(self, score: str = DEFAULT_SCORE) -> StatisticSource:
        """The per-test family's exact scores ``score`` of the same rows (the level-0
        selection's utilities; built on first use). Nothing here is released."""
        if score not in self._selectors:
            if self._make_selector is None:
                self._selectors[score] = StatisticSource(
                    self.codes, self.cardinalities, score, relation=self.relation,
                    check=False, names=self.names)
            else:
                self._selectors[score] = self._make_selector(score)
        return self._selectors[score]

    def table(self, variables: Sequence[int]) -> NDArray[np.int64]:
        return marginal_counts(self.codes, self.cardinalities, variables)

    def pair_tables(self, pairs: Sequence[Pair]) -> dict[Pair, NDArray[np.int64]]:
        return marginals_of_pairs(self.codes, self.cardinalities, pairs)

    def cells(self, variables: Sequence[int]) -> int:
        return cells(self.cardinalities, variables)


@dataclass(frozen=True)
class MarginalPlan:
    """The public plan: zCDP, ``rho`` total, the planned depth, level 0's per-table
    ``rho`` over ``pairs`` tables, and the options."""

    rho: float
    depth: int
    max_depth: int | None
    pairs: int
    level0_rho: float
    level0_share: float
    sets_per_pair: int
    max_cells: int
    draws: int
    alpha: float
    max_noise: float = MAX_NOISE
    rule: str = "zcdp"
    #: ``tables`` or ``select`` (``auto`` resolved by :func:`level0_mode`)
    level0: str = "tables"
    #: the selection (``level0 = select``): ``pairs`` or ``nodes``, ``select_k`` pairs
    #: kept (``pairs``) or partners per node (``nodes``), ``select_steps`` top-k steps
    #: at most (``K``, or ``p k``), each at ``select_epsilon``; cost at most
    #: ``select_steps select_epsilon^2 / 8 <= select_share rho``
    select_by: str = "nodes"
    select_k: int = 0
    select_steps: int = 0
    select_epsilon: float = 0.0
    select_share: float = 0.0
    kept_tables: int = 1
    level0_asked: str = "tables"
    select_score: str = DEFAULT_SCORE

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule, "rho": self.rho, "horizon": self.depth,
            "max_depth": self.max_depth, "level0": self.level0,
            "level0_asked": self.level0_asked, "level0_share": self.level0_share,
            "sets_per_pair": self.sets_per_pair, "max_cells": self.max_cells,
            "draws": self.draws, "max_noise": self.max_noise,
            "sensitivity_l2_per_table": COUNT_TABLE_L2,
            "releases": "one joint Gaussian release per level"}
        if self.level0 == "tables":
            out.update({"level0_tables": self.pairs, "level0_table_rho": self.level0_rho,
                        "level0_sigma": COUNT_TABLE_L2 / math.sqrt(2.0 * self.level0_rho),
                        "level0_releases": 1 if self.pairs else 0,
                        "level0_sensitivity_l2": joint_table_l2(max(self.pairs, 1))})
        else:
            out.update({"select_by": self.select_by, "select_k": self.select_k,
                        "select_steps": self.select_steps,
                        "select_epsilon": self.select_epsilon,
                        "select_share": self.select_share,
                        "select_score": self.select_score,
                        "select_rho": self.select_steps * self.select_epsilon ** 2 / 8.0,
                        "kept_tables": self.kept_tables,
                        "level0_tables_at_most": self.pairs if self.kept_tables else 0})
        return out


def level0_mode(p: int, n: int, rho: float, level0_share: float = LEVEL0_SHARE) -> str:
    """``auto``'s level 0 from public facts (``docs/benchmarks/marginal-pc.md``, "Level 0
    by a private selection"): ``select`` when ``p >= SELECT_AT`` or when ``tables``' level-0
    per-cell noise sd, ``sqrt(p (p - 1) / 2 / (level0_share rho))`` counts (a function of
    ``p`` and the budget), is at least :data:`SELECT_SD`; else ``tables``. ``n`` does not
    enter: the constants were tuned at ``n = 100,000`` only."""
    pairs = p * (p - 1) // 2
    if p >= SELECT_AT:
        return "select"
    if pairs and rho > 0 and math.sqrt(pairs / (level0_share * rho)) >= SELECT_SD:
        return "select"
    return "tables"


#: ``auto`` selects from this many variables on (public; tuning seeds 11: the selection
#: gains at 50 and 76 nodes at eps 1 and 5, the hub network most).
SELECT_AT = 40
#: ... and below it where ``tables``' level-0 per-cell noise sd is at least this many
#: counts (alarm at eps 1, 428: the selection gained; child, insurance, water at eps 1,
#: 229-370: mixed; every network below 40 nodes at eps 5, <= 100: it lost).
SELECT_SD = 400.0


def make_plan(params: MarginalPCParams, settings: RunSettings,
              source: MarginalSource) -> MarginalPlan:
    """The plan from public facts only; refuses what cannot run (nothing charged)."""
    if not isinstance(params, MarginalPCParams):
        raise AlgorithmError(f"params: expected MarginalPCParams, got "
                             f"{type(params).__name__}")
    if not isinstance(source, MarginalSource):
        raise AlgorithmError(f"source: expected a MarginalSource, got "
                             f"{type(source).__name__}")
    if Relation.parse(settings.relation) is not Relation.REPLACE_ONE:
        raise AlgorithmError("relation: marginal-pc declares its tables' sensitivity "
                             "under replace-one only")
    budget = settings.budget()
    if budget.delta <= 0:
        raise AlgorithmError("delta: marginal-pc releases Gaussian tables (zCDP) and needs "
                             "delta > 0")
    p = source.p
    depth = planned_depth(p, settings.max_depth,
                          DEFAULT_DEPTH if params.horizon is None else params.horizon)
    rho = Fraction(budget.rho())
    pairs = p * (p - 1) // 2
    share = (Fraction(params.level0_share) if params.level0_share is not None
             else Fraction(LEVEL0_SHARE))
    mode = (level0_mode(p, source.n, float(rho), float(share)) if params.level0 == "auto"
            else params.level0)
    select_k = steps = 0
    select_eps = 0.0
    select_share = Fraction(0)
    tables = pairs  # level 0's 2-way tables (at most, under 'select')
    if mode == "select":
        kappa = params.select_per_node
        global_k = min(pairs, math.ceil(kappa * p))
        if params.select_by == "pairs":
            select_k = global_k
            steps = select_k
        else:
            select_k = min(kappa, max(p - 1, 1))
            steps = p * select_k + (global_k if params.select_by == "both" else 0)
        kept_at_most = min(pairs, select_k if params.select_by == "pairs" else steps)
        if (select_k >= pairs if params.select_by == "pairs" else select_k >= p - 1
                or (params.select_by == "both" and global_k >= pairs)):
            mode = "tables"  # the selection would keep every pair: test them all
        else:
            select_share = Fraction(params.select_share)
            if select_share + share >= 1:  # refused before anything is charged
                raise AlgorithmError("select_share: select_share + level0_share must be "
                                     "below 1 (the selection and level 0's tables share "
                                     "the budget with the deeper levels)")
            select_eps = selection_epsilon("zcdp", rho * select_share, steps)
            if select_eps <= 0.0:
                raise AlgorithmError("epsilon: too small for marginal-pc's level-0 "
                                     "selection; give a larger budget")
            tables = kept_at_most if params.kept_tables else 0
    if mode == "tables":
        select_k = steps = 0
        select_eps = 0.0
        select_share = Fraction(0)
        tables = pairs
    each = round_down(rho * share / max(tables, 1)) if tables else 0.0
    too_small = AlgorithmError("epsilon: too small for marginal-pc's level 0 (one 2-way "
                               "table per pair); give a larger budget")
    if tables and each < MIN_TABLE_RHO:
        raise too_small
    if tables:
        try:  # the sampler must draw level 0's joint release (pre-flight, nothing charged)
            l2 = joint_table_l2(max(tables, 1))
            mech = Gaussian.for_rho(l2, Fraction(each) * max(tables, 1))
            if mode == "tables":
                total = sum(source.cells((x, y)) for x in range(p) for y in range(x + 1, p))
            else:  # the kept pairs' tables: at most `tables` of the widest 2-way shape
                total = tables * max(source.cells((x, y)) for x in range(p)
                                     for y in range(x + 1, p))
            check_gaussian_scale(l2, mech.sigma, max(total, 1))
        except AccountingError:
            raise too_small from None
    max_cells = (params.max_cells if params.max_cells is not None
                 else max(4, source.n // ROWS_PER_CELL))
    if any(source.cells((x, y)) > max_cells for x in range(p) for y in range(x + 1, p)):
        raise AlgorithmError("max_cells: some 2-way table is larger than max_cells; raise it")
    asked = ("tables" if mode == "tables" else
             f"{params.select_by}-selection" + ("+tables" if params.kept_tables else ""))
    return MarginalPlan(float(rho), depth, settings.max_depth, tables, each,
                        float(share), params.sets_per_pair, int(max_cells),
                        params.draws, float(settings.alpha), float(params.max_noise),
                        level0=mode, select_by=params.select_by, select_k=select_k,
                        select_steps=steps, select_epsilon=select_eps,
                        select_share=float(select_share),
                        kept_tables=params.kept_tables, level0_asked=asked,
                        select_score=params.select_score)


@dataclass
class _Released:
    """A released table over ``variables`` (noisy counts) and its per-cell variance."""

    variables: tuple[int, ...]
    values: NDArray[np.float64]
    variance: float


class MarginalTester:
    """Marginal-PC's level strategy (module docstring)."""

    def __init__(self, plan: MarginalPlan, source: MarginalSource, session: Session) -> None:
        self.plan = plan
        self.source = source
        self.session = session
        self.released: dict[tuple[int, ...], _Released] = {}
        # the released tables holding each variable, in release order (for _best)
        self._by_var: dict[int, list[tuple[_Released, frozenset[int]]]] = {}
        self.levels: list[dict[str, Any]] = []
        self.exhaustion_note: str | None = None
        self.releases = 0
        self.tables = 0
        self.tests = 0
        self._strength: dict[Pair, float] = {}
        self._finished = False  # a level >= 1 could afford no table: deeper ones neither

    # ------------------------------------------------------------------ budget
    def _remaining_rho(self) -> Fraction:
        rem = self.session.remaining().rho
        assert rem is not None
        return max(Fraction(rem), Fraction(0))

    def _stop(self, level: int, why: str) -> BudgetExceededError:
        self.exhaustion_note = exhaustion_note(level, why)
        return BudgetExceededError(f"marginal-pc: {why}")

    # ------------------------------------------------------------------ tables
    def _best(self, variables: tuple[int, ...]) -> _Released | None:
        """The released table holding ``variables`` whose summed sub-table has the
        smallest per-cell noise variance (``variance x cells(U) / cells(V)``)."""
        exact = self.released.get(variables)
        if exact is not None:
            return exact
        # every table holding the variables holds the first of them: scan the tables of
        # the variable in the fewest (in release order, as a scan of all of them would;
        # a scan of every table per test was quadratic: hours on hub-300's 44,850 tables)
        by_var = self._by_var
        scan = min((by_var.get(v, ()) for v in variables), key=len)
        if not scan:
            return None
        want = frozenset(variables)
        size = self.source.cells(variables)
        best: _Released | None = None
        best_var = math.inf
        for rel, held in scan:
            if want <= held:
                v = rel.variance * rel.values.size / size
                if v < best_var:
                    best, best_var = rel, v
        return best

    def _release(self, level: int, tables: list[tuple[int, ...]], rho_each: Fraction,
                 rec: dict[str, Any]) -> None:
        """Release ``tables`` (sorted variable tuples) as ONE Gaussian mechanism on their
        concatenated counts: L2 sensitivity ``sqrt(2 T)`` (:func:`joint_table_l2`),
        cost ``T rho_each``, so every cell's noise variance is ``1 / rho_each``."""
        if not tables:
            return
        if rho_each < Fraction(MIN_TABLE_RHO):
            raise self._stop(level, f"nothing useful is left for level {level}'s "
                                    f"{len(tables)} tables")
        src = self.source
        sizes = [src.cells(vs) for vs in tables]
        try:
            l2 = joint_table_l2(len(tables))
            mech = Gaussian.for_rho(l2, rho_each * len(tables))
            check_gaussian_scale(l2, mech.sigma, sum(sizes))
        except (AccountingError, DpcgError, ValueError) as exc:
            raise self._stop(level, f"level {level}'s tables cannot be sampled "
                                    f"({type(exc).__name__})") from None

        def compute() -> NDArray[np.float64]:  # after the release was admitted and recorded
            if level == 0:
                got = src.pair_tables([(t[0], t[1]) for t in tables])
                parts = [got[(t[0], t[1])] for t in tables]
            else:
                parts = [src.table(t) for t in tables]
            return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in parts])

        purpose = (f"level-{level} noisy marginal tables: {len(tables)} tables, "
                   f"{sum(sizes)} cells, one joint Gaussian release")
        try:
            out = np.asarray(self.session.release(mech, compute, purpose=purpose),
                             dtype=np.float64).ravel()
        except BudgetExceededError:
            raise self._stop(level, f"the budget is used up in level {level}'s "
                                    "tables") from None
        variance = float(mech.sigma) ** 2
        offsets = np.cumsum([0, *sizes])
        for i, vs in enumerate(tables):
            if vs in self.released:  # pragma: no cover - a held table is never asked again
                raise AlgorithmError(f"marginal-pc: table over {list(vs)} released twice")
            shape = tuple(src.cardinalities[v] for v in vs)
            rel = _Released(vs, out[offsets[i]:offsets[i + 1]].reshape(shape), variance)
            held = frozenset(vs)
            for v in vs:
                self._by_var.setdefault(v, []).append((rel, held))
            self.released[vs] = rel
        self.releases += 1
        self.tables += len(tables)
        rec.update(tables=len(tables), releases=1, table_rho=float(rho_each),
                   level_rho=float(rho_each * len(tables)), sensitivity_l2=l2,
                   sigma=float(mech.sigma), cells=int(sum(sizes)))

    def _test(self, x: int, y: int, S: Sepset) -> CIResult | None:
        vs = tuple(sorted((x, y, *S)))
        rel = self._best(vs)
        if rel is None:
            return None
        table = strata_view(rel.values, rel.variables, x, y, S)
        variance = rel.variance * rel.values.size / self.source.cells(vs)
        res = noisy_g2_test(table, variance, self.plan.alpha, draws=self.plan.draws,
                            seed=(x, y, *S))
        self.tests += 1
        return CIResult(res.independent, res.statistic, res.pvalue)

    def _ranked(self, level: int, pair: Pair, candidates: LevelCandidates
                ) -> tuple[Sepset, ...]:
        """A pair's candidate sets, most likely separating first (released values only).

        A set can separate ``x`` and ``y`` only through variables dependent on both, so
        a neighbour ``v`` of an endpoint scores ``min(s(x, v), s(y, v))``, ``s`` the
        released level-0 strength per degree of freedom (``-inf`` when not released);
        each endpoint's ``m`` best-scoring neighbours give its size-``level`` subsets
        (``m`` the largest with ``C(m, level) <= SETS_PER_SIDE``), and a set scores the
        smallest score of its members (ties: the set's sum, then the set itself)."""
        x, y = pair
        sets = candidates[pair]
        st = self._strength

        def s(a: int, v: int) -> float:
            return st.get((min(a, v), max(a, v)), -math.inf)

        scored: dict[Sepset, tuple[float, float]] = {}
        for a, b in ((x, y), (y, x)):
            score = {v: min(s(x, v), s(y, v)) for v in candidates.adjacency[a] - {b}}
            nbrs = sorted(score, key=lambda v: (-score[v], v))
            m = level
            while m < len(nbrs) and math.comb(m + 1, level) <= SETS_PER_SIDE:
                m += 1
            for S in combinations(sorted(nbrs[:m]), level):
                if S in sets and S not in scored:
                    vals = [score[v] for v in S]
                    scored[S] = (min(vals), sum(vals))
        if not scored:
            return tuple(sets)[:self.plan.sets_per_pair]
        order = sorted(scored, key=lambda S: (-scored[S][0], -scored[S][1], S))
        return tuple(order[:self.plan.sets_per_pair])

    def _choose(self, serves: Mapping[tuple[int, ...], list[Pair]],
                rank: Mapping[tuple[int, ...], int], share: Fraction, level: int
                ) -> list[tuple[int, ...]]:
        """The tables a level >= 1 releases: round by round over the pairs' ranked sets
        (every pair's first set before any pair's second), within a round by the number
        of asked tests each serves (most first), then by the weakest released level-0
        strength among their pairs (a weak pair is the likeliest to be separated), while
        ``T`` tables at ``share / T`` each keep every chosen table's per-cell noise
        variance ``T/share`` within ``max_noise / level`` mean counts ``n / cells``
        (public facts and released values only)."""
        strength = self._strength
        order = sorted(serves, key=lambda vs: (
            rank[vs], -len(serves[vs]),
            min(strength.get(pair, math.inf) for pair in serves[vs]), vs))
        n, g = self.source.n, self.plan.max_noise / level
        chosen: list[tuple[int, ...]] = []
        widest = 0
        for vs in order:
            c = max(widest, self.source.cells(vs))
            if (len(chosen) + 1) * c <= g * n * float(share):
                chosen.append(vs)
                widest = c
        return chosen

    # ------------------------------------------------------------------ selection
    def _select(self, pairs: list[Pair], candidates: LevelCandidates,
                rec: dict[str, Any]) -> tuple[dict[Pair, tuple[Sepset, ...]],
                                             dict[Pair, Sepset]]:
        """Level 0 under ``level0 = select``: the private selection on the per-test
        family's marginal utilities ``(s(x, y | {}) - T(x, y)) / Delta(x, y)``
        (sensitivity 1): one ``TopK`` over the pairs (``pairs``) or one per node with
        more than ``k`` pairs (``nodes``), at the plan's step epsilon, admitted and
        recorded before any score is computed. The pairs not kept are removed with the
        empty set (no table is released for them); the kept ones are returned as level
        0's asked tests (their tables are released next when ``kept_tables``). The
        strengths that rank level 1's sets are, without kept tables, the selection's
        order (``k - j`` for the ``j``-th kept): post-processing of its output."""
        plan = self.plan
        todo = sorted(pair for pair in pairs if () in candidates[pair])
        selector = self.source.selector(plan.select_score)
        who = "marginal-pc"
        try:
            if plan.select_by == "pairs":
                k = min(plan.select_k, len(todo))
                if k < len(todo):
                    ranked = select_pairs_ranked(selector, self.session, k,
                                                 plan.select_epsilon, who, todo)
                    self.releases += 1
                else:
                    ranked = list(todo)
                strength = {pair: float(k - j) for j, pair in enumerate(ranked)}
                rec["selections"] = 1 if k < len(todo) else 0
            else:
                strength = select_node_partners(selector, self.session, plan.select_k,
                                                plan.select_epsilon, who, pairs=todo)
                asked_nodes = sum(1 for idx in node_pairs(self.source.p, todo)
                                  if len(idx) > plan.select_k)
                self.releases += asked_nodes
                rec["selections"] = asked_nodes
                big = plan.select_steps - self.source.p * plan.select_k  # 'both'
                if big > 0 and big < len(todo):
                    ranked = select_pairs_ranked(selector, self.session, big,
                                                 plan.select_epsilon, who, todo)
                    self.releases += 1
                    rec["selections"] = asked_nodes + 1
                    for j, pair in enumerate(ranked):  # on the per-node scale 0..k
                        val = plan.select_k * (big - j) / big
                        strength[pair] = max(strength.get(pair, -math.inf), val)
        except BudgetExceededError:
            raise self._stop(0, "the budget is used up in level 0's selection") from None
        rec["selected"] = len(strength)
        if not plan.kept_tables:
            self._strength = dict(strength)
        removals: dict[Pair, Sepset] = {}
        for x, y in todo:
            if (x, y) not in strength:
                candidates.record(x, y, (), CIResult(True, None, None))
                removals[(x, y)] = ()
            elif not plan.kept_tables:
                candidates.record(x, y, (), CIResult(False, None, None))
        empty: tuple[Sepset, ...] = ((),)
        asked = {pair: empty for pair in todo if pair in strength}
        return asked, removals

    # ------------------------------------------------------------------ levels
    def decide_level(self, level: int, candidates: LevelCandidates) -> dict[Pair, Sepset]:
        pairs = [pair for pair in candidates if candidates[pair]]
        rec: dict[str, Any] = {"level": level, "pairs": len(pairs), "tables": 0, "tests": 0}
        self.levels.append(rec)
        if not pairs or self._finished:
            return {}
        plan = self.plan
        asked: dict[Pair, tuple[Sepset, ...]]
        removals: dict[Pair, Sepset] = {}
        rho_level0 = Fraction(plan.level0_rho)
        if level == 0 and plan.level0 == "select":
            asked, removals = self._select(pairs, candidates, rec)
            if not plan.kept_tables:
                rec["tests"] = 0
                return removals
            rho_level0 = (Fraction(round_down(Fraction(plan.rho)
                                              * Fraction(plan.level0_share) / len(asked)))
                          if asked else Fraction(0))
        elif level == 0:
            asked = {pair: ((),) for pair in pairs if () in candidates[pair]}
        else:
            asked = {pair: self._ranked(level, pair, candidates) for pair in pairs}
        serves: dict[tuple[int, ...], list[Pair]] = {}
        rank: dict[tuple[int, ...], int] = {}  # best rank of the table among its pairs' sets
        for (x, y), sets in asked.items():
            for i, S in enumerate(sets):
                vs = tuple(sorted((x, y, *S)))
                if self._best(vs) is None and self.source.cells(vs) <= plan.max_cells:
                    serves.setdefault(vs, []).append((x, y))
                    rank[vs] = min(rank.get(vs, i), i)
        if level == 0:
            wanted = list(serves)
            rho_each = rho_level0
        else:
            share = self._remaining_rho() / level_slots(level, plan.depth)
            wanted = self._choose(serves, rank, share, level)
            rho_each = share / len(wanted) if wanted else Fraction(0)
            if not wanted:  # deeper levels need wider tables: none fits either
                self._finished = True
        rec["wanted"] = len(serves)
        self._release(level, wanted, rho_each, rec)
        tests = 0
        for (x, y), sets in asked.items():
            if candidates.out_of_tests():
                # the run's public test budget (its time limit through the public cost
                # model) is reached: the releases stand, the pairs tested so far decide
                rec["cut"] = True
                break
            best: tuple[float, Sepset] | None = None
            for S in sets:
                res = self._test(x, y, S)
                if res is None:
                    continue
                tests += 1
                candidates.record(x, y, S, res)
                if level == 0 and res.statistic is not None:
                    cx, cy = self.source.cardinalities[x], self.source.cardinalities[y]
                    self._strength[(x, y)] = float(res.statistic) / ((cx - 1) * (cy - 1))
                if res.independent and res.pvalue is not None and (
                        best is None or res.pvalue > best[0]):
                    best = (res.pvalue, S)
            if best is not None:
                removals[(x, y)] = best[1]
        rec["tests"] = tests
        return removals


class MarginalPC:
    """The :class:`~dpcg.private.contract.PrivateAlgorithm` ``marginal-pc``."""

    name = "marginal-pc"
    description = ("PC whose tests share releases: noisy marginal count tables (zCDP "
                   "Gaussian) chosen level by level, each serving every test of its "
                   "variables; G-tests with the noise in their null")
    params = MarginalPCParams
    tests: tuple[str, ...] = ("g2",)
    default_test = "g2"
    default_delta = 1e-6
    proof_note = "docs/privacy/algorithm-marginal-pc.md"

    def resolve_test(self, test: str) -> str:
        if test != "g2":
            raise AlgorithmError(f"--test {test}: marginal-pc runs the G-test on noisy "
                                 "marginal tables (--test g2)")
        return test

    def source(self, dataset: Dataset, settings: RunSettings, test_options: object,
               cache: ScoreCache | None = None) -> MarginalSource:
        if settings.test != "g2":
            raise AlgorithmError(f"test: marginal-pc runs g2, got {settings.test!r}")
        if not isinstance(test_options, NoOptions | G2Options):
            raise AlgorithmError(f"test_options: expected G2Options, got "
                                 f"{type(test_options).__name__}")
        if isinstance(test_options, G2Options) and test_options.sparse_rule != "causal-learn":
            raise AlgorithmError("sparse_rule: a rule of non-private PC's G-test; "
                                 "marginal-pc's noisy G-tests have their own null")
        if not isinstance(dataset, Dataset):
            raise AlgorithmError("engine: marginal-pc needs the rows in memory (a Dataset "
                                 "on the numpy engine)")
        try:
            codes = dataset.codes
        except DpcgError:
            raise AlgorithmError("data: marginal-pc needs an all-discrete dataset") from None
        cards = dataset.cardinalities
        if any(c is None for c in cards):
            raise AlgorithmError("data: marginal-pc needs declared cardinalities")
        if codes.shape[1] < 2:
            raise AlgorithmError("data: marginal-pc needs n >= 2 rows")
        relation = Relation.parse(settings.relation)

        def selector(score: str) -> StatisticSource:  # level0 = select: the family's
            # scores get their own cache: the caller's ``cache`` holds the run's test's
            # values under (x, y, S) keys that do not name the score, so sharing it would
            # read another statistic's values as these utilities (a wrong sensitivity)
            return source_for_dataset(dataset, score, alpha=settings.alpha, cache=None)

        return MarginalSource(codes, [int(c) for c in cards if c is not None],
                              dataset.names, relation, selector)

    def plan(self, params: MarginalPCParams, settings: RunSettings,
             source: MarginalSource) -> MarginalPlan:
        return make_plan(params, settings, source)

    def tester(self, plan: MarginalPlan, source: MarginalSource,
               session: Session) -> MarginalTester:
        return MarginalTester(plan, source, session)

    def usage(self, tester: MarginalTester) -> Mapping[str, object]:
        return {"used_releases": tester.releases, "used_tables": tester.tables,
                "used_tests": tester.tests,
                "used_tests_per_release": (tester.tests / tester.releases
                                      if tester.releases else 0.0),
                "used_levels": tester.levels, "used_unspent": unspent(tester.session)}


ALGORITHM = register_algorithm(MarginalPC())
