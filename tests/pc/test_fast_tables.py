"""Bitset tables equal the bincount tables exactly; FastG2Test == G2Test bit for bit."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.citests.nonprivate import FastChi2Test, FastG2Test, G2Test
from dpcg.data import Categorical, Dataset, Schema
from dpcg.datasets import load_network
from dpcg.pc import pc_stable
from dpcg.stats.bitset import BitsetTables, pack_column
from dpcg.stats.contingency import contingency_table

pytestmark = pytest.mark.skipif(not hasattr(np, "bitwise_count"), reason="numpy < 2.0")


def test_pack_column() -> None:
    codes = np.array([0, 2, 1, 2] + [0] * 70, dtype=np.uint8)
    b = pack_column(codes, 3)
    assert b.shape == (3, 2)
    assert int(b[2, 0]) == 0b1010
    assert int(b[1, 0]) == 0b0100
    assert int(np.bitwise_count(b).sum()) == 74


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_tables_equal_bincount_tables(data: st.DataObject) -> None:
    p = data.draw(st.integers(2, 5))
    n = data.draw(st.integers(1, 300))
    cards = tuple(data.draw(st.lists(st.integers(1, 3), min_size=p, max_size=p)))  # <= 243 cells
    # skewed codes, often leaving categories and strata unobserved
    rows = data.draw(st.lists(
        st.tuples(*[st.integers(0, c - 1) for c in cards]), min_size=n, max_size=n))
    codes = np.ascontiguousarray(np.array(rows, dtype=np.uint8).T)
    x, y = data.draw(st.lists(st.integers(0, p - 1), min_size=2, max_size=2, unique=True))
    rest = [v for v in range(p) if v not in (x, y)]
    S = tuple(data.draw(st.permutations(rest))[: data.draw(st.integers(0, len(rest)))])
    fast = BitsetTables(codes, cards)
    assert fast.usable(x, y, S)
    a = fast.table(x, y, S)
    b = contingency_table(codes, cards, x, y, S)
    assert a.n_configs == b.n_configs
    assert (a.cx, a.cy) == (b.cx, b.cy)
    np.testing.assert_array_equal(a.counts, b.counts)


@st.composite
def _query_sequences(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...],
                                               list[tuple[int, int, tuple[int, ...]]]]:
    """Codes (cardinality-1 columns, unobserved categories and strata) and a sequence
    of queries revisiting the same variables in other orders."""
    p = draw(st.integers(2, 6))
    n = draw(st.integers(0, 200))
    cards = tuple(draw(st.lists(st.integers(1, 4), min_size=p, max_size=p)))
    # each column uses a random subset of its categories, so some are never observed
    used = [draw(st.lists(st.integers(0, c - 1), min_size=1, max_size=c, unique=True))
            for c in cards]
    rows = draw(st.lists(st.tuples(*[st.sampled_from(u) for u in used]),
                         min_size=n, max_size=n))
    codes = np.zeros((p, n), dtype=np.uint8)
    if n:
        codes[:] = np.array(rows, dtype=np.uint8).T
    queries: list[tuple[int, int, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, 40))):
        again: bool = draw(st.booleans())
        if queries and again:  # the same variables again, shuffled
            x, y, S = queries[draw(st.integers(0, len(queries) - 1))]
            vs = draw(st.permutations((x, y, *S)))
            queries.append((vs[0], vs[1], tuple(vs[2:])))
            continue
        x, y = draw(st.lists(st.integers(0, p - 1), min_size=2, max_size=2, unique=True))
        rest = [v for v in range(p) if v not in (x, y)]
        k = draw(st.integers(0, len(rest)))
        queries.append((x, y, tuple(draw(st.permutations(rest))[:k])))
    return np.ascontiguousarray(codes), cards, queries


@settings(max_examples=150, deadline=None)
@given(_query_sequences(), st.sampled_from([None, 0, 3000]), st.booleans(),
       st.sampled_from(["auto", "direct", "ie"]))
def test_many_queries_on_one_instance_equal_bincount_tables(
    case: tuple[np.ndarray, tuple[int, ...], list[tuple[int, int, tuple[int, ...]]]],
    budget: int | None,
    lazy: bool,
    mode: str,
) -> None:
    codes, cards, queries = case
    if lazy:  # the column getter private statistics use on subsamples
        fast = BitsetTables(None, cards, column=lambda j: codes[j])
    else:
        fast = BitsetTables(codes, cards)
    fast.mode = mode  # the cost model's choice, or always one of the two builders
    if budget is not None:  # no caching at all / constant eviction
        fast._blocks.budget = budget
        fast._full.budget = budget
    for x, y, S in queries:
        a = fast.table(x, y, S)
        b = contingency_table(codes, cards, x, y, S)
        assert a.n_configs == b.n_configs
        assert (a.cx, a.cy) == (b.cx, b.cy)
        assert a.counts.dtype == np.int64
        np.testing.assert_array_equal(a.counts, b.counts)
        a.counts[...] = -1  # the caller's copy: the caches must not change
    for x, y, S in queries[:5]:
        np.testing.assert_array_equal(fast.table(x, y, S).counts,
                                      contingency_table(codes, cards, x, y, S).counts)
    assert fast._blocks.used <= fast._blocks.budget
    assert fast._full.used <= fast._full.budget


def test_usable_depends_on_public_quantities_only() -> None:
    cards = (4, 4, 4, 4, 4, 3, 4, 2)
    rng = np.random.default_rng(0)
    small = BitsetTables(np.zeros((8, 64), dtype=np.uint8), cards)
    big = BitsetTables(rng.integers(0, 2, size=(8, 100_000)).astype(np.uint8), cards)
    for fast in (small, big):
        assert fast.usable(0, 1, ())
        assert fast.usable(0, 1, (2,))
        assert not fast.usable(0, 1, (2, 3, 4, 5, 7))  # 6144 cells
    # a large table: bincount when cold, bitsets once its sub-tables are cached
    assert not big.usable(0, 1, (2, 3))  # 256 cells
    for v in (0, 1, 2, 3):
        rest = tuple(u for u in (0, 1, 2, 3) if u != v)
        big.table(rest[0], rest[1], rest[2:])
    assert big.usable(0, 1, (2, 3))  # 81 inner cells
    assert big.codes is not None
    np.testing.assert_array_equal(big.table(0, 1, (2, 3)).counts,
                                  contingency_table(big.codes, cards, 0, 1, (2, 3)).counts)


def test_fast_g2_identical_on_alarm_pc_run() -> None:
    net = load_network("alarm")
    ds = net.sample(20_000, 3)
    ref = pc_stable(G2Test(ds, alpha=0.05), ds.names)
    fast = pc_stable(FastG2Test(ds, alpha=0.05), ds.names)
    assert fast.tests == ref.tests  # same questions, statistics and p-values, bit for bit
    assert fast.cpdag == ref.cpdag


def test_fast_chi2_and_large_tables_fall_back() -> None:
    schema = Schema([Categorical(f"v{j}", [str(k) for k in range(8)]) for j in range(6)])
    codes = np.ascontiguousarray((np.arange(6 * 500).reshape(6, 500) * 7919 % 8)
                                 .astype(np.uint8))
    ds = Dataset.from_codes(codes, schema)
    t = FastChi2Test(ds, alpha=0.05)
    assert not BitsetTables(codes, (8,) * 6).usable(0, 1, (2, 3, 4))  # 8^5 cells: bincount
    for x, y, *S in combinations(range(6), 4):
        got = t.table(x, y, tuple(S))
        want = contingency_table(codes, ds.cardinalities, x, y, tuple(S))
        np.testing.assert_array_equal(got.counts, want.counts)
