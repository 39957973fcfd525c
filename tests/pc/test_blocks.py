"""Tests that share a conditioning set's encoding and counting (issue 59 item 3):
:class:`dpcg.stats.contingency.PairTables` gives the tables of ``contingency_table``
exactly, ``FastG2Test.test_block`` the results of ``test`` bit for bit, and the engine's
block path (serial and forked) the serial run's records, sepsets and graph."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.citests.base import CIResult
from dpcg.citests.nonprivate import FastChi2Test, FastG2Test
from dpcg.datasets import load_network
from dpcg.pc.engine import BlockEdgeTester, PCResult, pc_stable
from dpcg.pc.limits import RunLimits
from dpcg.stats.contingency import (
    PAIR_TABLE_CELLS,
    PairTables,
    StrataTable,
    contingency_table,
    stack_observed,
    strata_margins,
)
from dpcg.stats.discrete import g2_test, g2_tests_stacked

HUB = "random:nodes=18,max_parents=3,card=2-5,seed=1,conc=0.6,shape=scale-free,exponent=1"


def _same_table(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert (a.cx, a.cy, a.n_configs) == (b.cx, b.cy, b.n_configs)
    assert a.counts.dtype == b.counts.dtype == np.int64
    assert a.counts.shape == b.counts.shape
    assert a.counts.flags.c_contiguous
    np.testing.assert_array_equal(a.counts, b.counts)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_pair_tables_equal_contingency_tables(data: st.DataObject) -> None:
    p = data.draw(st.integers(3, 7))
    n = data.draw(st.integers(1, 400))
    cards = tuple(data.draw(st.lists(st.integers(1, 5), min_size=p, max_size=p)))
    skew = data.draw(st.booleans())  # unobserved categories and strata
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    cols = [rng.integers(0, max(1, c // 2) if skew else c, n) for c in cards]
    codes = np.ascontiguousarray(np.array(cols, dtype=np.uint8))
    x, y = sorted(data.draw(st.lists(st.integers(0, p - 1), min_size=2, max_size=2,
                                     unique=True)))
    rest = [v for v in range(p) if v not in (x, y)]
    level = data.draw(st.integers(0, min(4, len(rest))))
    sets = list(combinations(rest, level))  # lexicographic: runs with a common prefix
    pt = PairTables(codes, cards, x, y)
    got = pt.tables(sets)
    assert len(got) == len(sets)
    for S, t in zip(sets, got, strict=True):
        want = contingency_table(codes, cards, x, y, S)
        assert t is not None  # <= 5^6 cells
        _same_table(t, want)
    # one at a time (the prefix cache) and lazily in a different grouping
    for S in reversed(sets):
        t1 = pt.table(S)
        assert t1 is not None
        _same_table(t1, contingency_table(codes, cards, x, y, S))


def test_pair_tables_refuse_tables_past_their_size() -> None:
    rng = np.random.default_rng(0)
    cards = (5,) * 9
    codes = rng.integers(0, 5, (9, 200)).astype(np.uint8)
    pt = PairTables(codes, cards, 0, 1)
    S = (2, 3, 4, 5, 6, 7)  # 5^6 * 25 cells > PAIR_TABLE_CELLS
    assert PAIR_TABLE_CELLS < 5**6 * 25
    assert pt.table(S) is None
    small = (2, 3, 4)
    out = pt.tables([S, small, (2, 3, 5)])
    assert out[0] is None
    assert out[1] is not None
    assert out[2] is not None
    _same_table(out[1], contingency_table(codes, cards, 0, 1, small))
    _same_table(out[2], contingency_table(codes, cards, 0, 1, (2, 3, 5)))


def test_joints_serve_several_sets_with_one_count(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    cards = (3, 2, 4, 2, 3, 2, 5)
    codes = np.array([rng.integers(0, c, 1000) for c in cards], dtype=np.uint8)
    calls = []
    real = np.bincount

    def counting(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(np, "bincount", counting)
    sets = [(2, 3), (2, 4), (2, 5), (2, 6)]  # one prefix, four lasts: 3*2*(2*3*2*5) cells
    out = PairTables(codes, cards, 0, 1).tables(sets)
    assert len(calls) == 1
    for S, t in zip(sets, out, strict=True):
        _same_table(t, contingency_table(codes, cards, 0, 1, S))


@pytest.fixture(scope="module")
def hub() -> Any:
    return load_network(HUB).sample(3_000, 5)


@pytest.mark.parametrize("cls", [FastG2Test, FastChi2Test])
def test_test_block_gives_test_results_bit_for_bit(hub: Any, cls: type[FastG2Test]) -> None:
    p = len(hub.schema.names)
    tester = cls(hub)
    plain = cls(hub)
    for x, y in [(0, 1), (2, 7), (3, p - 1)]:
        rest = [v for v in range(p) if v not in (x, y)][:9]
        for level in range(4):
            sets = list(combinations(rest, level))[:70]
            got = list(tester.test_block(x, y, sets))
            want = [plain.test(x, y, S) for S in sets]
            assert got == want


def _key(res: PCResult) -> list[tuple[Any, ...]]:
    return [(t.level, t.x, t.y, t.S, t.statistic, t.pvalue, t.independent)
            for t in res.tests]


def _plain(data: Any) -> FastG2Test:
    t = FastG2Test(data)
    t.parallel_safe = False  # the engine then asks one test at a time
    return t


@pytest.mark.parametrize("workers", [1, 2])
def test_block_runs_give_the_serial_run(hub: Any, workers: int) -> None:
    names = tuple(hub.schema.names)
    plain = pc_stable(_plain(hub), names)
    blocks = pc_stable(FastG2Test(hub), names, workers=workers)
    assert plain.n_tests > 500
    assert max(len(t.S) for t in plain.tests) >= 3  # deep levels with joints
    assert _key(blocks) == _key(plain)
    assert blocks.sepsets == plain.sepsets
    assert blocks.adjacency == plain.adjacency
    assert blocks.cpdag.to_json() == plain.cpdag.to_json()
    assert blocks.levels_completed == plain.levels_completed


def test_block_runs_on_a_bundled_network() -> None:
    data = load_network("alarm").sample(2_000, 0)
    names = tuple(data.schema.names)
    assert _key(pc_stable(FastG2Test(data), names)) == _key(pc_stable(_plain(data), names))


@pytest.mark.parametrize("k", [1, 77, 400])
def test_a_test_limit_stops_a_block_run_at_the_serial_prefix(hub: Any, k: int) -> None:
    names = tuple(hub.schema.names)
    plain = pc_stable(_plain(hub), names, limits=RunLimits(max_tests=k))
    blocks = pc_stable(FastG2Test(hub), names, limits=RunLimits(max_tests=k))
    assert blocks.stop_reason == plain.stop_reason == "max_tests"
    assert _key(blocks) == _key(plain)
    assert blocks.adjacency == plain.adjacency


class _Recording:
    """A block-capable tester that is not side-effect free: every answer is a release."""

    def __init__(self, inner: FastG2Test, parallel_safe: bool) -> None:
        self.inner = inner
        self.parallel_safe = parallel_safe
        self.asked: list[tuple[int, int, tuple[int, ...]]] = []

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        self.asked.append((x, y, S))
        return self.inner.test(x, y, S)

    def test_block(self, x: int, y: int, sets: Sequence[tuple[int, ...]]
                   ) -> Iterator[CIResult]:
        for S in sets:  # computes every set of the block, as a batched tester would
            self.asked.append((x, y, S))
        return iter([self.inner.test(x, y, S) for S in sets])


def test_blocks_only_for_side_effect_free_testers(hub: Any) -> None:
    names = tuple(hub.schema.names)
    private = _Recording(FastG2Test(hub), parallel_safe=False)
    assert isinstance(private, BlockEdgeTester)
    res = pc_stable(private, names)
    # one test at a time: exactly the recorded tests were asked, nothing speculative
    assert private.asked == [(t.x, t.y, t.S) for t in res.tests]
    free = _Recording(FastG2Test(hub), parallel_safe=True)
    res2 = pc_stable(free, names)
    assert _key(res2) == _key(res)
    assert len(free.asked) > len(res2.tests)  # blocks were asked (beyond separating sets)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_stacked_g_tests_are_g2_test_bit_for_bit(data: st.DataObject) -> None:
    """Tables stacked by ``stack_observed`` (observed strata only; a one-configuration
    table keeps its stratum) and tested by ``g2_tests_stacked``: every table's layout
    is ``contingency_table``'s and its statistic, df and p-value are ``g2_test``'s, bit
    for bit (empty cells, empty strata, all-positive tables, tables with no row)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    cx = data.draw(st.integers(1, 5))
    cy = data.draw(st.integers(1, 12))
    dense: list[tuple[Any, int]] = []
    for _ in range(data.draw(st.integers(1, 7))):
        configs = data.draw(st.sampled_from([1, 2, 3, 6, 25]))
        kind = data.draw(st.sampled_from(["sparse", "full", "empty", "skewed"]))
        shape = (configs, cx, cy)
        if kind == "full":
            c = rng.integers(1, 400, shape)
        elif kind == "empty":
            c = np.zeros(shape, dtype=np.int64)
        elif kind == "skewed":
            c = rng.integers(0, 3, shape) * rng.integers(0, 2, (configs, 1, 1)) * 1000
        else:
            c = rng.integers(0, 30, shape) * (rng.random(shape) < 0.5)
        dense.append((c.astype(np.int64).reshape(-1), configs))
    st_ = stack_observed(dense, cx, cy)
    got = g2_tests_stacked(st_)
    assert len(got) == len(dense)
    assert st_.counts.flags.c_contiguous
    for t, ((flat, configs), r) in enumerate(zip(dense, got, strict=True)):
        full = flat.reshape(configs, cx, cy)
        keep = full[full.any(axis=(1, 2))] if configs > 1 else full
        mine = st_.counts[st_.bounds[t]:st_.bounds[t + 1]]
        np.testing.assert_array_equal(mine, keep)
        want = g2_test(StrataTable(np.ascontiguousarray(keep), cx, cy, configs))
        assert (r.statistic, r.df, r.pvalue) == (want.statistic, want.df, want.pvalue)
        assert type(r.statistic) is float
        assert type(r.df) is int
    ns, nx, ny = strata_margins(st_.counts)
    np.testing.assert_array_equal(ns, st_.counts.sum(axis=(1, 2)))
    np.testing.assert_array_equal(nx, st_.counts.sum(axis=2))
    np.testing.assert_array_equal(ny, st_.counts.sum(axis=1))


def test_no_stacked_tables() -> None:
    empty = stack_observed([], 2, 3)
    assert g2_tests_stacked(empty) == []
