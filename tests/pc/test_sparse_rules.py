"""The G-test's sparse-table rules (issue 59): selectable, default unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import chi2

from dpcg.citests.nonprivate import FastG2Test, G2Test
from dpcg.datasets import load_network
from dpcg.errors import CITestError
from dpcg.pc.engine import pc_stable
from dpcg.stats.contingency import contingency_table, table_from_codes
from dpcg.stats.discrete import (
    SPARSE_RULES,
    g2_statistic,
    g2_test,
    g2_test_rule,
    structural_df,
)


def _codes(n: int, cards: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, c, n) for c in cards])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n", [12, 60, 2_000])
def test_rules_by_hand(seed: int, n: int) -> None:
    cards = (3, 4, 3, 5, 2)
    codes = _codes(n, cards, seed)
    t = contingency_table(codes, cards, 0, 1, (2, 3, 4))
    stat = g2_statistic(t)
    declared = 2 * 3 * (3 * 5 * 2)
    assert structural_df(t) == declared
    dense = np.zeros((t.n_configs, 3, 4), dtype=np.int64)
    s = (codes[2] * 5 + codes[3]) * 2 + codes[4]
    np.add.at(dense, (s, codes[0], codes[1]), 1)
    zeros = int((dense == 0).sum())
    assert g2_test_rule(t, "causal-learn") == g2_test(t)
    r = g2_test_rule(t, "structural")
    assert r.df == declared
    assert r.statistic == stat
    assert r.pvalue == pytest.approx(chi2.sf(stat, declared), rel=1e-9, abs=1e-300)
    r = g2_test_rule(t, "pcalg")
    if n < 10 * declared:
        assert r.pvalue == 1.0
    else:
        assert r.df == declared
    r = g2_test_rule(t, "pcalg-adaptdf")
    if n >= 10 * declared:
        assert r.df == max(declared - zeros, 1)
    else:
        assert r.pvalue == 1.0
    r = g2_test_rule(t, "adjusted-min5")
    assert r.pvalue == 1.0 if n < 5 * declared else r == g2_test(t)


def test_zero_cells_of_a_tiny_table() -> None:
    x = np.array([0] * 10 + [1] * 10)
    t = table_from_codes(x, x.copy(), None, 2, 2)
    assert g2_test_rule(t, "structural").df == 1
    # two empty cells of four: 1 - 2 -> at least 1
    assert g2_test_rule(t, "pcalg-adaptdf").df == 1
    assert g2_test_rule(t, "pcalg-adaptdf").pvalue < 1e-3  # n = 20 >= 10 * 1: tested
    assert g2_test_rule(t, "adjusted-min5").df == 1
    with pytest.raises(ValueError, match="sparse rule"):
        g2_test_rule(t, "tetrad")


@pytest.fixture(scope="module")
def data() -> Any:
    return load_network("random:nodes=12,max_parents=3,card=2-4,seed=8,conc=0.5").sample(
        800, 2)


def test_default_rule_is_unchanged(data: Any) -> None:
    names = tuple(data.schema.names)
    a = pc_stable(FastG2Test(data), names)
    b = pc_stable(FastG2Test(data, sparse_rule="causal-learn"), names)
    assert [(t.S, t.statistic, t.pvalue) for t in a.tests] == \
        [(t.S, t.statistic, t.pvalue) for t in b.tests]
    with pytest.raises(CITestError, match="sparse_rule"):
        G2Test(data, sparse_rule="nope")


@pytest.mark.parametrize("rule", sorted(SPARSE_RULES))
def test_every_rule_runs_pc(data: Any, rule: str) -> None:
    names = tuple(data.schema.names)
    res = pc_stable(G2Test(data, sparse_rule=rule), names)
    assert res.n_tests > 0
    min_rows = SPARSE_RULES[rule][1]
    cards = data.cardinalities
    forced = 0
    for t in res.tests:
        declared = (cards[t.x] - 1) * (cards[t.y] - 1) * int(np.prod([cards[v] for v in t.S]))
        if data.n < min_rows * declared:
            assert t.pvalue == 1.0  # too few rows: independence assumed
            assert t.independent
            forced += 1
    if rule in ("pcalg", "pcalg-adaptdf"):
        assert forced > 0  # 800 rows: the deeper tables are below 10 rows per df


# ---- the front door: `--sparse-rule` (a `g2` test option) --------------------------


@pytest.mark.parametrize("rule", ["pcalg", "structural"])
def test_front_door_selects_the_rule(data: Any, rule: str) -> None:
    import dpcg

    names = tuple(data.schema.names)
    direct = pc_stable(FastG2Test(data, sparse_rule=rule), names)
    res = dpcg.discover(data, algorithm="pc", test="g2", sparse_rule=rule, workers=1)
    assert res.pc is not None
    assert [(t.x, t.y, t.S, t.statistic, t.pvalue) for t in res.pc.tests] == \
        [(t.x, t.y, t.S, t.statistic, t.pvalue) for t in direct.tests]
    default = dpcg.discover(data, algorithm="pc", test="g2", workers=1)
    assert default.pc is not None
    assert [t.pvalue for t in default.pc.tests] != [t.pvalue for t in res.pc.tests]


def test_front_door_on_duckdb_applies_the_rule(data: Any, tmp_path: Any) -> None:
    pytest.importorskip("duckdb")
    import dpcg

    names = tuple(data.schema.names)
    direct = pc_stable(FastG2Test(data, sparse_rule="pcalg"), names)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    codes = np.asarray(data.codes)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({c.name: pa.array(np.asarray(c.categories)[codes[j]])
                             for j, c in enumerate(data.schema.columns)}), path)
    res = dpcg.discover(str(path), schema=data.schema, algorithm="pc", test="g2",
                        engine="duckdb", sparse_rule="pcalg", workers=1)
    assert res.pc is not None
    assert {(t.x, t.y, t.S, t.pvalue) for t in res.pc.tests} == \
        {(t.x, t.y, t.S, t.pvalue) for t in direct.tests}


def test_front_door_refuses_a_bad_rule(data: Any) -> None:
    import dpcg

    with pytest.raises(CITestError, match="sparse_rule"):
        dpcg.discover(data, algorithm="pc", test="g2", sparse_rule="tetrad")
    with pytest.raises(dpcg.errors.DpcgError, match="sparse_rule"):
        dpcg.discover(data, algorithm="pc", test="chi2", sparse_rule="pcalg")


def test_marginal_pc_refuses_the_rule_and_runs_without_it() -> None:
    import dpcg

    d = load_network("asia").sample(2000, 1)
    with pytest.raises(dpcg.errors.AlgorithmError, match="sparse_rule"):
        dpcg.discover(d, algorithm="marginal-pc", epsilon=1.0, ledger=dpcg.NO_LEDGER,
                      sparse_rule="pcalg", noise_seed=1)
    res = dpcg.discover(d, algorithm="marginal-pc", epsilon=1.0, ledger=dpcg.NO_LEDGER,
                        noise_seed=1)
    assert res.pc is not None
    assert res.pc.n_tests > 0
