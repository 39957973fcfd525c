"""Marginal-PC's level 0 by a private selection (``level0 = "select"``, issue 57): the
selection is a charged top-k on the per-test family's utilities, the kept pairs' tables
are one joint Gaussian release, the plan's costs fit the budget, and bad options are
refused before anything is charged."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.ledger import Ledger
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.private.contract import RunSettings
from dpcg.private.ledger import LedgerTarget
from dpcg.private.marginal_pc import (
    ALGORITHM,
    LEVEL0_SHARE,
    MarginalPCParams,
    MarginalSource,
    level0_mode,
    make_plan,
)
from dpcg.private.run import discover_private


def _asia(n: int = 20_000) -> Dataset:
    return load_network("asia").sample(n, 1)


def _entries(path: Path, run_id: str) -> list[dict[str, Any]]:
    led = Ledger.open(path)
    assert led.verify().ok
    return [e for e in led.entries()
            if e.get("run_id") == run_id and e["kind"] == "mechanism"]


def test_pairs_selection_is_one_top_k_then_one_joint_table_release(tmp_path: Path) -> None:
    """asia (8 nodes, 28 pairs), 2 kept per node: one top-16 release, then level 0's 16
    kept pairs' 2-way tables as one Gaussian release; the other 12 pairs are removed
    with the empty set without a table (their records carry no statistic)."""
    path = tmp_path / "runs.db"
    res = discover_private(_asia(), "marginal-pc", epsilon=2.0, delta=1e-6,
                           noise_seed=3, ledger=LedgerTarget(path, "asia"),
                           params=MarginalPCParams(level0="select", select_by="pairs",
                                                   select_per_node=2))
    plan = res.plan
    assert plan["level0"] == "select"
    assert plan["select_k"] == plan["select_steps"] == 16
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    assert entries[0]["mechanism"] == "top-k"
    assert entries[0]["params"]["k"] == 16
    assert entries[0]["params"]["epsilon"] == plan["select_epsilon"]
    assert all(e["mechanism"] == "gaussian" for e in entries[1:])
    level0 = plan["used_levels"][0]
    assert level0["selected"] == level0["tables"] == 16
    assert "16 tables" in entries[1]["purpose"]
    assert len(entries) == plan["used_releases"]
    # the declared costs: the selection within its share, everything within the budget
    costs = [Fraction(e["cost"]["rho"]) for e in entries]
    assert costs[0] <= Fraction(plan["select_share"]) * Fraction(plan["rho"])
    assert sum(costs) <= Fraction(res.spent["exact"]["rho"]) <= Fraction(plan["rho"])
    unselected = [t for t in res.pc.tests
                  if t.level == 0 and t.statistic is None]
    assert len(unselected) == 28 - 16
    assert all(t.independent for t in unselected)
    assert len([t for t in res.pc.tests if t.level == 0 and t.statistic is not None]) == 16


def test_nodes_selection_is_one_top_k_per_node_with_more_pairs_than_k(tmp_path: Path
                                                                      ) -> None:
    path = tmp_path / "runs.db"
    res = discover_private(_asia(), "marginal-pc", epsilon=2.0, delta=1e-6,
                           noise_seed=4, ledger=LedgerTarget(path, "asia"),
                           params=MarginalPCParams(level0="select", select_by="nodes",
                                                   select_per_node=3))
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    tops = [e for e in entries if e["mechanism"] == "top-k"]
    assert len(tops) == 8  # every node has 7 > 3 pairs
    assert all(e["params"]["k"] == 3 for e in tops)
    assert entries[:8] == tops  # the selection comes first
    level0 = res.plan["used_levels"][0]
    assert 12 <= level0["selected"] == level0["tables"] <= 24  # kept by either endpoint
    assert res.plan["used_releases"] == len(entries)


def test_without_kept_tables_level_0_releases_no_table(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    res = discover_private(_asia(), "marginal-pc", epsilon=2.0, delta=1e-6,
                           noise_seed=5, ledger=LedgerTarget(path, "asia"),
                           params=MarginalPCParams(level0="select", select_by="pairs",
                                                   select_per_node=2, kept_tables=0))
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    assert entries[0]["mechanism"] == "top-k"
    assert [e for e in entries if "level-0" in e["purpose"]] == []
    level0 = res.plan["used_levels"][0]
    assert level0["tables"] == 0
    assert level0["tests"] == 0
    # the kept pairs are recorded dependent (no statistic), the others removed
    rec0 = [t for t in res.pc.tests if t.level == 0]
    assert len(rec0) == 28
    assert sum(not t.independent for t in rec0) == 16


def test_selection_seeded_runs_repeat() -> None:
    params = MarginalPCParams(level0="select", select_by="nodes", select_per_node=2)
    a = discover_private(_asia(5_000), "marginal-pc", epsilon=1.0, noise_seed=9,
                         params=params)
    b = discover_private(_asia(5_000), "marginal-pc", epsilon=1.0, noise_seed=9,
                         params=params)
    assert a.cpdag.to_json() == b.cpdag.to_json()
    assert a.plan["used_levels"] == b.plan["used_levels"]


def _source(p: int, n: int, card: int = 3) -> MarginalSource:
    codes = np.zeros((p, 8), dtype=np.int64)
    src = MarginalSource(codes, [card] * p, [f"v{i}" for i in range(p)])
    src.n = n  # the plan reads n (public) only
    return src


@settings(max_examples=60, deadline=None)
@given(p=st.integers(4, 120), eps=st.floats(0.05, 20.0), share=st.floats(0.01, 0.9),
       level0_share=st.floats(0.01, 0.99), kappa=st.integers(1, 10),
       by=st.sampled_from(["pairs", "nodes", "both"]), kept=st.sampled_from([0, 1]))
def test_plan_costs_fit_the_budget(p: int, eps: float, share: float, level0_share: float,
                                   kappa: int, by: str, kept: int) -> None:
    """The selection's declared cost (``steps`` exponential-mechanism steps at
    ``select_epsilon``: ``steps eps^2 / 8`` rho) fits its share, and with level 0's tables
    (their share of rho) stays within the run's rho (exact arithmetic)."""
    params = MarginalPCParams(level0="select", select_by=by, select_per_node=kappa,
                              select_share=share, level0_share=level0_share,
                              kept_tables=kept)
    s = RunSettings(epsilon=eps, delta=1e-6, test="g2")
    refusal = ""
    try:
        plan = make_plan(params, s, _source(p, 100_000))
    except AlgorithmError as exc:
        refusal = str(exc)
    if refusal:  # a too small budget, or shares that leave nothing for the deeper levels
        assert "too small" in refusal or (
            "select_share + level0_share" in refusal and share + level0_share >= 1)
        return
    rho = Fraction(s.budget().rho())
    if plan.level0 == "tables":  # the selection would keep every pair
        assert plan.select_steps == 0
        return
    sel = plan.select_steps * Fraction(plan.select_epsilon) ** 2 / 8
    assert sel <= Fraction(share) * rho
    tables = Fraction(plan.level0_rho) * plan.pairs
    assert tables <= Fraction(level0_share) * rho
    assert sel + tables <= rho
    if by == "pairs":
        assert plan.select_steps == plan.select_k == min(p * (p - 1) // 2, kappa * p)
    elif by == "nodes":
        assert plan.select_steps == p * plan.select_k
    else:
        assert plan.select_steps == p * plan.select_k + min(p * (p - 1) // 2, kappa * p)


def test_auto_follows_the_public_rule() -> None:
    """``auto`` selects from 40 variables on, and below where ``tables``' level-0 noise
    sd per cell would be at least 400 counts; the rule reads public facts only."""
    for eps in (0.5, 1.0, 5.0):
        s = RunSettings(epsilon=eps, delta=1e-6, test="g2")
        rho = float(s.budget().rho())
        for p in (5, 20, 30, 37, 39, 40, 80):
            plan = make_plan(MarginalPCParams(), s, _source(p, 100_000))
            sd0 = math.sqrt(p * (p - 1) / 2 / (LEVEL0_SHARE * rho))
            want = "select" if p >= 40 or sd0 >= 400 else "tables"
            assert plan.level0 == level0_mode(p, 100_000, rho) == want
    s = RunSettings(epsilon=1.0, delta=1e-6, test="g2")
    assert make_plan(MarginalPCParams(), s, _source(37, 100_000)).level0 == "select"
    assert make_plan(MarginalPCParams(), s, _source(27, 100_000)).level0 == "tables"
    s5 = RunSettings(epsilon=5.0, delta=1e-6, test="g2")
    assert make_plan(MarginalPCParams(), s5, _source(37, 100_000)).level0 == "tables"
    # a forced 'tables' is the former plan: one 2-way table per pair at the default share
    plan = make_plan(MarginalPCParams(level0="tables"), s, _source(50, 100_000))
    assert plan.level0 == "tables"
    assert plan.pairs == 1225
    assert Fraction(plan.level0_rho) * 1225 <= Fraction(LEVEL0_SHARE) * Fraction(
        s.budget().rho())


@pytest.mark.parametrize(("field", "value"), [
    ("level0", "selection"), ("level0", 1), ("level0", None), ("level0", "SELECT"),
    ("select_by", "edges"), ("select_by", 0), ("select_share", 0.0),
    ("select_share", 1.0), ("select_share", True), ("select_share", float("nan")),
    ("select_share", "0.1"), ("select_per_node", 0), ("select_per_node", 1.5),
    ("select_per_node", True), ("kept_tables", 2), ("kept_tables", True),
    ("select_score", "g2"), ("select_score", None), ("horizon", 0), ("horizon", 2.0),
    ("kept_tables", "1")])
def test_bad_selection_options_are_algorithm_errors(field: str, value: object) -> None:
    with pytest.raises(AlgorithmError, match=field):
        MarginalPCParams(**{field: value})  # type: ignore[arg-type]


def test_a_too_small_budget_for_the_selection_is_refused_before_the_session() -> None:
    with pytest.raises(AlgorithmError, match="too small"):
        discover_private(_asia(2_000), "marginal-pc", epsilon=1e-200, noise_seed=1,
                         params=MarginalPCParams(level0="select", select_per_node=2))


def test_shares_summing_to_one_are_refused_before_anything_is_charged() -> None:
    """Found by the privacy review: select_share 0.9 and level0_share 0.5 were accepted,
    the top-k was charged and level 0's tables were then refused by the filter."""
    s = RunSettings(epsilon=1.0, delta=1e-6, test="g2")
    for sel, lvl in ((0.9, 0.5), (0.6, 0.6), (0.5, 0.5)):
        with pytest.raises(AlgorithmError, match="select_share \\+ level0_share"):
            make_plan(MarginalPCParams(level0="select", select_per_node=2,
                                       select_share=sel, level0_share=lvl),
                      s, _source(8, 20_000))


def test_the_selection_does_not_read_the_callers_score_cache() -> None:
    """Found by the privacy review: the selection read its utilities from the caller's
    cache, which a g2-test run had filled with ``cmi`` values under the same ``(x, y, S)``
    keys (a utility off by about 1,000 bounds). The selection now scores in its own."""
    from dpcg.citests.private import source_for_dataset

    data = _asia()
    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    discover_private(data, "laplace-pc", epsilon=1.0, delta=1e-6, noise_seed=3,
                     test="cmi", cache=cache)
    assert cache  # the shared cache now holds cmi values
    src = ALGORITHM.source(data, RunSettings(1.0, 1e-6, "g2"), _no_options(), cache=cache)
    exact = source_for_dataset(data, "kendall-split")
    pairs = [(x, y) for x in range(8) for y in range(x + 1, 8)]
    assert [src.selector().score(x, y, ()) for x, y in pairs] == [
        exact.score(x, y, ()) for x, y in pairs]
    assert any(cache[(x, y, ())] != exact.score(x, y, ()) for x, y in pairs)
    params = MarginalPCParams(level0="select", select_per_node=2)
    shared = discover_private(data, "marginal-pc", epsilon=1.0, noise_seed=4,
                              params=params, cache=cache)
    fresh = discover_private(data, "marginal-pc", epsilon=1.0, noise_seed=4,
                             params=params)
    assert shared.cpdag.to_json() == fresh.cpdag.to_json()
    assert shared.plan == fresh.plan


def test_plan_of_a_source_without_a_selector_uses_the_default_score() -> None:
    src = ALGORITHM.source(_asia(2_000), RunSettings(1.0, 1e-6, "g2"),
                           _no_options())
    assert src.selector().p == 8


def _no_options() -> object:
    from dpcg.citests.registry import NoOptions

    return NoOptions()


def test_selection_leaves_background_knowledge_alone(tmp_path: Path) -> None:
    """A required edge is never a candidate of the selection (nor removed); a forbidden
    one is not in the skeleton; the selection runs over the other pairs only."""
    from dpcg.pc.background import BackgroundKnowledge

    bk = BackgroundKnowledge.build(required_edges=[("asia", "smoke")],
                                   forbidden_edges=[("tub", "either")])
    path = tmp_path / "runs.db"
    res = discover_private(_asia(), "marginal-pc", epsilon=1.0, delta=1e-6,
                           noise_seed=2, background=bk, ledger=LedgerTarget(path, "asia"),
                           params=MarginalPCParams(level0="select", select_by="pairs",
                                                   select_per_node=1))
    skeleton = {frozenset(e) for e in res.cpdag.skeleton()}
    assert frozenset(("asia", "smoke")) in skeleton
    assert frozenset(("tub", "either")) not in skeleton
    assert res.ledger is not None
    top = _entries(path, res.ledger["run_id"])[0]
    assert top["mechanism"] == "top-k"
    assert "of 26 pairs" in top["purpose"]  # 28 pairs less the two fixed ones


def test_both_selections_release_per_node_then_one_global_top_k(tmp_path: Path) -> None:
    """``select_by = both``: the per-node releases (8 nodes with 7 > 2 pairs), then one
    global top-16; the plan's steps count both, and their cost stays within the share."""
    path = tmp_path / "runs.db"
    res = discover_private(_asia(), "marginal-pc", epsilon=2.0, delta=1e-6,
                           noise_seed=6, ledger=LedgerTarget(path, "asia"),
                           params=MarginalPCParams(level0="select", select_by="both",
                                                   select_per_node=2))
    plan = res.plan
    assert plan["select_steps"] == 8 * 2 + 16
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    tops = [e for e in entries if e["mechanism"] == "top-k"]
    assert [e["params"]["k"] for e in tops] == [2] * 8 + [16]
    assert entries[:9] == tops
    assert sum(Fraction(e["cost"]["rho"]) for e in tops) <= (
        Fraction(plan["select_share"]) * Fraction(plan["rho"]))
    assert res.plan["used_levels"][0]["selections"] == 9
