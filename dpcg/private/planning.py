"""Public planning for the private PC family: plan sizes, per-test budgets, subsample
rates and CURATE's per-order budgets.

Everything here is a function of **public** quantities only (the number of variables,
the declared cardinalities, ``n``, the user's total budget and hyper-parameters); no
function in this module receives data or a released value other than post-processed
outputs of earlier private releases (CURATE's remaining edge count). The defaults were
fixed before any benchmark score was looked at (PRIVACY.md section 7 gives the
prototype's findings they start from).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

import numpy as np
from scipy.optimize import minimize
from scipy.special import comb

from dpcg.errors import AlgorithmError

#: Two-sided 5 % critical value of the standard normal, ``z_{0.975}``: the default
#: decision threshold on the ``|z|`` scale (noisy ``|z| > T`` means dependent).
Z_THRESHOLD = 1.959963984540054

#: Default significance level of the p-value variant and of the CMI threshold.
ALPHA = 0.05

#: Root of ``sqrt(u) / ln(1 + u)``'s first-order condition ``ln(1 + u) = 2u / (1 + u)``.
#: The sieve's noise ``sqrt(n/m) / eps_base`` is minimised at ``(n/m)(e^{eps/2} - 1) = U``.
SUBSAMPLE_ROOT = 3.9216

#: Largest amplified sieve budget used (a larger per-round share is not spent on the sieve;
#: keeps ``e^eps`` finite in the amplification formula).
SIEVE_EPSILON_CAP = 300.0

#: Clip range of the sieve's subsample rate ``m/n`` (Priv-PC section 3.2).
SUBSAMPLE_MIN_RATE = 1.0 / 20.0


def n_pairs(p: int) -> int:
    """Number of unordered pairs of ``p`` variables."""
    return p * (p - 1) // 2


def default_plan_size(p: int) -> int:
    """Default public plan size K (number of tests the budget is split over).

    PRIVACY.md section 7: ``4 x pairs`` below 10 variables, ``8-16 x pairs`` above. We take
    the upper end (16) above: a plan that runs out stops PC in the middle of a level, which
    keeps every untested pair as an edge and costs far more than the extra noise of a
    larger plan (measured with the per-pair bounds at eps = 1, 4-6 seeds: at 8 x pairs
    every sachs and child run ran out, child F1 0.66; at 16 x none did, child 0.90, sachs
    0.85, alarm 0.55; at 12 x child 0.91, sachs 0.85, alarm 0.57 with some runs out). The
    first session's default (8) was fixed before any score; this change was made after
    looking at these runs, for all networks at once (docs/benchmarks/private.md). With the
    later default score ``kendall-split`` non-private PC needs 15.8 (sachs) and 17.7
    (child) x pairs, so most of those runs from eps 1 end budget-limited; the default was
    not changed again (``24 x pairs``: none does, F1 slightly lower at eps 1;
    docs/choosing.md section 3).
    """
    if isinstance(p, bool) or not isinstance(p, int) or p < 2:
        raise AlgorithmError(f"p: need at least 2 variables, got {p!r}")
    factor = 4 if p < 10 else 16
    return factor * n_pairs(p)


def default_rounds(p: int) -> int:
    """Default number of sieve-and-examine rounds / SVT instances (public).

    Each round ends with one sieve positive (an independence candidate); a pair is removed
    at most once, so ``pairs`` rounds suffice for a noise-free run and the other ``pairs``
    absorb sieve positives that the examine step rejects.
    """
    if isinstance(p, bool) or not isinstance(p, int) or p < 2:
        raise AlgorithmError(f"p: need at least 2 variables, got {p!r}")
    return 2 * n_pairs(p)


def check_count(name: str, value: object) -> int:
    """A positive integer parameter (plan size, rounds, cutoff), validated."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < 1:
        raise AlgorithmError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def check_positive(name: str, value: object) -> float:
    """A finite positive float parameter, validated."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise AlgorithmError(f"{name}: expected a positive number, got {value!r}")
    f = float(value)
    if not math.isfinite(f) or f <= 0:
        raise AlgorithmError(f"{name}: expected a finite number > 0, got {value!r}")
    return f


def check_nonnegative(name: str, value: object) -> float:
    """A finite float parameter >= 0, validated."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise AlgorithmError(f"{name}: expected a number >= 0, got {value!r}")
    f = float(value)
    if not math.isfinite(f) or f < 0:
        raise AlgorithmError(f"{name}: expected a finite number >= 0, got {value!r}")
    return f


# --------------------------------------------------------------------------------------
# Priv-PC sieve
# --------------------------------------------------------------------------------------


def subsample_rate(eps_round: float) -> float:
    """Closed-form optimal sieve subsample rate for a round budget ``eps_round``.

    The round spends ``eps_round / 2`` on the (amplified) sieve. With ``a = e^{eps/2} - 1``
    the sieve's query noise scales as ``sqrt(n/m) / ln(1 + (n/m) a)``; writing
    ``u = (n/m) a`` this is ``sqrt(u/a) / ln(1 + u)``, minimised where
    ``ln(1 + u) = 2u / (1 + u)``, i.e. ``u = 3.9216``. Hence ``m/n = a / 3.9216``, clipped
    to ``[1/20, 1]``.
    """
    eps = check_positive("eps_round", eps_round)
    if eps / 2.0 > math.log(SUBSAMPLE_ROOT + 1.0):
        return 1.0
    rate = math.expm1(eps / 2.0) / SUBSAMPLE_ROOT
    return float(min(1.0, max(SUBSAMPLE_MIN_RATE, rate)))


def subsample_size(n: int, eps_round: float) -> int:
    """Public subsample size ``m`` (at least 2 rows, at most ``n``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise AlgorithmError(f"n: need at least 2 rows, got {n!r}")
    m = math.floor(subsample_rate(eps_round) * n)
    return max(2, min(n, m))


def amplified_base_epsilon(n: int, m: int, eps_target: float) -> float:
    """The SVT budget ``eps_base`` whose subsampled cost is ``eps_target``.

    Balle-Barthe-Gaboardi (2018), sampling ``m`` of ``n`` without replacement under
    replace-one: ``eps_amp = ln(1 + (m/n)(e^{eps_base} - 1))``; inverted,
    ``eps_base = ln(1 + (n/m)(e^{eps_target} - 1))``. The caller still checks the
    primitive's declared (rounded-up) cost against its budget.
    """
    eps = check_positive("eps_target", eps_target)
    if not 1 <= m <= n:
        raise AlgorithmError(f"m: subsample size must be in [1, n={n}], got {m!r}")
    if m == n:
        return eps
    if eps > SIEVE_EPSILON_CAP:
        raise AlgorithmError(
            f"eps_target={eps} is above {SIEVE_EPSILON_CAP}: cap the sieve's budget first"
        )
    return math.log1p((n / m) * math.expm1(eps))


# --------------------------------------------------------------------------------------
# Noise scales (for choosing between Laplace/basic and Gaussian/zCDP)
# --------------------------------------------------------------------------------------


def laplace_sd(sensitivity: float, eps_test: float) -> float:
    """Standard deviation of ``Lap(Delta / eps)``."""
    return math.sqrt(2.0) * sensitivity / eps_test


def gaussian_sigma(l2_sensitivity: float, rho_test: float) -> float:
    """Gaussian noise of a ``rho_test``-zCDP release: ``sigma = Delta / sqrt(2 rho)``."""
    return l2_sensitivity / math.sqrt(2.0 * rho_test)


# --------------------------------------------------------------------------------------
# EM-PC
# --------------------------------------------------------------------------------------


def level_weights(max_level: int) -> list[float]:
    """Public split of EM-PC's budget over levels ``0..max_level``: halving weights
    ``1/2, 1/4, ...`` with the remainder on the last level (they sum to 1)."""
    if isinstance(max_level, bool) or not isinstance(max_level, int) or max_level < 0:
        raise AlgorithmError(f"max_level: expected an integer >= 0, got {max_level!r}")
    w = [0.5 ** (i + 1) for i in range(max_level)]
    w.append(1.0 - sum(w))
    return w


# --------------------------------------------------------------------------------------
# CURATE
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CuratePlan:
    """Per-order Laplace budgets ``eps_i >= eps_{i+1} >= ...`` for the remaining orders,
    and the zCDP rho each order may spend (``t_j eps_j^2 / 2``)."""

    first_order: int
    epsilons: tuple[float, ...]
    tests_bound: tuple[int, ...]

    @property
    def epsilon(self) -> float:
        """Per-test Laplace budget of the current order."""
        return self.epsilons[0]


def curate_tests_bound(edges: int, p: int, order: int) -> int:
    """CURATE's public bound on order-``order`` tests: ``e_i C(p-2, i)`` (each remaining
    edge is tested at most once per size-``order`` subset of the other ``p - 2``)."""
    return int(edges) * int(comb(p - 2, order, exact=True))


def degree_tests_bound(degrees: Sequence[int], pairs: Sequence[tuple[int, int]],
                       order: int) -> int:
    """A public bound on the order-``order`` tests still to come, never above
    :func:`curate_tests_bound`: ``sum min(C(d_x - 1, j) + C(d_y - 1, j), C(p - 2, j))``
    over the pairs still adjacent, with ``d`` the degrees of the released graph (``p =
    len(degrees)``; PC-stable tests a pair on subsets of ``adj(x) - {y}`` and of
    ``adj(y) - {x}``, all of them subsets of the other ``p - 2``; degrees only shrink, so
    it bounds every later order too)."""
    cap = math.comb(max(len(degrees) - 2, 0), order)
    table = [math.comb(max(d - 1, 0), order) for d in range(max(degrees, default=0) + 1)]
    return sum(min(table[degrees[x]] + table[degrees[y]], cap) for x, y in pairs)


def curate_error_surrogate(
    eps: np.ndarray, threshold: float, sensitivity: float, beta1: float, beta2: float,
    c1: float, c2: float,
) -> float:
    """CURATE's objective (1): ``prod q1_j + 1 - prod (1 - q2_j)`` with
    ``q_j = c/2 + exp(-T beta eps_j / Delta) / 2`` (Bhattacharjee-Tandon, Lemma 1)."""
    q1 = c1 / 2.0 + 0.5 * np.exp(-threshold * beta1 * eps / sensitivity)
    q2 = c2 / 2.0 + 0.5 * np.exp(-threshold * beta2 * eps / sensitivity)
    return float(np.prod(q1) + 1.0 - np.prod(1.0 - q2))


def curate_plan(
    *,
    rho_remaining: float,
    edges: int,
    p: int,
    order: int,
    max_order: int,
    threshold: float,
    sensitivity: float,
    beta1: float,
    beta2: float,
    c1: float = 0.1,
    c2: float = 0.1,
    bounds: Sequence[int] | None = None,
) -> CuratePlan:
    """Solve CURATE's ``OPT`` with SLSQP on public quantities.

    Variables: per-test Laplace budgets ``eps_order..eps_max_order``. Constraint: under
    zCDP a Laplace test costs ``eps^2 / 2``, so the planned spend
    ``sum_j t_j eps_j^2 / 2 <= rho_remaining`` with ``t_j = e C(p-2, j)`` (``e`` the current
    edge count, an upper bound on later edge counts); monotonicity
    ``eps_j >= eps_{j+1}``. If SLSQP fails, the feasible uniform-in-rho allocation is used.
    The result is always feasible and spends ``rho_remaining`` (up to a relative
    ``2e-9``: it is scaled onto the constraint after solving).
    ``bounds``: public test bounds ``t_order..t_max_order`` to use instead (e.g.
    :func:`degree_tests_bound`).
    """
    if max_order < order:
        raise AlgorithmError(f"max_order={max_order} must be >= order={order}")
    k = max_order - order + 1
    if bounds is None:
        bounds = [curate_tests_bound(edges, p, j) for j in range(order, max_order + 1)]
    if len(bounds) != k:
        raise AlgorithmError(f"bounds: expected {k} values, got {len(bounds)}")
    t = np.array([max(1, int(b)) for b in bounds], dtype=np.float64)
    if rho_remaining <= 0:
        return CuratePlan(order, tuple(0.0 for _ in range(k)), tuple(int(v) for v in t))

    def spend(e: np.ndarray) -> float:
        return float(np.sum(t * e * e) / 2.0)

    # Feasible start: equal eps for every planned test.
    e0 = np.full(k, math.sqrt(2.0 * rho_remaining / float(t.sum())))
    scale = max(float(e0[0]), 1e-300)

    def objective(u: np.ndarray) -> float:
        return curate_error_surrogate(u * scale, threshold, sensitivity, beta1, beta2, c1, c2)

    cons: list[dict[str, object]] = [
        {"type": "ineq", "fun": lambda u: 1.0 - spend(u * scale) / rho_remaining},
    ]
    if k > 1:
        cons.append({"type": "ineq", "fun": lambda u: u[:-1] - u[1:]})
    best = e0
    try:
        res = minimize(objective, np.ones(k), method="SLSQP", constraints=cons,
                       bounds=[(0.0, None)] * k, options={"maxiter": 200, "ftol": 1e-12})
        cand = np.maximum(np.asarray(res.x, dtype=np.float64) * scale, 0.0)
        cand = np.maximum.accumulate(cand[::-1])[::-1]  # enforce monotone non-increasing
        if np.all(np.isfinite(cand)) and cand[0] > 0 and (
            objective(cand / scale) <= objective(np.ones(k))
        ):
            best = cand
    except (ValueError, ArithmeticError):  # pragma: no cover - SLSQP numerical failure
        best = e0
    # Scale onto the constraint: down (SLSQP's tolerance) and also up. The objective does
    # not increase in any eps_j, so spending the whole remaining budget never loses, and
    # it makes eps_order >= sqrt(2 rho_remaining (1 - 1e-9)^2 / sum_j t_j) (the largest of
    # a non-increasing allocation that spends it), a bound CURATE's pre-flight uses.
    s = spend(best)
    if s > 0:
        best = best * math.sqrt(rho_remaining / s) * (1.0 - 1e-9)
    return CuratePlan(order, tuple(float(v) for v in best), tuple(int(v) for v in t))


# --------------------------------------------------------------------------------------
# SVT-PC and Priv-PC: per-level plans
# --------------------------------------------------------------------------------------

#: Levels a per-level plan provisions for when ``max_depth`` is not given (public): level
#: 0 may spend half of the budget, level 1 all that remains, later levels what the first
#: two left. Measured, not tuned per network: on generated families
#: (``random:nodes=20|50,max_parents=3,card=2-4``, tuning seeds 11-13, 20K and 100K rows,
#: eps 1) depth 1 was the best on 50 nodes (mean F1 ratio to G^2 PC at 100K rows:
#: Priv-PC .83 vs .73 at depth 2, SVT-PC .64 vs .52) and within .03 of depth 2 on 20
#: nodes (``docs/benchmarks/priv-pc-budget.md``): later levels ask few tests.
DEFAULT_PLANNED_DEPTH = 1
#: Depth cap of the per-node selection's runs when no ``max_depth`` is given (Hub-PC,
#: and Priv-PC with ``node_select``; public): hub networks of the generator have up to
#: 3 parents per node, so a separating set of at most 3 exists for every non-adjacent
#: pair, and deeper levels removed true edges there (``docs/benchmarks/hubs-private.md``).
HUB_DEPTH = 3

#: Priv-PC rounds planned per open pair at levels >= 1 (a round ends at every sieve
#: positive, also one the examine rejects). Level 0 needs at most one round per pair.
#: Measured on the same families: level 1 uses about 2.7 rounds per open pair; 1-2 ran
#: out in every 50-node run, 3-4 in some, 6 in none, 8 spread the budget too thin.
PRIV_PC_ROUNDS_PER_PAIR = 6


def planned_depth(p: int, max_depth: int | None, default: int = DEFAULT_PLANNED_DEPTH
                  ) -> int:
    """The deepest level a per-level plan provisions for: ``max_depth`` if given, else
    ``default`` (:data:`DEFAULT_PLANNED_DEPTH` for SVT-PC and Priv-PC), never above
    ``p - 2`` (public)."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 2:
        raise AlgorithmError(f"p: need at least 2 variables, got {p!r}")
    d = default if max_depth is None else int(max_depth)
    return max(0, min(d, p - 2))


def level_units(open_pairs: int, level: int, *, per_pair: float = 1.0,
                level0_per_pair: float = 1.0, cutoff: int = 1) -> int:
    """Units (SVT instances / Priv-PC rounds) a level's plan provides, from the number
    of pairs still adjacent when the level starts (a post-processed count).

    ``ceil(rate * open_pairs / cutoff)`` with ``rate = level0_per_pair`` at level 0 and
    ``per_pair`` above; at least 1. For SVT-PC (``1.0``, cutoff ``c``) this is an upper
    bound on the instances the level can start (every positive removes a distinct pair);
    for Priv-PC at level 0 (one test per pair) an upper bound on its rounds.
    """
    if open_pairs < 0 or level < 0 or cutoff < 1:
        raise AlgorithmError(f"level_units: bad arguments {open_pairs}, {level}, {cutoff}")
    rate = level0_per_pair if level == 0 else per_pair
    return max(1, math.ceil(rate * open_pairs / cutoff))


def level_share(remaining: Fraction, units: int, level: int, depth: int) -> Fraction:
    """Per-unit share of the remaining budget (``eps`` under ``basic``, ``rho`` under
    ``zcdp``) for a level whose plan has ``units`` units: ``remaining / (units * L)``
    with ``L = max(depth - level + 1, 1)`` the levels still provisioned for. Every later
    level is assumed no larger than this one, so the level spends at most ``1/L`` of what
    remains and what it does not use carries over (exact fraction)."""
    if units < 1:
        raise AlgorithmError(f"units: expected >= 1, got {units!r}")
    left = max(depth - level + 1, 1)
    rem = max(Fraction(remaining), Fraction(0))
    return rem / (units * left)


def unit_epsilon(share: Fraction, rule: str, parts: int = 1) -> float:
    """The largest float ``e`` (found by stepping down) such that ``parts`` pure
    ``e``-DP mechanisms cost at most ``share``: ``parts * e <= share`` under ``basic``,
    ``parts * e^2 / 2 <= share`` under ``zcdp`` (a pure ``e``-DP mechanism is
    ``e^2/2``-zCDP, Bun-Steinke 2016 Prop. 1.4), checked in exact arithmetic. 0.0 when
    ``share`` is 0."""
    s = Fraction(share)
    if s <= 0:
        return 0.0
    if rule == "basic":
        e = float(s / parts)
    elif rule == "zcdp":
        e = math.sqrt(float(2 * s / parts))
    else:
        raise AlgorithmError(f"rule: expected 'basic' or 'zcdp', got {rule!r}")

    def cost(v: float) -> Fraction:
        q = Fraction(v)
        return parts * q if rule == "basic" else parts * q * q / 2

    steps = 0
    while e > 0.0 and cost(e) > s:  # float rounding: a few ulps at most
        e = math.nextafter(e, 0.0) if steps < 64 else e * (1.0 - 1e-12)
        steps += 1
    return e


def choose_unit_rule(epsilon: float, delta: float, units: int, parts: int = 1) -> str:
    """``basic`` or ``zcdp`` for a plan of ``units`` equal units of ``parts`` pure-DP
    mechanisms each: the rule giving each mechanism the larger epsilon (i.e. the smaller
    noise). Public information only (budget, planned units). Without a delta only
    ``basic`` applies; ties go to ``basic``."""
    from accounting.costs import Budget

    if delta <= 0:
        return "basic"
    b = Budget(epsilon, delta)
    k = max(int(units), 1)
    e_basic = unit_epsilon(Fraction(b.epsilon_exact) / k, "basic", parts)
    e_zcdp = unit_epsilon(b.rho() / k, "zcdp", parts)
    return "zcdp" if e_zcdp > e_basic else "basic"


def screen_multiplier(p: int) -> float:
    """Level 0's default screen ``C`` (public: from ``p`` only): the ``1 - q`` normal
    quantile with ``q = min(1/4, p / (4 pairs)) = min(1/4, 1 / (2 (p - 1)))``, so that a
    pair whose score sits at the threshold survives level 0 with probability about
    ``q`` under Gaussian noise: about ``p/4`` false edges if every pair were
    independent, and ``C -> 0`` as the noise vanishes relative to the score. Used by
    Laplace-PC's level 0 (tried on Priv-PC's level-0 examine too: mixed, not adopted)."""
    q = min(0.25, 1.0 / (2.0 * max(p - 1, 1)))
    return float(NormalDist().inv_cdf(1.0 - q))


# ------------------------------------------------------------------ level-0 selection

#: Level 0's selection keeps at least ``SELECT_PER_NODE * p`` pairs (public; ``kappa``
#: 3, 4 and 6 were measured on generated families with tuning seeds, see
#: ``docs/privacy/algorithm-laplace-pc.md``).
SELECT_PER_NODE = 4.0
#: The share of level 0's budget that goes to the selection; the rest tests the kept pairs.
SELECT_SHARE = 0.75
#: The selection keeps more pairs while its noise sd stays at most this fraction of the
#: smallest level-0 threshold, and is skipped once it would keep every pair.
SELECT_NOISE = 0.5
#: By default the selection is used only when its noise sd is at most this fraction of
#: the sd of testing every pair with all of level 0's share (otherwise every pair is
#: tested).
SELECT_GAIN = 0.5
#: Priv-PC's gain: its level 0 (a subsampled sieve, then an examine at half a round's
#: budget) is much noisier than a Laplace-PC test, so the selection pays off earlier, and
#: its per-pair levels need level 0 to have pruned: a selection that is no noisier than
#: testing every pair is used (about 20 nodes and up at eps 1;
#: ``docs/privacy/algorithm-priv-pc.md``).
PRIV_PC_SELECT_GAIN = 1.0
#: Priv-PC's selection keeps ``K = SELECT_PER_NODE p`` pairs and does not grow with the
#: budget: a larger ``K`` leaves more pairs open for its per-pair levels, whose rounds it
#: dilutes, and a grown ``K`` failed the gain check at eps 5 from 20 to 50 nodes, which
#: switched the selection off (measured on tuning networks:
#: ``docs/privacy/algorithm-priv-pc.md``, "The selection's size does not grow").
PRIV_PC_SELECT_GROW = False
#: Whether level 0's releases use the smaller bound of a test given the empty set
#: (``kendall-split`` under replace-one: ``3/sqrt(n)`` instead of ``6/sqrt(n)``;
#: ``docs/privacy/statistics-split-kendall-z.md``, claim 5) instead of the pair's bound.
#: Both are proven. Off: the level plans were measured with the pair's bound, and with the
#: smaller one the tables were not re-run (measured A/B, eps 1 and 5, 100,000 rows:
#: ``docs/benchmarks/utility-f1-analysis.md``, "Level 0 at half the sensitivity").
LEVEL0_EMPTY_SET_BOUND = False
#: Whether the level-0 selections of Laplace-PC, Priv-PC and SVT-PC (the single top-K
#: release and both releases of the screened one) scale each utility's term given the
#: empty set by that smaller bound. The plan fixes how many pairs a selection keeps, so
#: the smaller noise changes only which pairs it keeps. On: measured on tuning networks
#: (``docs/benchmarks/utility-f1-analysis.md``, "Level 0's selections at the empty set's
#: bound"). CURATE's selection keeps the pair's bound (measured: it lost there, its
#: recall falling; the cause was not traced).
SELECTION_EMPTY_SET_BOUND = True
#: Laplace-PC's screened selection is used where its single selection is not
#: (``SELECT_GAIN``, about 80 nodes) but a selection is no noisier than testing every
#: pair: about 20 nodes and up at eps 1 (``docs/privacy/algorithm-laplace-pc.md``).
LAPLACE_SCREEN_GAIN = 1.0
#: CURATE's gain: its planner gives order 0 most of the budget but order 1 little, so
#: order 0 must prune; as for Priv-PC, a selection that is no noisier than testing every
#: pair with the quarter of rho the rule assumes for level 0 is used
#: (``docs/privacy/algorithm-curate.md``).
CURATE_SELECT_GAIN = 1.0
#: Standard deviation of ``Gumbel(1)``: ``pi / sqrt 6``.
GUMBEL_SD = math.pi / math.sqrt(6.0)


def selection_epsilon(rule: str, share: Fraction, k: int) -> float:
    """Per-step epsilon of a top-``k`` release costing at most ``share`` (``eps``
    under ``basic``: ``k eps <= share``; ``rho`` under ``zcdp``: ``k eps^2/8 <=
    share``), the largest such float."""
    # k eps^2/8 <= share is k eps^2/2 <= 4 share: unit_epsilon's zcdp form
    return unit_epsilon(share if rule == "basic" else 4 * share, rule, parts=k)


def selection_sd(rule: str, share: Fraction, k: int, sensitivity: float) -> float:
    """Noise sd of a top-``k`` release costing ``share``, on the score scale
    (``GUMBEL_SD 2 Delta / eps_step``)."""
    eps = selection_epsilon(rule, share, k)
    return math.inf if eps <= 0 else GUMBEL_SD * 2.0 * sensitivity / eps


def select_count(rule: str, share: Fraction, pairs: int, p: int, kappa: float,
                 sd_max: float, sensitivity: float) -> int:
    """How many pairs level 0's selection keeps (public): at least ``ceil(kappa p)``,
    and more while the selection's noise sd stays at most ``sd_max``; at most
    ``pairs``."""
    lo, hi = min(pairs, max(1, math.ceil(kappa * p))), pairs
    if selection_sd(rule, share, hi, sensitivity) <= sd_max:
        return hi
    if selection_sd(rule, share, lo, sensitivity) > sd_max:
        return lo
    while hi - lo > 1:  # the sd grows with k: the largest k with sd <= sd_max
        mid = (lo + hi) // 2
        if selection_sd(rule, share, mid, sensitivity) <= sd_max:
            lo = mid
        else:
            hi = mid
    return lo


def every_pair_sd(rule: str, level0: Fraction, pairs: int, sensitivity: float) -> float:
    """Noise sd of one test when ``pairs`` tests share ``level0`` equally (Gaussian with
    ``rho = level0/pairs`` under ``zcdp``, Laplace with ``eps = level0/pairs`` under
    ``basic``)."""
    per = float(level0) / pairs
    if per <= 0:
        return math.inf
    if rule == "basic":
        return laplace_sd(sensitivity, per)
    return sensitivity / math.sqrt(2.0 * per)


def level0_selection(rule: str, share: Fraction, level0: Fraction, p: int,
                     sensitivity: float, threshold_min: float,
                     select: float | None, gain: float = SELECT_GAIN,
                     grow: bool = True) -> tuple[int, float] | None:
    """Level 0's top-``K`` selection from public facts: ``(K, eps_step)`` for a release
    costing at most ``share`` of level 0's ``level0``, or ``None`` when level 0 should
    test every pair instead.

    ``K = select_count(...)`` with ``kappa = select`` (default ``SELECT_PER_NODE``) and
    the noise cap ``SELECT_NOISE * threshold_min``. ``None`` when ``kappa = 0``, when
    ``K`` would be every pair, or, by default (``select`` not given), when the
    selection's noise sd is above ``gain`` (default ``SELECT_GAIN``) times
    :func:`every_pair_sd` for ``level0``: the ratio depends on ``p`` only (until ``K``
    grows past ``kappa p``), about 80 nodes and up at the default gain, about 20 at
    Priv-PC's :data:`PRIV_PC_SELECT_GAIN` and CURATE's :data:`CURATE_SELECT_GAIN`.

    ``grow=False`` (Priv-PC, :data:`PRIV_PC_SELECT_GROW`): ``K`` stays ``ceil(kappa p)``
    instead of growing to the noise cap; the selection is still skipped when it could
    keep every pair within the cap (so a huge budget tests every pair, as non-private PC
    does) and, by default, when the gain check fails at that ``K``."""
    kappa = SELECT_PER_NODE if select is None else float(select)
    pairs = n_pairs(p)
    if kappa <= 0 or pairs < 2 or share <= 0:
        return None
    k = select_count(rule, share, pairs, p, kappa, SELECT_NOISE * threshold_min,
                     sensitivity)
    if k >= pairs:
        return None
    if not grow:
        k = min(pairs, max(1, math.ceil(kappa * p)))
    sd = selection_sd(rule, share, k, sensitivity)
    if select is None and sd > gain * every_pair_sd(rule, level0, pairs, sensitivity):
        return None
    eps = selection_epsilon(rule, share, k)
    if eps <= 0:
        raise AlgorithmError("epsilon: too small for the level-0 selection; give a larger "
                             "budget or --select 0")
    return k, eps


#: The screened selection (Priv-PC's, and Laplace-PC's below its single selection's
#: size; ``docs/privacy/algorithm-priv-pc.md``, "Level 0's screened selection"): a
#: first top-K release keeps ``SCREEN_WIDTH x K`` pairs by the
#: marginal utility, a second keeps ``SCREEN_KEEP x K`` of them by the smallest utility
#: over the empty set and single neighbours in the first release's graph; each release
#: costs half of the selection's share.
SCREEN_WIDTH = 2
SCREEN_KEEP = Fraction(1, 2)


@dataclass(frozen=True)
class ScreenedSelection:
    """The two releases of a screened selection (public): the first keeps ``first_k``
    pairs at ``first_epsilon`` per step (``first_k = 0``: no first release, every pair
    goes to the second, which then has the whole share), the second keeps ``k`` at
    ``epsilon`` per step."""

    first_k: int
    first_epsilon: float
    k: int
    epsilon: float


def screened_selection(rule: str, share: Fraction, k: int, pairs: int) -> ScreenedSelection:
    """Split a selection of ``k`` pairs costing ``share`` into the two releases of a
    screened selection: ``k1 = min(pairs, SCREEN_WIDTH k)``, ``k2 = ceil(SCREEN_KEEP k)``,
    each release costing at most ``share / 2`` (:func:`selection_epsilon`); with ``k1 =
    pairs`` there is no first release and the second costs at most ``share``."""
    k2 = max(1, math.ceil(k * SCREEN_KEEP))
    k1 = min(pairs, SCREEN_WIDTH * k)
    if k1 >= pairs:
        first_k, first_eps, second = 0, 0.0, share
    else:
        first_k, first_eps, second = k1, selection_epsilon(rule, share / 2, k1), share / 2
    eps = selection_epsilon(rule, second, k2)
    if eps <= 0 or (first_k and first_eps <= 0):
        raise AlgorithmError("epsilon: too small for the level-0 selection; give a larger "
                             "budget or --select 0")
    return ScreenedSelection(first_k, first_eps, k2, eps)
