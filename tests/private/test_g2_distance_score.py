"""The ``g2-distance`` score of the private family: the G-test's decisions without
noise, sensitivity 1 (replace-one only), threshold 1/2."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import dpcg
from accounting.relations import Relation
from dpcg.citests.nonprivate import G2Test
from dpcg.citests.private import SCORES, StatisticSource, ThresholdCITest
from dpcg.errors import CITestError
from dpcg.pc.engine import pc_stable
from dpcg.stats.contingency import contingency_table
from dpcg.stats.g2_distance import g2_distance
from dpcg.stats.scores import get_score
from tests.engine_room import private_run


def _codes(seed: int, n: int = 600) -> tuple[np.ndarray[Any, Any], tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    cards = (2, 3, 4, 3, 2, 5)
    codes = np.stack([rng.integers(0, c, size=n) for c in cards])
    codes[1] = np.where(rng.random(n) < 0.25, codes[0] % 3, codes[1])
    codes[2] = np.where(rng.random(n) < 0.2, codes[1], codes[2])
    codes[3] = np.where(rng.random(n) < 0.15, codes[2] % 3, codes[3])
    codes[5] = np.where(rng.random(n) < 0.8, 0, codes[5])  # sparse: unobserved strata
    return codes, cards


def test_registered_with_the_proven_bound() -> None:
    assert "g2-distance" in SCORES
    score = get_score("g2-distance")
    assert score.spec == "g2-decision-distance"
    assert score.proof_note == "docs/privacy/statistics-g2-distance.md"
    src = StatisticSource(*_codes(1), "g2-distance")
    for m in (50, 600):
        assert src.sensitivity(m) == 1.0
    assert src.sensitivity(pair=(2, 5)) == 1.0
    assert src.scale(0, 5) == 1.0
    assert src.threshold(0, 1, (2, 3)) == 0.5


def test_add_remove_is_refused_before_anything_runs() -> None:
    with pytest.raises(CITestError, match=r"g2-distance.*add"):
        StatisticSource(*_codes(1), "g2-distance", relation=Relation.ADD_REMOVE)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_decisions_are_the_g_tests(seed: int, alpha: float) -> None:
    """With the noise off, every decision is the G-test's at the same alpha (the
    score's value is the distance on the table with the declared configurations)."""
    codes, cards = _codes(seed)
    src = StatisticSource(codes, cards, "g2-distance", alpha=alpha)
    exact = ThresholdCITest(src)
    g2 = G2Test(SimpleNamespace(codes=codes, cardinalities=cards), alpha=alpha)
    dependent = independent = 0
    for x, y in itertools.combinations(range(len(cards)), 2):
        rest = [j for j in range(len(cards)) if j not in (x, y)]
        for k in range(3):
            for S in itertools.combinations(rest, k):
                want = g2.test(x, y, S).independent
                assert exact.test(x, y, S).independent == want
                v = src.score(x, y, S)
                assert v == g2_distance(contingency_table(codes, cards, x, y, S), alpha)
                assert (v > 0.5) == (not want)
                dependent += not want
                independent += want
    assert dependent > 20
    assert independent > 20


def test_pc_with_the_score_is_g2_pc(asia: Any) -> None:
    """Non-private PC with ``g2-distance`` returns G^2 PC's graph and separating sets."""
    ref = pc_stable(G2Test(asia), tuple(asia.names))
    got = dpcg.discover(asia, test="g2-distance").pc
    assert got.cpdag.to_json() == ref.cpdag.to_json()
    assert got.sepsets == ref.sepsets


def test_a_private_run_releases_with_sensitivity_one(asia: Any, tmp_path: Path) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "runs.db"
    res = private_run(asia, "laplace-pc", "g2-distance", epsilon=1.0, delta=1e-6,
                      ledger=path, dataset_id="asia-4k", seed=3)
    assert res.test == "g2-distance"
    assert res.n_tests > 0
    led = Ledger.open(path)
    assert led.verify().ok
    assert res.ledger is not None
    entries = [e for e in led.entries()
               if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"]
    assert len(entries) == sum(res.mechanisms.values()) > 0
    tests = [e for e in entries if re.search(r"\d+ _\|\|_ \d+", e["purpose"])]
    assert tests
    assert all(e["sensitivity"] == 1.0 for e in tests)
