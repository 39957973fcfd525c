"""Signed distance to the G^2 decision (dpcg.stats.g2_distance): ceiling and sensitivity.

* with the noise off its decision (``s > 1/2``) is the G-test's, exactly;
* replace-one sensitivity 1: no neighbouring pair differs by more than 1 (Hypothesis
  over random small tables and public parameters, every neighbour of adversarial tables
  that sit next to the decision boundary, have singleton strata, unobserved
  configurations, zero cells or near-deterministic structure);
* it is a lower bound on the true number of replacements that flip the decision
  (breadth-first search over all tables of a few rows);
* the registered spec and its bound.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.relations import Relation
from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import StrataTable, table_from_codes
from dpcg.stats.discrete import g2_test
from dpcg.stats.g2_distance import (
    g2_distance,
    g2_distance_details,
    g_increment_array,
    half_step_range,
)
from dpcg.stats.registry import get

#: The source checkout (the proof notes are docs, not package data).
ROOT = Path(__file__).resolve().parents[2]


def _table(x: np.ndarray, y: np.ndarray, s: np.ndarray, cx: int, cy: int, k: int
           ) -> StrataTable:
    return table_from_codes(x, y, s, cx, cy, k)


def _rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int]:
    cx = draw(st.integers(2, 4))
    cy = draw(st.integers(2, 4))
    k = draw(st.integers(1, 4))
    n = draw(st.integers(2, 40))
    skew = draw(st.sampled_from(["uniform", "diagonal", "one-cell"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    s = rng.integers(0, draw(st.integers(1, k)), n)
    x = rng.integers(0, cx, n)
    if skew == "diagonal":
        y = np.where(rng.random(n) < 0.8, x % cy, rng.integers(0, cy, n))
    elif skew == "one-cell":
        x = np.where(rng.random(n) < 0.7, 0, x)
        y = np.where(rng.random(n) < 0.7, 0, rng.integers(0, cy, n))
    else:
        y = rng.integers(0, cy, n)
    return x, y, s, cx, cy, k


@st.composite
def neighbour_pairs(draw: st.DrawFn) -> tuple[StrataTable, StrataTable, float]:
    x, y, s, cx, cy, k = _rows(draw)
    i = draw(st.integers(0, len(x) - 1))
    x2, y2, s2 = x.copy(), y.copy(), s.copy()
    x2[i] = draw(st.integers(0, cx - 1))
    y2[i] = draw(st.integers(0, cy - 1))
    s2[i] = draw(st.integers(0, k - 1))
    alpha = draw(st.sampled_from([0.05, 0.01, 0.2, 0.5]))
    return _table(x, y, s, cx, cy, k), _table(x2, y2, s2, cx, cy, k), alpha


@given(neighbour_pairs())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_replace_one_sensitivity_is_one(pair: tuple[StrataTable, StrataTable, float]) -> None:
    t1, t2, alpha = pair
    assert abs(g2_distance(t1, alpha) - g2_distance(t2, alpha)) <= 1


@given(neighbour_pairs())
@settings(max_examples=150, deadline=None)
def test_decision_is_the_g_test(pair: tuple[StrataTable, StrataTable, float]) -> None:
    for t in pair[:2]:
        d = g2_distance_details(t, pair[2])
        r = g2_test(t)
        assert d.dependent == (r.df > 0 and r.pvalue <= pair[2])
        assert (d.value > 0.5) == d.dependent
        assert d.g2 == pytest.approx(r.statistic, rel=1e-12, abs=1e-12)
        assert d.df == r.df


def _cells_to_table(cells: np.ndarray, k: int, cx: int, cy: int, n_configs: int
                    ) -> StrataTable:
    counts = cells.reshape(k, cx, cy).astype(np.int64)
    counts = counts[counts.any(axis=(1, 2))]
    return StrataTable(counts, cx, cy, n_configs)


def _all_neighbours(cells: np.ndarray) -> list[np.ndarray]:
    out = []
    for u in np.flatnonzero(cells):
        for v in range(cells.size):
            if v != u:
                nb = cells.copy()
                nb[u] -= 1
                nb[v] += 1
                out.append(nb)
    return out


def _exhaustive(cells: np.ndarray, k: int, cx: int, cy: int, n_configs: int,
                alpha: float) -> int:
    """Largest |s(T) - s(T')| over every replace-one neighbour T' of T."""
    base = g2_distance(_cells_to_table(cells, k, cx, cy, n_configs), alpha)
    worst = 0
    for nb in _all_neighbours(cells):
        v = g2_distance(_cells_to_table(nb, k, cx, cy, n_configs), alpha)
        worst = max(worst, abs(v - base))
    return worst


def _boundary_table(n: int, alpha: float) -> np.ndarray:
    """A 2x2 table whose G-test p-value is as close to alpha as n allows."""
    best, cells = 2.0, np.zeros(4, dtype=np.int64)
    for a in range(n + 1):
        for b in range(n + 1 - a):
            for c in range(n + 1 - a - b):
                t = np.array([a, b, c, n - a - b - c])
                r = g2_test(StrataTable(t.reshape(1, 2, 2), 2, 2, 1))
                if r.df and abs(np.log(r.pvalue / alpha)) < best:
                    best, cells = abs(np.log(r.pvalue / alpha)), t
    return cells


ADVERSARIAL = [
    # (cells as (k, cx, cy), n_configs): deterministic, near-boundary, singleton strata,
    # unobserved configurations, zero rows/columns, one huge cell
    (np.array([[[30, 0], [0, 30]]]), 1),
    (np.array([[[60, 0], [0, 1]]]), 1),
    (np.array([[[59, 1], [1, 0]]]), 1),
    (np.array([[[1, 0], [0, 0]], [[0, 0], [0, 1]], [[1, 1], [1, 1]]]), 3),
    (np.array([[[5, 0, 0], [0, 5, 0], [0, 0, 5]]]), 4),
    (np.array([[[20, 0, 3], [0, 0, 0]], [[2, 2, 2], [2, 2, 1]]]), 6),
    (np.array([[[200, 0], [0, 0]]]), 1),
    (np.array([[[100, 1], [1, 100]]]), 2),
    (np.array([[[12, 3], [4, 11]]]), 1),
    (np.array([[[3, 1], [1, 3]], [[3, 1], [1, 3]]]), 2),
]


@pytest.mark.parametrize(("cells", "n_configs"), ADVERSARIAL)
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_adversarial_tables_every_neighbour(cells: np.ndarray, n_configs: int,
                                            alpha: float) -> None:
    k, cx, cy = cells.shape
    assert _exhaustive(cells.reshape(-1), k, cx, cy, n_configs, alpha) <= 1


@pytest.mark.parametrize("n", [10, 25, 60])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_boundary_tables_every_neighbour(n: int, alpha: float) -> None:
    cells = _boundary_table(n, alpha)
    assert _exhaustive(cells, 1, 2, 2, 1, alpha) <= 1


def test_tightness_a_flip_costs_exactly_one() -> None:
    """Next to the decision boundary the bound is attained: a neighbouring pair on the
    two sides of the decision has values 1 and 0."""
    cells = _boundary_table(40, 0.05)
    t = _cells_to_table(cells, 1, 2, 2, 1)
    base = g2_distance(t, 0.05)
    seen = {g2_distance(_cells_to_table(nb, 1, 2, 2, 1), 0.05) - base
            for nb in _all_neighbours(cells)}
    assert 1 in seen or -1 in seen


def _true_flip_distance(cells: np.ndarray, alpha: float, limit: int) -> int:
    """Breadth-first search: fewest replacements that change the G-test decision."""
    def dep(c: np.ndarray) -> bool:
        r = g2_test(StrataTable(c.reshape(1, 2, 2)[c.reshape(1, 2, 2).any(axis=(1, 2))],
                                2, 2, 1))
        return r.df > 0 and r.pvalue <= alpha

    start = dep(cells)
    frontier = {tuple(cells)}
    seen = set(frontier)
    for depth in range(1, limit + 1):
        nxt = set()
        for c in frontier:
            for nb in _all_neighbours(np.array(c)):
                key = tuple(nb)
                if key in seen:
                    continue
                if dep(nb) != start:
                    return depth
                seen.add(key)
                nxt.add(key)
        frontier = nxt
    return limit + 1


@pytest.mark.parametrize("n", [8, 14])
def test_distance_is_a_lower_bound_on_the_flip_distance(n: int) -> None:
    for a, b, c in itertools.product(range(n + 1), repeat=3):
        if a + b + c > n:
            continue
        cells = np.array([a, b, c, n - a - b - c])
        t = _cells_to_table(cells, 1, 2, 2, 1)
        s = g2_distance(t, 0.05)
        true = _true_flip_distance(cells, 0.05, limit=n)
        assert (s if s >= 1 else 1 - s) <= true


def test_monotone_rates_and_g() -> None:
    m = np.arange(0, 50, dtype=np.float64)
    g = g_increment_array(m)
    assert g[0] == 0.0
    np.testing.assert_allclose(g[1:], (m[1:] + 1) * np.log(m[1:] + 1) - m[1:] * np.log(m[1:]),
                               rtol=1e-12)
    assert np.all(np.diff(g) > 0)
    a = np.array([[[5.0, 0.0], [1.0, 9.0]]])
    b, c, d = a.sum(2)[:, :, None], a.sum(1)[:, None, :], a.sum((1, 2))[:, None, None]
    prev = (0.0, 0.0)
    for k in range(0, 30):
        u, v = half_step_range(a, b, c, d, k)
        assert u >= prev[0]
        assert v >= prev[1]
        prev = (u, v)


def test_strong_dependence_is_far_and_independence_is_negative() -> None:
    rng = np.random.default_rng(3)
    n = 20_000
    x = rng.integers(0, 3, n)
    y = np.where(rng.random(n) < 0.3, x, rng.integers(0, 3, n))
    dep = g2_distance(_table(x, y, np.zeros(n, dtype=np.int64), 3, 3, 1), 0.05)
    assert dep > 100
    y2 = rng.integers(0, 3, n)
    ind = g2_distance(_table(x, y2, np.zeros(n, dtype=np.int64), 3, 3, 1), 0.05)
    assert ind <= 0


def test_bad_input() -> None:
    t = _table(np.array([0, 1]), np.array([1, 0]), None, 2, 2, 1)  # type: ignore[arg-type]
    for bad in (0.0, 1.0, -0.1, float("nan"), True, "0.05"):
        with pytest.raises(StatisticInputError, match="alpha"):
            g2_distance(t, bad)  # type: ignore[arg-type]
    with pytest.raises(StatisticInputError, match="StrataTable"):
        g2_distance(np.zeros((1, 2, 2)), 0.05)  # type: ignore[arg-type]
    empty = StrataTable(np.zeros((0, 2, 2), dtype=np.int64), 2, 2, 1)
    assert g2_distance(empty, 0.05) == 0


def test_registered_spec() -> None:
    spec = get("g2-decision-distance", Relation.REPLACE_ONE)
    assert spec.bound(cx=3, cy=4) == 1.0
    assert (ROOT / spec.proof_note).is_file()
    rng = np.random.default_rng(0)
    x, y, s = rng.integers(0, 3, 50), rng.integers(0, 4, 50), rng.integers(0, 2, 50)
    v = spec.evaluate(x, y, s, cx=3, cy=4)
    assert v == float(g2_distance(
        StrataTable(_table(x, y, s, 3, 4, 2).counts, 3, 4, 2**62), 0.05))
    with pytest.raises(StatisticInputError, match="outside its declared"):
        spec.evaluate(x, y, s, cx=2, cy=4)
    with pytest.raises(StatisticInputError):
        get("g2-decision-distance", Relation.ADD_REMOVE)


_SEARCH = [
    # (tables searched over candidate cells above, tables of plain-float rates up to,
    #  checks before the search over every cell, batch elements, batch radii, survivors
    #  join the candidates up to one cell in ...)
    (256, 32, 8, 4096, 8, 8),            # the defaults (plain floats: 32 cells, cost 36)
    (0, 64, 8, 4096, 32, 8),             # every table through the candidate search
    (10**9, 0, 8, 4096, 32, 8),          # every table through NumPy rates, directly
    (10**9, 10**9, 8, 0, 32, 8),         # plain floats wherever fewer than 8 strata, no batch
    (0, 0, 1, 4096, 32, 10**9),          # one check, then the search over every cell
    (0, 0, 8, 10**9, 2, 1),              # batches of two radii; any number of survivors
    (0, 0, 8, 4096, 32, 10**9),          # survivors only when there are none: more checks
    (10**9, 0, 8, 10**9, 10**6, 8),      # any bracket in one batch
]


def _tables_for_search(seed: int) -> list[StrataTable]:
    rng = np.random.default_rng(seed)
    tables = []
    for _ in range(25):
        cx, cy, k = int(rng.integers(2, 30)), int(rng.integers(2, 30)), int(rng.integers(1, 5))
        n = int(rng.choice([8, 60, 2000, 50000]))
        x = rng.integers(0, cx, n)
        y = np.where(rng.random(n) < rng.random(), x % cy, rng.integers(0, cy, n))
        s = np.where(rng.random(n) < 0.7, 0, rng.integers(0, k, n))
        t = _table(x, y, s, cx, cy, k)
        tables.append(StrataTable(t.counts, cx, cy, k + int(rng.integers(0, 2))))
    return tables


@pytest.mark.parametrize("seed", range(4))
def test_value_does_not_depend_on_how_the_search_probes(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's parameters change its speed only: through the candidate cells or
    not, with rates in plain floats or NumPy, with or without batches of radii, with
    the cells that can still be a maximum joining the candidates or more checks, the
    value is the same (every radius used is evaluated exactly, the candidates' rates are
    the cells' own floats, and the crossing tests are monotone in floating point)."""
    import dpcg.stats.g2_distance as mod

    tables = _tables_for_search(seed)
    values = []
    for cand, small, rounds, elements, radii, share in _SEARCH:
        monkeypatch.setattr(mod, "_CANDIDATE_CELLS", cand)
        monkeypatch.setattr(mod, "_CANDIDATE_PER_STRATUM", 0 if cand == 0 else 16)
        monkeypatch.setattr(mod, "_SMALL_CELLS", small)
        monkeypatch.setattr(mod, "_SMALL_COST", small)
        monkeypatch.setattr(mod, "_CANDIDATE_ROUNDS", rounds)
        monkeypatch.setattr(mod, "_BATCH_ELEMENTS", elements)
        monkeypatch.setattr(mod, "_BATCH_RADII", radii)
        monkeypatch.setattr(mod, "_SURVIVOR_SHARE", share)
        values.append([g2_distance(t, a) for t in tables for a in (0.05, 0.3)])
    assert all(v == values[0] for v in values[1:])
    assert len({abs(v) for v in values[0]}) > 10  # near and far from the boundary


@given(st.integers(0, 10_000))
@settings(max_examples=150, deadline=None)
def test_entry_ladder_rates_equal_the_cell_ladder(seed: int) -> None:
    """The rates read from the non-zero cells plus one empty cell per (stratum, x level)
    and bound are bit for bit the rates over every cell, at every radius the search can
    use: empty rows and columns, empty strata rows, ties in the margins. The cells either
    ladder names as a radius' maxima give, as candidates, those rates at that radius
    and a lower bound at every other; with the cells a check names as above a floor,
    exact rates between the floor's radius and the check's."""
    from dpcg.stats.discrete import _margins
    from dpcg.stats.g2_distance import _Candidates, _EntryLadder, _Ladder

    rng = np.random.default_rng(seed)
    k, cx, cy = int(rng.integers(1, 7)), int(rng.integers(2, 11)), int(rng.integers(2, 11))
    N = rng.integers(0, 5, (k, cx, cy)) * (rng.random((k, cx, cy)) < rng.random())
    col, row = int(rng.integers(cy)), int(rng.integers(cx))
    if seed % 3 == 0:
        N[:, :, col] = 0  # an empty column
    if seed % 4 == 0:
        N[:, row, :] = 0  # an empty row
    N[:, (row + 1) % cx, (col + 1) % cy] += 1  # every stratum observed
    n = int(N.sum())
    _, nx, ny = _margins(N)
    si, xi, yi = np.nonzero(N)
    cells = _Ladder(N, n)
    entries = _EntryLadder(si, xi, yi, N[si, xi, yi], nx, ny, n)
    ks = np.unique(np.concatenate([[0, 1, n - 1], rng.integers(0, n, 5)])).astype(np.int64)
    for got, want in zip(entries.rates(ks), cells.rates(ks), strict=True):
        assert np.array_equal(got, want)
    # one radius with the cells attaining each stratum's maxima: those cells alone, as
    # candidates, give the same rates there (and no more anywhere)
    for lad in (cells, entries):
        for kk in ks[:4]:
            U, V, up, down, _ = lad.check(int(kk))
            assert np.array_equal(U, cells.rates(np.array([kk]))[0][0])
            assert np.array_equal(V, cells.rates(np.array([kk]))[1][0])
            cand = _Candidates(cells.d, cells._g, cells.table)
            cand.add(up, down)
            assert all(np.array_equal(a[0], b) for a, b in
                       zip(cand.rates(np.array([kk])), (U, V), strict=True))
            for a, b in zip(cand.rates(ks), cells.rates(ks), strict=True):
                assert (a <= b).all()
            # in plain floats (fewer than 8 strata): the same floats at every radius
            for k2 in ks:
                plain = cand.at(int(k2))
                arrays = cand.rates(np.array([k2]))
                assert plain[0] == arrays[0][0].tolist()
                assert plain[1] == arrays[1][0].tolist()
        # a check at the largest radius: with the cells whose bound there exceeds the
        # seed candidates' rates at a smaller radius, the candidates' rates are exact on
        # every radius in between (a cell's bound only grows with the radius)
        k_hi = int(ks[-1])
        _, _, _, _, above = lad.check(k_hi)
        cand = _Candidates(cells.d, cells._g, cells.table)
        cand.add(*lad.seed())
        k_lo = int(ks[len(ks) // 2])
        floor_u, floor_v = (f[0] for f in cand.rates(np.array([k_lo])))
        cand.add(*above(floor_u, floor_v))
        between = np.unique(np.linspace(k_lo, k_hi, 7).astype(np.int64))
        for a, b in zip(cand.rates(between), cells.rates(between), strict=True):
            assert np.array_equal(a, b)
        if cells.table is not None:
            # the plain-float ladder of small tables gives the cell ladder's floats
            from dpcg.stats.g2_distance import _SmallLadder
            small = _SmallLadder(N, cells.bm, cells.cm, cells.table)
            for k2 in ks:
                plain = small.at(int(k2))
                arrays = cells.rates(np.array([k2]))
                assert plain[0] == arrays[0][0].tolist()
                assert plain[1] == arrays[1][0].tolist()


def _scan_distance(t: StrataTable, alpha: float) -> int:
    """``s(T)`` by its definition, scanning ``t = 1, 2, ..`` with the rates of radius
    ``t - 1`` over every cell (the proof note's ``m_t``, ``M_t``, with the module's
    quantile bounds and slack): the reference the searches must reproduce."""
    import math

    from scipy.special import chdtrc

    import dpcg.stats.g2_distance as mod
    from dpcg.stats.discrete import _df, _expected_from, _g2_from, _margins

    N = t.counts[t.counts.any(axis=(1, 2))]
    n = int(N.sum())
    if n == 0:
        return 0
    ns, nx, ny = _margins(N)
    df = _df(nx, ny)
    g2 = _g2_from(N, _expected_from(ns, nx, ny)) if df > 0 else 0.0
    dependent = df > 0 and float(chdtrc(df, g2)) <= alpha
    lad = mod._Ladder(N, n)
    assert lad.table is not None
    unobserved = t.n_configs > N.shape[0]
    iota_full = max(t.cx + t.cy - 3, 0)
    dfmax = float(t.n_configs) * (t.cx - 1) * (t.cy - 1)
    gmax = 2.0 * n * math.log(min(t.cx, t.cy))
    gs = mod._per_stratum_g2(N)
    for step in range(1, n + 1):
        k = step - 1
        U, V = (a[0] for a in lad.rates(np.array([k], dtype=np.int64)))
        gk = float(lad.table[k]) if unobserved else 0.0
        r = 2.0 * (max(float(U.max()), gk) + max(float(V.max()), gk))
        iota = iota_full if (lad.level_min <= k + 1 or (unobserved and k >= 1)) else 0
        if dependent:
            per = float(np.minimum(gs, (step * 2.0) * (U + V)).sum())
            q = mod._q_upper(alpha, min(df + step * iota, dfmax))
            if max(0.0, g2 - min(step * r, per)) - q <= mod.SLACK * (1.0 + g2 + q):
                return step
        else:
            q = mod._q_lower(alpha, max(df - step * iota, 1))
            if min(g2 + step * r, gmax) - q >= -mod.SLACK * (1.0 + g2 + q):
                return 1 - step
    return n if dependent else 1 - n


@pytest.mark.parametrize(("candidates", "small"), [(10**9, 0), (0, 0), (10**9, 10**9)])
@pytest.mark.parametrize("seed", range(3))
def test_search_finds_the_first_crossing(seed: int, candidates: int, small: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search returns the first ``t`` at which the ladder crosses, as a scan over
    every ``t`` finds it (small ``n``, strata, unobserved configurations, both sides of
    the decision), with and without the candidate cells, with rates in NumPy or in
    plain floats."""
    import dpcg.stats.g2_distance as mod

    monkeypatch.setattr(mod, "_CANDIDATE_CELLS", candidates)
    monkeypatch.setattr(mod, "_CANDIDATE_PER_STRATUM", 0 if candidates == 0 else 16)
    monkeypatch.setattr(mod, "_SMALL_CELLS", small)
    monkeypatch.setattr(mod, "_SMALL_COST", small)
    rng = np.random.default_rng(100 + seed)
    sides = set()
    for _ in range(30):
        cx, cy, k = int(rng.integers(2, 9)), int(rng.integers(2, 9)), int(rng.integers(1, 4))
        n = int(rng.integers(5, 400))
        x = rng.integers(0, cx, n)
        y = np.where(rng.random(n) < rng.random(), x % cy, rng.integers(0, cy, n))
        s = rng.integers(0, k, n)
        counts = _table(x, y, s, cx, cy, k).counts
        t = StrataTable(counts, cx, cy, k + int(rng.integers(0, 2)))
        for alpha in (0.05, 0.3):
            want = _scan_distance(t, alpha)
            assert g2_distance(t, alpha) == want
            sides.add(want > 0)
    assert sides == {True, False}


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_few_rows_in_a_large_table(n: int) -> None:
    """A table of thousands of cells (searched over candidate cells) with a handful
    of rows: the value is the scan's, clamped at ``n``."""
    rng = np.random.default_rng(n)
    for cx, cy, k in ((100, 100, 1), (30, 40, 5)):
        x, y, s = rng.integers(0, cx, n), rng.integers(0, cy, n), rng.integers(0, k, n)
        t = StrataTable(_table(x, y, s, cx, cy, k).counts, cx, cy, k)
        for alpha in (0.05, 0.5):
            assert g2_distance(t, alpha) == _scan_distance(t, alpha)
            assert abs(g2_distance(t, alpha)) <= n
