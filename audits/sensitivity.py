"""Sensitivity audits of every registered statistic.

For each :class:`dpcg.stats.registry.StatisticSpec` the audit searches for
neighbouring datasets ``(D, D')`` under the spec's declared relation that maximise
``|f(D) - f(D')|``, and compares the maximum with the declared bound:

* **random / Hypothesis-generated** datasets and neighbours (:func:`random_search`,
  :func:`hypothesis_search`);
* an **adversarial local search** (:func:`local_search`): hill climbing over the
  replaced (or added) record's values, over which record is replaced, and over the
  other records' values, maximising the gap relative to the bound;
* **fixed regression cases** (:func:`regression_cases`), e.g. the published
  counterexample to Priv-PC's conditional-tau bound.

The result records the tightness ratio ``max observed / declared``; a ratio above
``1 + 1e-9`` is a violation. :data:`CASES` maps each spec name to its data and
neighbour generator; :func:`audit_all` FAILS (raises :class:`UnauditedSpecError`)
for a registered spec without an entry, so new statistics cannot skip the audit.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from accounting.relations import Relation

IntArray = NDArray[np.int64]

#: Relative tolerance for floating-point noise when comparing with the bound.
TOLERANCE = 1e-9


class UnauditedSpecError(AssertionError):
    """A registered statistic has no sensitivity audit generator."""


# ---------------------------------------------------------------------------------
# Canonical discrete input and neighbours
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiscreteData:
    """Rows ``(x_i, y_i, s_i)`` with codes below ``cx``, ``cy``, ``k``."""

    x: IntArray
    y: IntArray
    s: IntArray
    cx: int
    cy: int
    k: int

    @property
    def n(self) -> int:
        return int(self.x.size)

    def with_row(self, i: int, row: tuple[int, int, int]) -> DiscreteData:
        x, y, s = self.x.copy(), self.y.copy(), self.s.copy()
        x[i], y[i], s[i] = row
        return replace(self, x=x, y=y, s=s)

    def appended(self, row: tuple[int, int, int]) -> DiscreteData:
        return replace(
            self,
            x=np.append(self.x, row[0]).astype(np.int64),
            y=np.append(self.y, row[1]).astype(np.int64),
            s=np.append(self.s, row[2]).astype(np.int64),
        )


@dataclass(frozen=True)
class Pair:
    """Neighbouring datasets with the public parameters to evaluate them at."""

    d: DiscreteData
    d_prime: DiscreteData
    public: dict[str, float]
    note: str = ""


@dataclass(frozen=True)
class DiscreteCase:
    """Data/neighbour generator for specs on the canonical discrete input.

    ``w0_factors``: the public floors tried, as multiples of ``n`` (the floor is a
    function of the public ``n`` only).
    """

    n_range: tuple[int, int] = (4, 30)
    max_cx: int = 4
    max_cy: int = 4
    max_k: int = 6
    w0_factors: tuple[float, ...] = (2.25, 2.2, 2.0, 1.0, 0.25)
    #: block search (:func:`block_search`): sizes (log-uniform) and cardinalities; the
    #: tightness constructions of the proof notes need large blocks (``m -> inf``) and,
    #: for statistics without public cardinalities, many categories
    block_n: tuple[int, int] = (4, 5_000)
    block_max_c: int = 0  # 0: max_cx / max_cy
    block_max_k: int = 0  # 0: max_k

    def random_data(self, rng: np.random.Generator) -> DiscreteData:
        n = int(rng.integers(self.n_range[0], self.n_range[1] + 1))
        cx = int(rng.integers(2, self.max_cx + 1))
        cy = int(rng.integers(2, self.max_cy + 1))
        k = int(rng.integers(1, self.max_k + 1))
        return DiscreteData(
            rng.integers(0, cx, n).astype(np.int64),
            rng.integers(0, cy, n).astype(np.int64),
            rng.integers(0, k, n).astype(np.int64),
            cx, cy, k,
        )

    def random_row(self, d: DiscreteData, rng: np.random.Generator) -> tuple[int, int, int]:
        return (int(rng.integers(0, d.cx)), int(rng.integers(0, d.cy)), int(rng.integers(0, d.k)))


def public_params(
    spec: Any, d: DiscreteData, d_prime: DiscreteData, w0_factor: float
) -> dict[str, float]:
    """Public parameters of ``spec`` for this pair (``n`` = smaller size)."""
    n = min(d.n, d_prime.n)
    out: dict[str, float] = {}
    for name in spec.public_params:
        if name == "n":
            out[name] = n
        elif name == "w0":
            out[name] = max(w0_factor * n, 1e-3)
        elif name == "cx":
            out[name] = d.cx
        elif name == "cy":
            out[name] = d.cy
        elif name == "n_configs":
            out[name] = d.k
        else:
            raise UnauditedSpecError(
                f"statistic {spec.name!r}: no audit generator for public parameter {name!r}"
            )
    return out


def make_pair(spec: Any, d: DiscreteData, i: int, row: tuple[int, int, int],
              w0_factor: float) -> Pair:
    """Replace row ``i`` by ``row`` (replace-one) or append ``row`` (add/remove)."""
    dp = d.with_row(i, row) if Relation(spec.relation) is Relation.REPLACE_ONE else d.appended(row)
    return Pair(d, dp, public_params(spec, d, dp, w0_factor))


def gap(spec: Any, pair: Pair) -> tuple[float, float]:
    """``(|f(D) - f(D')|, declared bound)``."""
    a = spec.evaluate(pair.d.x, pair.d.y, pair.d.s, **pair.public)
    b = spec.evaluate(pair.d_prime.x, pair.d_prime.y, pair.d_prime.s, **pair.public)
    return abs(a - b), float(spec.bound(**pair.public))


# ---------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------


@dataclass
class SensitivityResult:
    """Best gap found for one spec."""

    name: str
    relation: str
    max_ratio: float = 0.0
    max_gap: float = 0.0
    bound_at_max: float = math.nan
    evaluations: int = 0
    witness: str = ""
    by_method: dict[str, float] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return self.max_ratio > 1.0 + TOLERANCE

    def observe(self, method: str, pair: Pair, g: float, bound: float) -> None:
        self.evaluations += 1
        ratio = g / bound if bound > 0 else (math.inf if g > 0 else 0.0)
        self.by_method[method] = max(self.by_method.get(method, 0.0), ratio)
        if ratio > self.max_ratio:
            self.max_ratio = ratio
            self.max_gap = g
            self.bound_at_max = bound
            self.witness = describe_pair(pair)


def describe_pair(pair: Pair) -> str:
    d, dp = pair.d, pair.d_prime
    if pair.note.startswith("blocks"):
        pub = ", ".join(f"{k}={v:g}" for k, v in pair.public.items())
        return f"n={d.n}, cx={d.cx}, cy={d.cy}, k={d.k}; {pair.note}; {pub}"
    if d.n == dp.n:
        diff = np.flatnonzero((d.x != dp.x) | (d.y != dp.y) | (d.s != dp.s))
        change = ", ".join(
            f"row {i}: ({d.x[i]},{d.y[i]},{d.s[i]})->({dp.x[i]},{dp.y[i]},{dp.s[i]})" for i in diff
        ) or "identical"
    else:
        change = f"added row ({dp.x[-1]},{dp.y[-1]},{dp.s[-1]})"
    pub = ", ".join(f"{k}={v:g}" for k, v in pair.public.items())
    note = f" [{pair.note}]" if pair.note else ""
    return f"n={d.n}, cx={d.cx}, cy={d.cy}, k={d.k}; {change}; {pub}{note}"


# ---------------------------------------------------------------------------------
# Searches
# ---------------------------------------------------------------------------------


def random_search(spec: Any, case: DiscreteCase, result: SensitivityResult, trials: int,
                  rng: np.random.Generator) -> None:
    for _ in range(trials):
        d = case.random_data(rng)
        i = int(rng.integers(0, d.n))
        w0f = float(rng.choice(case.w0_factors))
        pair = make_pair(spec, d, i, case.random_row(d, rng), w0f)
        g, b = gap(spec, pair)
        result.observe("random", pair, g, b)


def local_search(spec: Any, case: DiscreteCase, result: SensitivityResult, restarts: int,
                 steps: int, rng: np.random.Generator) -> None:
    """Hill climbing on ``gap / bound``: moves change the new record's values, which
    record is replaced, or another record's values; sideways moves are accepted."""
    for _ in range(restarts):
        d = case.random_data(rng)
        i = int(rng.integers(0, d.n))
        row = case.random_row(d, rng)
        w0f = float(rng.choice(case.w0_factors))
        pair = make_pair(spec, d, i, row, w0f)
        g, b = gap(spec, pair)
        cur = g / b if b > 0 else 0.0
        result.observe("local-search", pair, g, b)
        for _ in range(steps):
            move = int(rng.integers(0, 4))
            nd, ni, nrow = d, i, row
            if move == 0:
                nrow = case.random_row(d, rng)
            elif move == 1:
                ni = int(rng.integers(0, d.n))
            else:
                j = int(rng.integers(0, d.n))
                nd = d.with_row(j, case.random_row(d, rng))
            cand = make_pair(spec, nd, ni, nrow, w0f)
            g, b = gap(spec, cand)
            r = g / b if b > 0 else 0.0
            result.observe("local-search", cand, g, b)
            if r >= cur:
                d, i, row, cur = nd, ni, nrow, r


def _expand(counts: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Rows ``(x, y, s)`` of a ``(cx, cy, k)`` count table (vectorised)."""
    _, cy, k = counts.shape
    flat = counts.ravel()
    idx = np.repeat(np.arange(flat.size, dtype=np.int64), flat)
    x, rest = np.divmod(idx, cy * k)
    y, s = np.divmod(rest, k)
    return x.astype(np.int64), y.astype(np.int64), s.astype(np.int64)


def block_pair(spec: Any, counts: IntArray, a: int, b: int, w0f: float) -> Pair:
    """Neighbours of the count table ``counts`` (flat cell indices ``a``, ``b``):
    replace-one moves one row from cell ``a`` to cell ``b``; add/remove adds a row in
    cell ``b`` (``a`` unused)."""
    cx, cy, k = counts.shape
    c2 = counts.copy()
    if Relation(spec.relation) is Relation.REPLACE_ONE:
        c2.ravel()[a] -= 1
    c2.ravel()[b] += 1
    d = DiscreteData(*_expand(counts), cx, cy, k)
    dp = DiscreteData(*_expand(c2), cx, cy, k)
    cells = np.flatnonzero(counts.ravel() > 0)

    def where(c: int) -> str:
        i, j, h = (int(v) for v in np.unravel_index(c, counts.shape))
        return f"({i},{j},{h})"

    blocks = " ".join(f"{counts.ravel()[c]}x{where(c)}" for c in cells[:12])
    moved = (f"one {where(a)} -> {where(b)}" if Relation(spec.relation) is
             Relation.REPLACE_ONE else f"add {where(b)}")
    return Pair(d, dp, public_params(spec, d, dp, w0f),
                note=f"blocks {blocks}{' ...' if cells.size > 12 else ''}; {moved}")


def block_search(spec: Any, case: DiscreteCase, result: SensitivityResult, restarts: int,
                 steps: int, rng: np.random.Generator) -> None:
    """Simulated annealing over *block-structured* datasets: a count table over
    ``(x, y, stratum)`` cells with a few large blocks (log-uniform ``n`` up to
    ``case.block_n[1]``). This is the shape of every tightness construction in the proof
    notes (``m`` copies of a few rows, ``m -> inf``), which row-level moves at small
    ``n`` cannot reach. Moves: the changed row's source or target cell, moving a
    fraction of one block to another cell (one row, or up to half the block), and
    doubling or halving every block (the ``m -> inf`` direction)."""
    r1 = Relation(spec.relation) is Relation.REPLACE_ONE
    max_c = case.block_max_c or max(case.max_cx, case.max_cy)
    max_k = case.block_max_k or case.max_k
    lo, hi = case.block_n
    for _ in range(restarts):
        cx = int(rng.integers(2, (case.max_cx if not case.block_max_c else max_c) + 1))
        cy = int(rng.integers(2, (case.max_cy if not case.block_max_c else max_c) + 1))
        k = int(rng.integers(1, max_k + 1))
        shape = (cx, cy, k)
        size = cx * cy * k
        n = int(np.exp(rng.uniform(math.log(lo), math.log(hi))))
        blocks = int(rng.integers(1, min(6, size) + 1))
        counts = np.zeros(shape, dtype=np.int64)
        cells = rng.choice(size, blocks, replace=False)
        counts.ravel()[cells] = np.maximum(1, np.round(rng.dirichlet(np.ones(blocks)) * n))
        flat = counts.ravel()
        a = int(rng.choice(np.flatnonzero(flat > 0)))
        b = int(rng.integers(size))
        w0f = float(rng.choice(case.w0_factors))
        pair = block_pair(spec, counts, a, b, w0f)
        g, bd = gap(spec, pair)
        result.observe("block-search", pair, g, bd)
        cur = g / bd if bd > 0 else 0.0
        temp = 0.05
        for _ in range(steps):
            temp *= 0.995
            nc, na, nb = counts, a, b
            move = int(rng.integers(0, 6))
            occupied = np.flatnonzero(counts.ravel() > 0)
            if move == 0:
                nb = int(rng.integers(size))
            elif move == 1 and r1:
                na = int(rng.choice(occupied))
            elif move <= 3:
                nc = counts.copy()
                i, j = int(rng.choice(occupied)), int(rng.integers(size))
                m = int(nc.ravel()[i])
                t = 1 if rng.random() < 0.5 else int(rng.integers(1, max(1, m // 2) + 1))
                nc.ravel()[i] -= t
                nc.ravel()[j] += t
            elif move == 4:
                nc = np.round(counts * (2.0 if rng.random() < 0.5 else 0.5)).astype(np.int64)
            else:
                nw = float(rng.choice(case.w0_factors))
                if nw == w0f:
                    continue
                w0f = nw
            total = int(nc.sum())
            if (r1 and nc.ravel()[na] < 1) or total < 2 or total > 4 * hi:
                continue
            cand = block_pair(spec, nc, na, nb, w0f)
            g, bd = gap(spec, cand)
            result.observe("block-search", cand, g, bd)
            r = g / bd if bd > 0 else 0.0
            if r >= cur or rng.random() < math.exp((r - cur) / max(temp, 1e-9)):
                counts, a, b, cur = nc, na, nb, r


def hypothesis_search(spec: Any, case: DiscreteCase, result: SensitivityResult,
                      max_examples: int) -> None:
    """Hypothesis-generated datasets and neighbours (lazy import: a dev dependency).

    Records every example; a violation is shrunk by Hypothesis and recorded too."""
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError:  # pragma: no cover - hypothesis is a dev extra
        return

    @st.composite
    def pairs(draw: Any) -> Pair:
        n = draw(st.integers(case.n_range[0], case.n_range[1]))
        cx = draw(st.integers(2, case.max_cx))
        cy = draw(st.integers(2, case.max_cy))
        k = draw(st.integers(1, case.max_k))
        xs = draw(st.lists(st.integers(0, cx - 1), min_size=n, max_size=n))
        ys = draw(st.lists(st.integers(0, cy - 1), min_size=n, max_size=n))
        ss = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
        d = DiscreteData(np.asarray(xs, np.int64), np.asarray(ys, np.int64),
                         np.asarray(ss, np.int64), cx, cy, k)
        i = draw(st.integers(0, n - 1))
        row = (draw(st.integers(0, cx - 1)), draw(st.integers(0, cy - 1)),
               draw(st.integers(0, k - 1)))
        w0f = draw(st.sampled_from(case.w0_factors))
        return make_pair(spec, d, i, row, w0f)

    @settings(max_examples=max_examples, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(pairs())
    def check(pair: Pair) -> None:
        g, b = gap(spec, pair)
        result.observe("hypothesis", pair, g, b)
        assert g <= b * (1.0 + TOLERANCE)

    # A violation is recorded in ``result`` (the shrunk example is observed last).
    with contextlib.suppress(AssertionError):
        check()


# ---------------------------------------------------------------------------------
# Fixed regression cases
# ---------------------------------------------------------------------------------


def privpc_counterexample(n: int = 10_000) -> tuple[DiscreteData, DiscreteData]:
    """The published counterexample to Priv-PC's conditional-tau bound.

    ``(n - 4)/2`` strata of size 2, x constant in each, plus one stratum of size 4 with
    ``S = C - D = 1``. The neighbour makes one size-2 stratum discordant by changing
    one row. The Priv-PC reference code skips constant strata, so ``W = w(4)`` before
    and ``w(4) + 1`` after: ``|dz| = 0.47`` against the claimed ``~4.5/sqrt(n) = 0.045``.
    """
    k = (n - 4) // 2
    x = np.r_[np.zeros(2 * k, dtype=np.int64), [0, 1, 2, 3]].astype(np.int64)
    y = np.r_[np.tile([0, 1], k), [0, 2, 1, 1]].astype(np.int64)
    s = np.r_[np.repeat(np.arange(k), 2), [k, k, k, k]].astype(np.int64)
    d = DiscreteData(x, y, s, 4, 4, k + 1)
    return d, d.with_row(0, (1, 0, 0))


def regression_cases(spec: Any) -> list[Pair]:
    """Fixed neighbouring pairs checked for ``spec`` (every spec with an ``n``-free
    or ``n`` public parameter set gets the Priv-PC counterexample pair)."""
    d, dp = privpc_counterexample()
    if Relation(spec.relation) is not Relation.REPLACE_ONE:
        return []
    out = []
    for w0f in (2.25, 0.25):
        try:
            pub = public_params(spec, d, dp, w0f)
        except UnauditedSpecError:
            return []
        out.append(Pair(d, dp, pub, note="Priv-PC counterexample (blocks of 2 and one of 4)"))
    return out


# ---------------------------------------------------------------------------------
# Registry coverage
# ---------------------------------------------------------------------------------

#: Data/neighbour generators per registered statistic name.
CASES: dict[str, DiscreteCase] = {
    "n-cmi": DiscreteCase(n_range=(2, 24), max_cx=3, max_cy=3, max_k=4),
    "kendall-tau-a": DiscreteCase(n_range=(2, 24), max_cx=6, max_cy=6, max_k=1,
                                  block_max_c=12),
    "conditional-kendall-z": DiscreteCase(n_range=(2, 30), max_cx=4, max_cy=4, max_k=8,
                                          block_max_c=24, block_max_k=3),
    "spearman-rho-a": DiscreteCase(n_range=(2, 24), max_cx=6, max_cy=6, max_k=1,
                                   block_max_c=12, block_n=(2, 400)),
    "conditional-kendall-z-categorical": DiscreteCase(n_range=(2, 30), max_cx=4, max_cy=4,
                                                      max_k=8, block_max_k=3),
    "split-kendall-z": DiscreteCase(n_range=(2, 30), max_cx=5, max_cy=5, max_k=8,
                                    block_max_k=3),
    # a test given the empty set: one stratum (the spec ignores the strata anyway)
    "split-kendall-z-marginal": DiscreteCase(n_range=(2, 30), max_cx=5, max_cy=5, max_k=1,
                                             block_max_k=1),
    "conditional-spearman-z": DiscreteCase(n_range=(2, 30), max_cx=4, max_cy=4, max_k=8,
                                           block_max_c=12, block_max_k=3),
    "g2-decision-distance": DiscreteCase(n_range=(2, 30), max_cx=4, max_cy=4, max_k=6),
    "tie-corrected-kendall-z": DiscreteCase(n_range=(2, 30), max_cx=4, max_cy=4, max_k=8),
    # Continuous statistics on the fixed public map of dpcg.citests.continuous_specs
    # (each evaluation fits a model: small n only).
    "crt-statistic": DiscreteCase(n_range=(3, 20), max_cx=4, max_cy=4, max_k=4,
                                  block_n=(3, 24)),
    "gcm-residual-product-sum": DiscreteCase(n_range=(3, 20), max_cx=4, max_cy=4, max_k=4,
                                             block_n=(3, 24)),
    # cov-pc's moment vectors, one coordinate (dpcg.stats.suffstat); the whole vectors'
    # L2 bounds: moment_l2_audit
    "rank-moment-entry": DiscreteCase(n_range=(2, 30), max_cx=6, max_cy=6, max_k=6,
                                      block_n=(2, 400)),
    "pearson-moment-entry": DiscreteCase(n_range=(2, 30), max_cx=5, max_cy=5, max_k=4),
}


def _rows(*blocks: tuple[int, int, int, int]) -> tuple[IntArray, IntArray, IntArray]:
    """Rows from ``(count, x, y, stratum)`` blocks, in order."""
    cnt = np.array([b[0] for b in blocks], dtype=np.int64)
    return tuple(np.repeat(np.array([b[j] for b in blocks], dtype=np.int64), cnt)
                 for j in (1, 2, 3))  # type: ignore[return-value]


def _construction_pair(spec: Any, before: tuple[IntArray, IntArray, IntArray],
                       change: tuple[int, int, int] | None, w0: float | None,
                       note: str, cards: tuple[int, int] | None = None) -> Pair:
    """``before`` with its LAST row replaced by ``change`` (replace-one) or with the row
    ``change`` appended (add/remove); ``w0`` absolute (None: the default ``9n/4``)."""
    x, y, st = before
    cx = cards[0] if cards else int(max(x.max(), 0 if change is None else change[0])) + 1
    cy = cards[1] if cards else int(max(y.max(), 0 if change is None else change[1])) + 1
    k = int(max(st.max(), 0 if change is None else change[2])) + 1
    d = DiscreteData(x, y, st, cx, cy, k)
    assert change is not None
    if Relation(spec.relation) is Relation.REPLACE_ONE:
        dp = d.with_row(d.n - 1, change)
    else:
        dp = d.appended(change)
    n = min(d.n, dp.n)
    pub = public_params(spec, d, dp, 2.25)
    if "w0" in pub:
        pub["w0"] = 9.0 * n / 4.0 if w0 is None else w0
    return Pair(d, dp, pub, note=note)


def _kendall_w(sizes: list[int]) -> float:
    """``W = sum_b 9 m_b (m_b - 1) / (2 (2 m_b + 5))`` of blocks of the given sizes."""
    m = np.asarray(sizes, dtype=np.float64)
    return float(np.sum(9.0 * m * (m - 1.0) / (2.0 * (2.0 * m + 5.0))))


def constructions(spec: Any) -> list[Pair]:
    """The tightness constructions of the proof notes (``docs/privacy/statistics-*.md``)
    for ``spec`` at a few block sizes ``m`` (empty where none is known). Each is a
    fixed neighbouring pair; the block search (:func:`block_search`) looks beyond them.
    """
    name = spec.name
    r1 = Relation(spec.relation) is Relation.REPLACE_ONE
    out: list[Pair] = []
    if name == "pearson-moment-entry":
        # every row at (1, 1) on the [-1, 1] scale; the last becomes (1, -1): the
        # product moves from 1 to -1, i.e. by 2/n (the bound, attained)
        for m in (10, 100):
            before = _rows((m, 2, 2, 0))
            out.append(_construction_pair(spec, before, (2, 0, 0),
                                          None, f"construction: {m} rows at (1, 1)",
                                          cards=(3, 3)))
    elif name == "n-cmi" and r1:
        # stratum 0: m rows (0,1), m rows (1,0) and the row (0,0), whose removal raises
        # F by about g(2m) - 2 ln 2; it moves to stratum 1 of m rows (0,0) as (1,1),
        # raising F by g(m): together ~(2 ln(n/2) + 2 - 1.39) vs 2 g(n-1) ~ 2 ln n + 2.
        for m in (300, 3_000, 30_000):
            before = _rows((m, 0, 1, 0), (m, 1, 0, 0), (m, 0, 0, 1), (1, 0, 0, 0))
            out.append(_construction_pair(spec, before, (1, 1, 1), None,
                                          f"construction: strata of 2m+1 and m rows, m={m}"))
    elif name == "kendall-tau-a":
        for n in (9, 30):
            if r1:
                i = np.arange(1, n + 1, dtype=np.int64)
                pair_d = (i, i.copy(), np.zeros(n, dtype=np.int64))
                out.append(_construction_pair(spec, pair_d, (n, 0, 0), None,
                                              f"construction: monotone rows, n={n}"))
            else:
                i = np.arange(n, dtype=np.int64)
                pair_d = (i, i[::-1].copy(), np.zeros(n, dtype=np.int64))
                out.append(_construction_pair(spec, pair_d, (n, n, 0), None,
                                              f"construction: anti-monotone rows, n={n}"))
    elif name == "g2-decision-distance" and r1:
        # a 2x2 table of 40 rows whose G-test p-value is next to alpha = 0.05 (cells
        # (0,0), (0,1), (1,0), (1,1) = 1, 4, 23, 12): moving one (1,1) row to (0,1)
        # flips the decision, so the signed distance moves by exactly 1 (proof note,
        # "Tightness"; tests/stats/test_g2_distance.py finds the table by search).
        before = _rows((1, 0, 0, 0), (4, 0, 1, 0), (23, 1, 0, 0), (12, 1, 1, 0))
        out.append(_construction_pair(spec, before, (0, 1, 0), None,
                                      "construction: one row across the G-test boundary, "
                                      "n=40", cards=(2, 2)))
    elif name == "conditional-kendall-z":
        for m in (60, 200):
            i = np.arange(m, dtype=np.int64)
            if r1:
                # a row discordant with a monotone block moves to an anti-monotone block
                # as a row concordant with all of it (tests/stats, near-tight > 0.9)
                before = (np.r_[i, i, m], np.r_[i, i[::-1], 0],
                          np.r_[np.zeros(m, np.int64), np.ones(m, np.int64), 0])
                out.append(_construction_pair(spec, before, (m, m, 1), None,
                                              f"construction: monotone/anti-monotone blocks, "
                                              f"m={m}"))
            else:
                # add a row concordant with an anti-monotone block; w0 = W(D) so that the
                # normaliser moves too (the 9/8 of c_U + 9/8)
                before = (i, i[::-1].copy(), np.zeros(m, np.int64))
                for w0 in (_kendall_w([m]), 9.0 * m / 4.0):
                    out.append(_construction_pair(
                        spec, before, (m, m, 0), w0,
                        f"construction: anti-monotone block + concordant row, m={m}"))
    elif name in ("conditional-kendall-z-categorical", "split-kendall-z"):
        for m in (100, 400):
            if r1 and name == "conditional-kendall-z-categorical":
                # binary x (c_U(2) = 9/2): block 0 = m rows (0,1) + row (1,2) concordant
                # with all; it moves to block 1 (m rows (0,1)) as (1,0), discordant with all
                before = _rows((m, 0, 1, 0), (m, 0, 1, 1), (1, 1, 2, 0))
                out.append(_construction_pair(spec, before, (1, 0, 1), None,
                                              f"construction: binary x, two blocks, m={m}",
                                              cards=(2, 3)))
                # three categories (c_U(3) = 45/8), statistics-conditional-kendall-z.md
                before = _rows((m, 0, 1, 0), (m, 1, 2, 0), (m, 0, 1, 1), (m, 1, 0, 1),
                               (1, 2, 0, 0))
                out.append(_construction_pair(spec, before, (2, 2, 1), None,
                                              f"construction: three categories, m={m}",
                                              cards=(3, 3)))
            elif r1:
                # three categories (statistics-split-kendall-z.md, 0.991 at m = 400)
                before = _rows((m, 0, 1, 0), (m, 0, 0, 1), (m, 0, 0, 2), (1, 1, 1, 2),
                               (1, 1, 0, 0))
                out.append(_construction_pair(spec, before, (1, 1, 1), None,
                                              f"construction: three blocks, m={m}",
                                              cards=(3, 3)))
            else:
                # block 0: m/2 rows (0,1) and m/2 rows (1,0) (U ~ -9m/8); the row (1,1) is
                # added to block 1 of m rows (0,0), concordant with all (dU -> 9/2), and
                # with w0 = W(D) the normaliser's growth moves z the same way
                before = _rows((m // 2, 0, 1, 0), (m // 2, 1, 0, 0), (m, 0, 0, 1))
                for w0 in (_kendall_w([m // 2 * 2, m]), 9.0 * m / 4.0):
                    out.append(_construction_pair(
                        spec, before, (1, 1, 1), w0,
                        f"construction: discordant block + concordant row added to a "
                        f"constant block, m={m}", cards=(2, 3)))
    elif name == "split-kendall-z-marginal" and r1:
        # every row at (0, 0) and one replaced by (1, 1): dS = m - 1 for the binary pair,
        # 9 (m - 1)/(2m + 5) of the bound's 9/2 (statistics-split-kendall-z.md, claim 5)
        for m in (100, 400):
            out.append(_construction_pair(spec, _rows((m, 0, 0, 0)), (1, 1, 0), None,
                                          f"construction: one stratum of (0,0) rows, one "
                                          f"replaced by (1,1), m={m}", cards=(2, 2)))
    elif name == "spearman-rho-a":
        # the exact maximum at n = 3 (exhaustive over all weak orders): 0.75 of the bound
        before = (np.array([0, 0, 1], np.int64), np.array([1, 1, 0], np.int64),
                  np.zeros(3, np.int64))
        out.append(_construction_pair(spec, before, (1, 2, 0), None,
                                      "construction: exact maximum at n = 3"))
    elif name == "conditional-spearman-z":
        # the row (m, m), concordant with every row of an anti-monotone block, leaves it
        # (G falls by ~5) and joins a monotone block as (m, 0), discordant with every
        # row (G falls by ~5 again): ~10 of the proof's 8 + 8 (best construction found)
        for m in (100, 400):
            i = np.arange(m, dtype=np.int64)
            before = (np.r_[i, i, m], np.r_[i[::-1], i + 1, m],
                      np.r_[np.zeros(m, np.int64), np.ones(m, np.int64), 0])
            out.append(_construction_pair(spec, before, (m, 0, 1), None,
                                          f"construction: outlier row moved from an "
                                          f"anti-monotone to a monotone block, m={m}"))
    return out


def spearman_step_maximum(m: int) -> tuple[float, int, int]:
    """The exact maximum of ``G' - G`` when one row joins a block of ``m`` rows, for the
    block statistic ``G = 12 T / (m (m + 1))`` of ``conditional-spearman-z``, over EVERY
    block of ``m`` rows and every new row; returns ``(maximum, p, q)`` with the new row
    placed above ``p`` old rows in x and ``q`` in y.

    Ties need not be searched: midranks average the ranks over the tie-breaks, and with
    independent tie-breaks in x and y ``T`` (bilinear) and each term of ``T' - T`` are the
    averages of their tie-broken values, so ``G' - G`` with ties is an average of values
    without ties. Without ties the block is a permutation ``pi`` and, for a fixed ``(p,
    q)``, ``m (T' - T) - 2 T`` (``G' - G`` times the positive ``m (m+1)(m+2) / 12``) is
    a sum over the rows of a function of ``(rank_x, rank_y)`` plus a constant
    (docs/privacy/statistics-conditional-spearman-z.md, proof): an assignment problem,
    solved exactly for each of the ``(m+1)^2`` placements. By the symmetry ``y -> -y``
    the minimum is minus the maximum, and a removal is an addition read backwards.
    """
    from scipy.optimize import linear_sum_assignment

    ranks = np.arange(1, m + 1, dtype=np.float64)
    a = ranks - (m + 1) / 2.0
    best = (-math.inf, 0, 0)
    for p in range(m + 1):
        s = np.where(ranks > p, 1.0, -1.0)
        for q in range(m + 1):
            t = np.where(ranks > q, 1.0, -1.0)
            w = (m * (0.5 * np.outer(s, a) + 0.5 * np.outer(a, t) + 0.25 * np.outer(s, t))
                 - 2.0 * np.outer(a, a))
            rows, cols = linear_sum_assignment(w, maximize=True)
            phi = float(w[rows, cols].sum()) + m * (p - m / 2.0) * (q - m / 2.0)
            step = 12.0 * phi / (m * (m + 1) * (m + 2))
            if step > best[0]:
                best = (step, p, q)
    return best


@dataclass(frozen=True)
class Effort:
    """How hard each search works (per spec)."""

    random_trials: int = 200
    restarts: int = 4
    steps: int = 150
    hypothesis_examples: int = 100
    block_restarts: int = 4
    block_steps: int = 200


QUICK = Effort()
FULL = Effort(random_trials=2000, restarts=20, steps=600, hypothesis_examples=600,
              block_restarts=12, block_steps=600)


def audit_spec(spec: Any, case: DiscreteCase, effort: Effort, seed: int) -> SensitivityResult:
    rng = np.random.default_rng(seed)
    result = SensitivityResult(spec.name, Relation(spec.relation).value)
    for pair in regression_cases(spec):
        g, b = gap(spec, pair)
        result.observe("regression", pair, g, b)
    for pair in constructions(spec):
        g, b = gap(spec, pair)
        result.observe("construction", pair, g, b)
    random_search(spec, case, result, effort.random_trials, rng)
    local_search(spec, case, result, effort.restarts, effort.steps, rng)
    block_search(spec, case, result, effort.block_restarts, effort.block_steps, rng)
    if effort.hypothesis_examples > 0:
        hypothesis_search(spec, case, result, effort.hypothesis_examples)
    return result


def unaudited(specs: tuple[Any, ...], cases: Mapping[str, object] = CASES) -> list[str]:
    """Names of registered specs without an audit generator."""
    return sorted({s.name for s in specs if s.name not in cases})


def audit_all(effort: Effort = QUICK, seed: int = 0,
              progress: Callable[[str], None] | None = None) -> list[SensitivityResult]:
    """Audit every registered spec; raises :class:`UnauditedSpecError` if one has no
    generator in :data:`CASES`."""
    import dpcg.citests.continuous_specs
    import dpcg.citests.private
    import dpcg.stats
    import dpcg.stats.suffstat  # noqa: F401
    from dpcg.stats.registry import all_specs

    specs = all_specs()
    missing = unaudited(specs)
    if missing:
        raise UnauditedSpecError(
            f"registered statistics without a sensitivity audit: {missing}; add a generator "
            "to audits.sensitivity.CASES"
        )
    results = []
    for j, spec in enumerate(specs):
        if progress is not None:
            progress(f"sensitivity: {spec.name} ({Relation(spec.relation).value})")
        results.append(audit_spec(spec, CASES[spec.name], effort, seed + 1000 * j))
    return results


# ---------------------------------------------------------------------------------
# Mutant: Priv-PC's conditional tau (constant strata skipped, no floor)
# ---------------------------------------------------------------------------------


def _privpc_skipping_z(x: IntArray, y: IntArray, s: IntArray, **_: float) -> float:
    """Priv-PC reference code's conditional Kendall z: strata with constant x or y are
    skipped (dropped from U and W) and the normaliser is ``sqrt(W)`` (no floor)."""
    from dpcg.stats.contingency import table_from_codes
    from dpcg.stats.kendall import concordance

    xa, ya, sa = (np.asarray(v, dtype=np.int64) for v in (x, y, s))
    t = table_from_codes(xa, ya, sa, int(xa.max()) + 1, int(ya.max()) + 1, int(sa.max()) + 1)
    S = concordance(t).astype(np.float64)
    m = t.stratum_sizes().astype(np.float64)
    ok = (np.count_nonzero(t.x_margins(), axis=1) > 1) & (
        np.count_nonzero(t.y_margins(), axis=1) > 1
    )
    U = float(np.sum(9.0 * S[ok] / (2.0 * m[ok] + 5.0)))
    W = float(np.sum(9.0 * m[ok] * (m[ok] - 1) / (2.0 * (2.0 * m[ok] + 5.0))))
    return U / math.sqrt(W) if W > 0 else 0.0


def privpc_conditional_tau_spec() -> Any:
    """A StatisticSpec for the Priv-PC conditional tau with its claimed bound
    ``4.5 / sqrt(n)`` (Theorem 3: ``c1/sqrt(n)``, ``c1 -> 9/2``). Not registered:
    it is a mutant the sensitivity audit must refute."""
    from dpcg.stats.registry import StatisticSpec

    return StatisticSpec(
        name="mutant:privpc-conditional-tau",
        relation=Relation.REPLACE_ONE,
        sensitivity=lambda *, n: 4.5 / math.sqrt(float(n)),
        assumptions="Priv-PC Theorem 3 as published (constant strata skipped, no floor)",
        proof_note="docs/audits.md",
        statistic=_privpc_skipping_z,
        public_params=("n",),
    )


# ---------------------------------------------------------------------------------
# PrivGCM residual products (continuous input) and the scikit-learn alpha mutant
# ---------------------------------------------------------------------------------


def gcm_l1_search(
    name: str,
    fit_lambda: float,
    claimed: float,
    n: int,
    effort: Effort,
    seed: int,
    ridge: dict[str, Any] | None = None,
    groups: int | None = None,
) -> SensitivityResult:
    """Hill climbing on the L1 change of PrivGCM's residual-product vector (or, with
    ``groups``, of its sums over the public groups ``i mod groups``, grouped PrivGCM's
    release)
    (``dpcg.citests.gcm.residual_products``, X, Y, Z in ``[-1, 1]``, one Z column)
    when one row is replaced, fitted with ridge ``fit_lambda``, against ``claimed``.

    Starts from perfectly dependent data (``y = x``, all products near 1) or from
    independent signs; moves: the replacement row's values and which row is replaced.
    ``ridge`` adds regression options (``regression="rff"``, ``features``, ...).
    """
    from dpcg.citests.gcm import group_sums
    from dpcg.citests.gcm import residual_products as _products

    def residual_products(*args: Any, **kwargs: Any) -> FloatVec:
        out = _products(*args, **kwargs)
        return out if groups is None else group_sums(out, groups)

    rng = np.random.default_rng(seed)
    result = SensitivityResult(name, Relation.REPLACE_ONE.value)
    kw: dict[str, Any] = {"bounds_x": (-1.0, 1.0), "bounds_y": (-1.0, 1.0),
                          "bounds_z": [(-1.0, 1.0)], "lam": fit_lambda, **(ridge or {})}
    restarts = max(effort.restarts * 5, 10)
    steps = max(effort.steps // 4, 30)
    for r in range(restarts):
        # r % 3 == 0: all rows at one z (the fit is a shrunk mean, so one replaced row
        # moves every residual); otherwise z spread uniformly.
        z = np.zeros((n, 1)) if r % 3 == 0 else rng.uniform(-1.0, 1.0, (n, 1))
        x = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) if r % 3 == 0 else rng.choice(
            [-1.0, 1.0], n)
        y = x.copy() if r % 2 == 0 else rng.choice([-1.0, 1.0], n)
        base = residual_products(x, y, z, **kw)

        def l1(i: int, row: tuple[float, float, float], x: FloatVec = x, y: FloatVec = y,
               z: NDArray[np.float64] = z, base: FloatVec = base) -> float:
            x2, y2, z2 = x.copy(), y.copy(), z.copy()
            x2[i], y2[i], z2[i, 0] = row
            return float(np.abs(residual_products(x2, y2, z2, **kw) - base).sum())

        i = 0
        row = (-float(x[0]), float(y[0]), float(z[0, 0]))
        cur = l1(i, row)
        for _ in range(steps):
            ni = int(rng.integers(0, n)) if rng.random() < 0.3 else i
            nrow = (float(rng.choice([-1.0, 1.0])), float(rng.choice([-1.0, 1.0])),
                    float(rng.uniform(-1.0, 1.0)))
            g = l1(ni, nrow)
            result.evaluations += 1
            if g >= cur:
                cur, i, row = g, ni, nrow
        ratio = cur / claimed
        result.by_method["local-search"] = max(result.by_method.get("local-search", 0.0), ratio)
        if ratio > result.max_ratio:
            result.max_ratio, result.max_gap, result.bound_at_max = ratio, cur, claimed
            result.witness = (f"n={n}, fit lambda={fit_lambda:g}, row {i} -> "
                              f"(x={row[0]:g}, y={row[1]:g}, z={row[2]:.3f}); "
                              f"L1 change {cur:.4f} vs claimed {claimed:.4f}")
    return result


def gcm_audits(effort: Effort, seed: int) -> tuple[SensitivityResult, SensitivityResult]:
    """(correct, mutant): the residual products with ``c_lambda(lam)`` at the fitted
    ``lam``; and the scikit-learn mix-up: ``KernelRidge(alpha=a)`` fits with
    ``lam = a/n`` but the sensitivity is computed as ``c_lambda(a)``."""
    from dpcg.citests.gcm import c_lambda

    n, a = 100, 30.0
    lam = a / n
    ok = gcm_l1_search("privgcm residual products, c_lambda(lam)", lam, c_lambda(lam), n,
                       effort, seed)
    bad = gcm_l1_search("mutant:privgcm sklearn alpha as lambda", lam, c_lambda(a), n,
                        effort, seed)
    return ok, bad


def gcm_rff_audit(effort: Effort, seed: int) -> SensitivityResult:
    """The residual products of the random-Fourier-feature ridge (``regression="rff"``,
    few public features, so the fit is close to parametric) against the same
    ``c_lambda(lam)`` (docs/privacy/privgcm.md, "Finite-dimensional feature maps")."""
    from dpcg.citests.gcm import c_lambda

    n, lam = 100, 0.3
    return gcm_l1_search("privgcm residual products, RFF ridge (D=8), c_lambda(lam)", lam,
                         c_lambda(lam), n, effort, seed,
                         ridge={"regression": "rff", "features": 8, "feature_seed": 0})


def gcm_grouped_audit(effort: Effort, seed: int) -> SensitivityResult:
    """Grouped PrivGCM's release (the sums of the residual products over 10 public groups)
    against ``c_lambda_sharp(lam)`` (Theorem 1 with Lemma A'; docs/privacy/privgcm.md,
    "Grouped release"), at ``lam = 0.3`` where the sharper constant is relatively
    tightest of the range in use (bandwidth 0.5)."""
    from dpcg.citests.gcm import c_lambda_sharp

    n, lam = 100, 0.3
    return gcm_l1_search("grouped privgcm sums (G=10), c_lambda_sharp(lam)", lam,
                         c_lambda_sharp(lam), n, effort, seed, groups=10)


def gcm_twice_audit(effort: Effort, seed: int) -> SensitivityResult:
    """Twice-fitted grouped PrivGCM's release (the grouped default since issue 60's fix:
    the sums over 10 groups of the products of the twice-fitted, clipped residuals)
    against ``c_lambda_twice(lam, clip)`` (docs/privacy/privgcm.md, Theorem 2), at
    ``lam = 0.3``, bandwidth 0.5 and clip 1 (the default 0.5 caps every product at 0.25,
    where the search reaches only 0.07 of the bound; at clip 1 about 0.2)."""
    from dpcg.citests.gcm import c_lambda_twice

    n, lam, clip = 100, 0.3, 1.0
    return gcm_l1_search("twice-fitted grouped privgcm sums (G=10, clip 1), "
                         "c_lambda_twice(lam, 1)", lam, c_lambda_twice(lam, clip), n,
                         effort, seed, ridge={"fit": "twice", "residual_clip": clip},
                         groups=10)


FloatVec = NDArray[np.float64]


# ---------------------------------------------------------------------------------
# cov-pc's moment vectors: the L2 change of the whole vector (dpcg.stats.suffstat)
# ---------------------------------------------------------------------------------


def moment_l2_audit(route: str, effort: Effort, seed: int) -> SensitivityResult:
    """Random search and hill climbing on the replace-one L2 change of cov-pc's moment
    vector (``route`` ``"rank"``: midranks, ties; ``"rank-two-valued"``: the same with
    its first ``qb`` columns restricted to ``{0, 1}`` in both tables, against the bound
    with ``two_valued = qb`` (Lemma 2b); ``"pearson"``: rows in ``[-1, 1]``)
    against :func:`~dpcg.stats.suffstat.rank_moment_sensitivity` /
    :func:`~dpcg.stats.suffstat.pearson_moment_sensitivity`.

    Tables of ``n`` rows and ``q`` columns with values on a few levels (ties) or on the
    grid's extremes; moves: the replacement row, which row is replaced, and one other
    cell."""
    from dpcg.stats.suffstat import (
        moment_vector,
        pearson_moment_sensitivity,
        rank_moment_sensitivity,
        rank_scores,
    )

    rng = np.random.default_rng(seed)
    result = SensitivityResult(f"cov-pc {route} moment vector", Relation.REPLACE_ONE.value)
    pearson = route == "pearson"

    def vec(a: NDArray[np.float64]) -> NDArray[np.float64]:
        return moment_vector(a, True) if pearson else moment_vector(rank_scores(a), False)

    restarts = max(effort.restarts * 5, 10)
    steps = max(effort.steps // 2, 40)
    for r in range(restarts):
        n = int(rng.integers(2, 40))
        q = int(rng.integers(1, 5))
        levels = np.array([-1.0, 0.0, 1.0]) if r % 2 else np.linspace(-1.0, 1.0, 5)
        qb = int(rng.integers(1, q + 1)) if route == "rank-two-valued" else 0
        bound = (pearson_moment_sensitivity(n, q) if pearson
                 else rank_moment_sensitivity(n, q, qb))

        def cell(col: int, qb: int = qb, levels: NDArray[np.float64] = levels) -> float:
            return float(rng.integers(0, 2)) if col < qb else float(rng.choice(levels))

        a = rng.choice(levels, (n, q))
        i = int(rng.integers(0, n))
        row = rng.choice(levels, q)
        if qb:  # two-valued columns hold 0/1 in both tables (the other routes' draws kept)
            a[:, :qb] = rng.integers(0, 2, (n, qb))
            row[:qb] = rng.integers(0, 2, qb)

        def l2(a: NDArray[np.float64], i: int, row: NDArray[np.float64]) -> float:
            b = a.copy()
            b[i] = row
            return float(np.linalg.norm(vec(a) - vec(b)))

        cur = l2(a, i, row)
        for _ in range(steps):
            na, ni, nrow = a, i, row
            move = rng.random()
            if move < 0.4:
                nrow = row.copy()
                if qb:
                    c = int(rng.integers(0, q))
                    nrow[c] = cell(c)
                else:
                    nrow[int(rng.integers(0, q))] = rng.choice(levels)
            elif move < 0.6:
                ni = int(rng.integers(0, n))
            else:
                na = a.copy()
                if qb:
                    c = int(rng.integers(0, q))
                    na[int(rng.integers(0, n)), c] = cell(c)
                else:  # the draws of the first version (rank, pearson rows unchanged)
                    na[int(rng.integers(0, n)), int(rng.integers(0, q))] = rng.choice(levels)
            g = l2(na, ni, nrow)
            result.evaluations += 1
            if g >= cur:
                cur, a, i, row = g, na, ni, nrow
        ratio = cur / bound
        result.by_method["local-search"] = max(result.by_method.get("local-search", 0.0), ratio)
        if ratio > result.max_ratio:
            result.max_ratio, result.max_gap, result.bound_at_max = ratio, cur, bound
            result.witness = (f"n={n}, q={q}, two-valued {qb}, row {i} -> "
                              f"{np.round(row, 3).tolist()}; "
                              f"L2 change {cur:.5f} vs bound {bound:.5f}")
    return result
