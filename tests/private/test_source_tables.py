"""StatisticSource's bitset tables give exactly the scores of contingency_table."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest

from dpcg.citests.private import StatisticSource
from dpcg.engines.base import NumpyEngine
from dpcg.stats.contingency import contingency_table
from dpcg.stats.discrete import n_cmi
from dpcg.stats.g2_distance import g2_distance
from dpcg.stats.kendall import conditional_kendall_z


@pytest.mark.parametrize("score", ["kendall-z", "cmi", "g2-distance"])
def test_scores_match_contingency_table(score: str) -> None:
    rng = np.random.default_rng(5)
    cards = (2, 3, 4, 2, 5, 3)
    n = 700
    codes = np.stack([rng.integers(0, c, size=n) for c in cards])
    # dependence so that scores are not all ~0, and a sparse column (empty strata)
    codes[1] = (codes[0] + (rng.random(n) < 0.3)) % cards[1]
    codes[4] = np.where(rng.random(n) < 0.9, 0, codes[4])
    src = StatisticSource(codes, cards, score)
    sub = src.subset(np.arange(0, n, 3))
    checked = 0
    for x, y in itertools.combinations(range(len(cards)), 2):
        rest = [j for j in range(len(cards)) if j not in (x, y)]
        for k in range(4):
            for S in itertools.combinations(rest, k):
                for s, data in ((src, codes), (sub, codes[:, ::3])):
                    t = contingency_table(data, cards, x, y, S)
                    want = (n_cmi(t) if score == "cmi" else
                            float(g2_distance(t, 0.05)) if score == "g2-distance" else
                            abs(conditional_kendall_z(t)))
                    assert s.score(x, y, S) == want  # bit-for-bit
                    checked += 1
    assert checked > 300
    assert isinstance(src.engine, NumpyEngine)
    assert src.engine.bitsets is not None  # the bitset path was used


def test_announced_tests_are_dropped_in_memory_and_warmed_on_duckdb() -> None:
    """``expect`` costs nothing on the numpy engine; on DuckDB the first uncached score
    warms the announced tests once (the already cached ones left out), and the scores
    are those of the numpy engine."""
    rng = np.random.default_rng(3)
    cards = (2, 3, 2, 3)
    codes = np.stack([rng.integers(0, c, size=400) for c in cards])
    queries = [(0, 1, ()), (0, 1, (2,)), (0, 1, (3,)), (2, 3, (0, 1))]
    mem = StatisticSource(codes, cards)
    mem.expect(queries)
    assert mem.cache == {}
    assert mem._expected == []
    want = [mem.score(*q) for q in queries]

    pytest.importorskip("duckdb")
    from dpcg.engines.specs import duckdb_from_codes

    engine = duckdb_from_codes(codes, cards, ["a", "b", "c", "d"])
    warmed: list[list[tuple[int, int, Sequence[int]]]] = []
    real = engine.warm

    def spy(qs: Sequence[tuple[int, int, Sequence[int]]]) -> None:
        warmed.append(list(qs))
        real(qs)

    engine.warm = spy  # type: ignore[method-assign,assignment]
    src = StatisticSource.from_engine(engine)
    src.score(*queries[0])
    src.expect(queries)
    assert warmed == []  # nothing is counted when the tests are announced
    got = [src.score(*q) for q in queries]
    assert got == want
    assert warmed == [queries[1:]]  # once, without the cached one
