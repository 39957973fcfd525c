"""StatisticSource's bitset tables give exactly the scores of contingency_table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpcg.citests.private import StatisticSource
from dpcg.stats.contingency import contingency_table
from dpcg.stats.discrete import n_cmi
from dpcg.stats.engine import NumpyEngine
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
