"""Conformance suite of the table engines: every registered engine (dpcg.engines.base)
returns exactly the tables of ``contingency_table`` -- same observed strata in the same
order, integer counts, batches in query order with repeats -- declares ``n`` and the
cardinalities it was given, and restricts itself to the rows of an ``accounting``
subsample draw (exact size ``m``). A new engine only has to register to be tested."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from accounting import Budget, InMemoryRecorder, Laplace, Session, SubsampledSparseVector
from dpcg.citests.private import (
    PrivateCITest,
    ReleasePlan,
    StatisticSource,
    source_for_dataset,
)
from dpcg.data import Categorical, Dataset, Schema
from dpcg.engines.base import (
    DEFAULT_ENGINE,
    EngineSpec,
    NumpyEngine,
    Query,
    TableEngine,
    engine_names,
    get_engine,
    register_engine,
)
from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import StrataTable, contingency_table
from dpcg.testing import check_engine

ENGINES = engine_names()
#: Engines with a JVM or a database behind them take longer per example: fewer examples.
SLOW = frozenset({"spark"})
_EXTRAS = {"duckdb": ("duckdb", "pyarrow"), "spark": ("pyspark", "pyarrow")}


def _available(name: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in _EXTRAS.get(name, ()))


def _engines(*, slow: bool | None = None) -> list[object]:
    """The registered engines as parameters (skipped without their optional extras);
    ``slow`` selects the slow or the fast ones."""
    return [pytest.param(n, marks=pytest.mark.skipif(not _available(n),
                                                     reason=f"{n}: optional extra missing"))
            for n in ENGINES if slow is None or (n in SLOW) == slow]

Case = tuple[NDArray[np.uint8], tuple[int, ...], list[Query]]


@st.composite
def _cases(draw: st.DrawFn) -> Case:
    """Codes with random cardinalities (1-category columns, unobserved categories and
    strata, skewed columns) and a batch of queries with repeats and permuted S."""
    p = draw(st.integers(2, 6))
    n = draw(st.integers(2, 400))
    cards = tuple(draw(st.lists(st.integers(1, 5), min_size=p, max_size=p)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    skew = draw(st.floats(0.0, 0.95))
    codes = np.stack([
        np.where(rng.random(n) < skew, 0, rng.integers(0, c, n)) for c in cards
    ]).astype(np.uint8)
    queries: list[Query] = []
    for _ in range(draw(st.integers(1, 12))):
        x, y = draw(st.lists(st.integers(0, p - 1), min_size=2, max_size=2, unique=True))
        rest = [v for v in range(p) if v not in (x, y)]
        S = tuple(draw(st.permutations(rest))[: draw(st.integers(0, len(rest)))])
        queries.append((x, y, S))
        if draw(st.booleans()):  # a repeat, now or later in the batch
            queries.insert(draw(st.integers(0, len(queries))), (x, y, S))
    return codes, cards, queries


def _assert_same(got: StrataTable, want: StrataTable) -> None:
    assert isinstance(got, StrataTable)
    assert (got.cx, got.cy, got.n_configs) == (want.cx, want.cy, want.n_configs)
    assert got.counts.dtype == np.int64  # integer counts, the layout of contingency_table
    assert got.counts.shape == want.counts.shape  # observed strata only
    np.testing.assert_array_equal(got.counts, want.counts)  # same strata, same order


def _build(name: str, codes: NDArray[np.uint8], cards: tuple[int, ...]) -> TableEngine:
    return get_engine(name).from_codes(codes, cards, [f"v{j}" for j in range(len(cards))])


def test_registry_lists_numpy_first() -> None:
    assert ENGINES[0] == DEFAULT_ENGINE == "numpy"
    assert get_engine("numpy").from_codes is NumpyEngine
    with pytest.raises(StatisticInputError, match="unknown table engine"):
        get_engine("no-such-engine")
    with pytest.raises(ValueError, match="already registered"):
        register_engine(EngineSpec("numpy", NumpyEngine, "again"))


@pytest.mark.parametrize("name", _engines(slow=False))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases())
def test_batches_equal_contingency_tables(name: str, case: Case) -> None:
    _check_batches(name, case)


@pytest.mark.parametrize("name", _engines(slow=True))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases())
def test_batches_equal_contingency_tables_slow(name: str, case: Case) -> None:
    _check_batches(name, case)


def _check_batches(name: str, case: Case) -> None:
    codes, cards, queries = case
    engine = _build(name, codes, cards)
    assert isinstance(engine, TableEngine)
    assert engine.name == name
    assert engine.n == codes.shape[1]
    assert engine.cardinalities == cards
    assert engine.names == tuple(f"v{j}" for j in range(len(cards)))
    got = engine.tables(queries)
    assert len(got) == len(queries)
    for (x, y, S), t in zip(queries, got, strict=True):
        _assert_same(t, contingency_table(codes, cards, x, y, S))
    # a second batch in another order (warm caches) gives the same tables
    again = engine.tables(queries[::-1])
    for (x, y, S), t in zip(queries[::-1], again, strict=True):
        _assert_same(t, contingency_table(codes, cards, x, y, S))
    assert engine.tables([]) == []


@pytest.mark.parametrize("name", _engines(slow=False))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), data=st.data())
def test_subsample_from_the_accounting_draw(name: str, case: Case,
                                            data: st.DataObject) -> None:
    _check_subsample(name, case, data)


@pytest.mark.parametrize("name", _engines(slow=True))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), data=st.data())
def test_subsample_from_the_accounting_draw_slow(name: str, case: Case,
                                                 data: st.DataObject) -> None:
    _check_subsample(name, case, data)


def _check_subsample(name: str, case: Case, data: st.DataObject) -> None:
    codes, cards, queries = case
    n = codes.shape[1]
    m = data.draw(st.integers(1, n - 1))
    sieve = SubsampledSparseVector(n=n, m=m, threshold=0.0, sensitivity=1.0, epsilon=1.0)
    rows = sieve.draw_subsample(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))
    engine = _build(name, codes, cards)
    if data.draw(st.booleans()):
        engine.tables(queries[:1])  # the parent's caches must not leak into the subset
    sub = engine.subset(rows)
    assert sub.n == m == len(rows)  # exact size m
    assert sub.cardinalities == cards  # declared, not observed
    assert sub.names == engine.names
    part = codes[:, rows]
    for (x, y, S), t in zip(queries, sub.tables(queries), strict=True):
        _assert_same(t, contingency_table(part, cards, x, y, S))
    # a subset of a subset: rows index the subset's rows
    inner = np.arange(0, m, 2, dtype=np.int64)
    sub2 = sub.subset(inner)
    assert sub2.n == len(inner)
    for (x, y, S), t in zip(queries, sub2.tables(queries), strict=True):
        _assert_same(t, contingency_table(part[:, inner], cards, x, y, S))


@pytest.mark.parametrize("name", _engines())
def test_subsample_rows_are_the_sieves_own(name: str) -> None:
    """Through a real session: the rows the engine counts on are the indices the
    ``accounting`` primitive drew (``SparseVectorRun.indices``), nothing else."""
    rng = np.random.default_rng(3)
    cards = (2, 3, 2, 4)
    codes = np.stack([rng.integers(0, c, 500) for c in cards]).astype(np.uint8)
    engine = _build(name, codes, cards)
    budget = Budget(5.0)
    session = Session(budget, recorder=InMemoryRecorder(budget), seed=11)
    run = session.start(SubsampledSparseVector(n=500, m=120, threshold=0.0, sensitivity=1.0,
                                               epsilon=1.0), purpose="sieve")
    seen: list[NDArray[np.int64]] = []

    def query(rows: NDArray[np.int64]) -> float:
        seen.append(rows)
        t = engine.subset(rows).tables([(0, 1, (2,))])[0]
        return float(t.counts.sum())

    run.test(query)
    assert run.indices is not None
    assert len(seen) == 1
    assert seen[0] is run.indices
    assert len(seen[0]) == 120
    want = contingency_table(codes[:, run.indices], cards, 0, 1, (2,))
    _assert_same(engine.subset(run.indices).tables([(0, 1, (2,))])[0], want)


SCORES = ("kendall-split", "kendall-z", "kendall-p", "cmi", "g2-distance")


@pytest.mark.parametrize("name", _engines())
@pytest.mark.parametrize("score", SCORES)
def test_sources_on_every_engine_agree(name: str, score: str) -> None:
    """A StatisticSource on any engine gives the numpy source's scores bit for bit,
    with prefetch (one batch) or one query at a time."""
    rng = np.random.default_rng(8)
    cards = (2, 3, 4, 2, 3)
    codes = np.stack([rng.integers(0, c, 300) for c in cards]).astype(np.uint8)
    codes[1] = (codes[0] + (rng.random(300) < 0.3)) % 3
    ref = StatisticSource(codes, cards, score)
    src = StatisticSource.from_engine(_build(name, codes, cards), score)
    batch = StatisticSource.from_engine(_build(name, codes, cards), score)
    queries: list[Query] = [(0, 1, ()), (0, 1, (2,)), (2, 3, (0, 4)), (0, 1, ()), (1, 4, (3,))]
    batch.prefetch(queries)
    for x, y, S in queries:
        want = ref.score(x, y, S)
        assert src.score(x, y, S) == want
        assert batch.cache[(x, y, S)] == want
        assert src.threshold(x, y, S) == ref.threshold(x, y, S)
        assert src.sensitivity(pair=(x, y)) == ref.sensitivity(pair=(x, y))
    rows = np.arange(0, 300, 3, dtype=np.int64)
    assert src.subset(rows).score(0, 1, (2,)) == ref.subset(rows).score(0, 1, (2,))


def test_source_for_dataset_takes_an_engine_or_a_dataset() -> None:
    schema = Schema([Categorical(f"v{j}", ["a", "b", "c"]) for j in range(3)])
    codes = (np.arange(3 * 90).reshape(3, 90) * 7 % 3).astype(np.uint8)
    ds = Dataset.from_codes(codes, schema)
    a = source_for_dataset(ds, "kendall-z")
    b = source_for_dataset(NumpyEngine(ds.codes, (3, 3, 3), ds.names), "kendall-z")
    assert isinstance(a.engine, NumpyEngine)
    assert a.engine.names == ds.names
    assert a.score(0, 1, (2,)) == b.score(0, 1, (2,))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: NumpyEngine(np.zeros((2, 5), dtype=np.float64), (2, 2)), "integer"),
        (lambda: NumpyEngine(np.zeros(5, dtype=np.uint8), (2,)), r"\(p, n\)"),
        (lambda: NumpyEngine(np.zeros((2, 5), dtype=np.uint8), (2,)), "cardinalities"),
        (lambda: NumpyEngine(np.zeros((2, 5), dtype=np.uint8), (2, 2), ["a"]), "names"),
    ],
)
def test_numpy_engine_rejects_malformed_input(make: Callable[[], NumpyEngine],
                                              match: str) -> None:
    with pytest.raises(StatisticInputError, match=match):
        make()


class _CountingEngine(NumpyEngine):
    """The numpy engine, counting its batch calls."""

    calls: list[int]

    def tables(self, queries: Sequence[Query]) -> list[StrataTable]:
        self.calls.append(len(queries))
        return super().tables(queries)


def test_a_laplace_round_is_one_engine_call_after_admission() -> None:
    rng = np.random.default_rng(4)
    cards = (2, 3, 2, 3)
    codes = np.stack([rng.integers(0, c, 200) for c in cards]).astype(np.uint8)
    engine = _CountingEngine(codes, cards)
    engine.calls = []
    src = StatisticSource.from_engine(engine, "kendall-z")
    budget = Budget(1.0)
    recorder = InMemoryRecorder(budget)
    session = Session(budget, recorder=recorder, seed=2)
    tester = PrivateCITest(src, session, ReleasePlan("laplace", epsilon=0.3))
    round_ = [(0, 1, ()), (0, 2, (1,)), (0, 1, ()), (2, 3, (0, 1))]
    out = tester.test_many(round_)
    assert len(out) == 3  # 3 x 0.3 fit in 1.0: the admitted prefix
    assert engine.calls == [3]  # one call, the round's distinct queries (all of it)
    ref = StatisticSource(codes, cards, "kendall-z")
    for (x, y, S), r in zip(round_, out, strict=False):
        assert src.cache[(x, y, S)] == ref.score(x, y, S)
        assert r.statistic is not None
    assert isinstance(tester.mechanism(0, 1), Laplace)


@pytest.mark.parametrize(("card", "n", "width"), [
    (5, 5_000, 4),    # few configurations: the dense bincount
    (12, 3_000, 4),   # many unobserved configurations: the sorted keys
    (100, 300, 8),    # 100^8 configurations x 100^2 cells overflow one int64 key
])
def test_numpy_engine_reuses_a_conditioning_prefix_exactly(card: int, n: int,
                                                            width: int) -> None:
    """PC-stable asks runs of tests whose sets share ``S[:-1]``: the engine keeps that
    prefix's stratum index and extends it by the last column. Every table equals
    :func:`contingency_table`'s, whether the prefix was cached, replaced, or comes back
    after another one (on columns too wide for the bitset tables)."""
    rng = np.random.default_rng(card)
    p = width + 3
    cards = tuple([card] * p)
    codes = rng.integers(0, card, size=(p, n)).astype(np.uint8)
    codes[1] = (codes[0] + (rng.random(n) < 0.3)) % card  # a dependent pair
    engine = NumpyEngine(codes, cards)
    rest = list(range(2, p))
    queries: list[Query] = []
    for head in (tuple(rest[:width - 1]), tuple(rest[1:width]), tuple(rest[:width - 1])):
        for last in (v for v in rest if v not in head):
            queries.append((0, 1, (*head, last)))
            queries.append((1, 0, (*head, last)))  # x and y swapped, same prefix
    queries.append((0, 1, tuple(rest[:2])))  # a short set between long ones
    queries.append((0, 1, (*rest[:width - 1], rest[-1])))
    for x, y, S in queries:
        assert not engine.bitsets or not engine.bitsets.usable(x, y, S)
        _assert_same(engine.table(x, y, S), contingency_table(codes, cards, x, y, S))


def test_a_private_test_refuses_a_source_under_another_relation() -> None:
    """Replace-one sessions charge a release for its bound as a replace-one bound, so a
    source whose bounds are add/remove ones is refused before anything is released."""
    from dpcg.errors import CITestError

    rng = np.random.default_rng(5)
    codes = np.stack([rng.integers(0, 2, 100) for _ in range(3)]).astype(np.uint8)
    src = StatisticSource(codes, (2, 2, 2), "kendall-split", relation="add-remove")
    budget = Budget(1.0)
    recorder = InMemoryRecorder(budget)
    session = Session(budget, recorder=recorder, seed=2)
    with pytest.raises(CITestError, match="add-remove"):
        PrivateCITest(src, session, ReleasePlan("laplace", epsilon=0.3))
    assert session.spent().epsilon in (None, 0)


@pytest.mark.parametrize("name", _engines(slow=False))
def test_check_engine(name: str) -> None:
    """The exported check (:func:`dpcg.testing.check_engine`) on every registered engine:
    malformed codes refused, numpy's tables bit for bit on random schemas and queries
    (subsets, warm), a private run on the engine equal to the in-memory one."""
    check_engine(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", _engines(slow=True))
def test_check_engine_slow(name: str) -> None:
    check_engine(name)
