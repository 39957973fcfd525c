"""Hub-PC (``docs/privacy/algorithm-hub-pc.md``).

* the plan's level-0 selection fits its share of the budget exactly (both rules);
* level 0 is one ``top-k`` release (sensitivity 1, ``k``, the plan's step) per node with
  more than ``k`` pairs, none for the others, recorded in one batch; the run's declared
  spend stays within the budget;
* with a vanishing noise the kept pairs are the union of the exact per-node top-k, and
  levels 1..D test only inside them (no removed pair comes back);
* levels >= 1 remove a pair exactly when its noisy minimum is at most ``margin`` noise
  sds (both rules), and a margin only adds removals to the same releases;
* bad options and budgets are AlgorithmErrors raised before anything is recorded;
* seeded runs are reproducible.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.costs import Budget
from accounting.errors import InvalidParameterError
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.private.common import marginal_utilities, node_pairs
from dpcg.private.contract import RunSettings
from dpcg.private.hub_pc import (
    HUB_DEPTH,
    HUB_MARGIN,
    HUB_NEIGHBOURS,
    HUB_NEIGHBOURS_NARROW,
    HUB_WIDE_AT,
    HubPCParams,
    hub_defaults,
    make_plan,
    noise_sd,
)
from dpcg.private.planning import SELECTION_EMPTY_SET_BOUND
from tests.engine_room import private_run

HUB = "random:nodes=16,max_parents=3,card=2-4,seed=3,conc=0.6,shape=scale-free,exponent=1"


@pytest.fixture(scope="module")
def hub16() -> Any:
    return load_network(HUB).sample(5_000, 3)


def _entries(path: Path, run_id: str) -> list[dict[str, Any]]:
    from accounting.ledger import Ledger

    led = Ledger.open(path)
    assert led.verify().ok
    return [e for e in led.entries() if e.get("run_id") == run_id and e["kind"] == "mechanism"]


@pytest.mark.parametrize(("delta", "rule"), [(0.0, "basic"), (1e-6, "zcdp"),
                                             (1e-6, "basic")])
def test_selection_fits_its_share_exactly(hub16: Any, delta: float, rule: str) -> None:
    src = source_for_dataset(hub16)
    settings = RunSettings(epsilon=1.0, delta=delta, test="kendall-split")
    plan = make_plan(HubPCParams(neighbours=3, select_share=0.3, rule=rule), settings, src)
    assert plan.rule == rule
    assert plan.max_depth == HUB_DEPTH
    budget = Budget(1.0, delta)
    total = Fraction(budget.epsilon_exact) if rule == "basic" else Fraction(budget.rho())
    steps = src.p * 3
    e = Fraction(plan.select_epsilon)
    bigger = Fraction(math.nextafter(plan.select_epsilon, math.inf))
    if rule == "basic":
        assert steps * e <= Fraction(0.3) * total < steps * bigger
    else:
        assert steps * e * e / 8 <= Fraction(0.3) * total < steps * bigger * bigger / 8
    assert plan.describe()["neighbours"] == 3


def test_level0_is_one_top_k_per_node(hub16: Any, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    res = private_run(hub16, "hub-pc", epsilon=1.0, delta=1e-6, seed=4, ledger=path,
                      dataset_id="hub16", neighbours=3)
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    tops = [e for e in entries if e["mechanism"] == "top-k"]
    p = len(hub16.names)
    assert len(tops) == p  # every node has p - 1 = 15 > 3 pairs
    nodes = sorted(int(re.search(r"node (\d+)", e["purpose"]).group(1))  # type: ignore[union-attr]
                   for e in tops)
    assert nodes == list(range(p))
    for e in tops:
        assert e["params"]["k"] == 3
        assert e["sensitivity"] == 1.0
        assert e["params"]["epsilon"] == res.plan["select_epsilon"]
    # the selection comes first: every top-k entry precedes the first level-1 release
    kinds = [e["mechanism"] for e in entries]
    assert kinds[:p] == ["top-k"] * p
    assert "top-k" not in kinds[p:]
    lv0 = res.plan["used_levels"][0]
    assert lv0["selections"] == p
    assert lv0["selected"] <= p * 3
    # the selection's releases together cost at most its planned share (and nearly all)
    spent = sum(Fraction(e["cost"]["rho"]) for e in tops)
    assert spent <= Fraction(lv0["share"]) * (1 + Fraction(1, 10**9))
    assert spent >= Fraction(lv0["share"]) * Fraction(99, 100)
    assert lv0["share"] == pytest.approx(0.25 * float(Budget(1.0, 1e-6).rho()))
    assert res.plan["used_levels"][1]["pairs"] <= lv0["selected"]
    # the declared spend is within the budget
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    assert max(lv["level"] for lv in res.plan["used_levels"]) <= HUB_DEPTH


def test_nodes_with_few_pairs_release_nothing_at_level0(hub16: Any, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    p = len(hub16.names)
    res = private_run(hub16, "hub-pc", epsilon=1.0, delta=1e-6, seed=4, ledger=path,
                      dataset_id="hub16", neighbours=p - 1, max_depth=1)
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    assert not [e for e in entries if e["mechanism"] == "top-k"]
    assert res.plan["used_levels"][0]["selected"] == p * (p - 1) // 2
    assert res.plan["used_levels"][1]["pairs"] == p * (p - 1) // 2


def test_vanishing_noise_keeps_the_union_of_exact_per_node_top_k(hub16: Any) -> None:
    k = 2
    res = private_run(hub16, "hub-pc", epsilon=1e7, delta=1e-6, seed=1, neighbours=k,
                      max_depth=2)
    src = source_for_dataset(hub16)
    p = src.p
    pairs = [(x, y) for x in range(p) for y in range(x + 1, p)]
    u = marginal_utilities(src, pairs, SELECTION_EMPTY_SET_BOUND)
    union: set[tuple[int, int]] = set()
    for idx in node_pairs(p, pairs):
        order = np.argsort(-u[np.asarray(idx)], kind="stable")[:k]
        union.update(pairs[idx[int(i)]] for i in order)
    assert res.plan["used_levels"][0]["selected"] == len(union)
    names = list(hub16.names)
    edges = {tuple(sorted((names.index(a), names.index(b))))
             for kind in ("directed", "undirected")
             for a, b in res.cpdag.to_json()["edges"][kind]}
    assert edges <= union
    # every pair not kept was removed at level 0 with the empty set
    level0 = [t for t in res.pc.tests if t.level == 0]
    assert {(t.x, t.y) for t in level0 if t.independent} == set(pairs) - union
    assert all(t.S == () for t in level0)


def test_defaults_are_the_documented_ones(hub16: Any) -> None:
    """k and M from the public n x eps: the narrow defaults below 100,000, the wide
    ones from it on (hub16 has 5,000 rows); an explicit option wins."""
    assert hub_defaults(5_000, 1.0) == (HUB_NEIGHBOURS_NARROW, 0.0) == (4, 0.0)
    assert hub_defaults(100_000, 1.0) == (HUB_NEIGHBOURS, HUB_MARGIN) == (8, 1.0)
    assert hub_defaults(10_000, 9.99) == (4, 0.0)
    assert HUB_WIDE_AT == 100_000
    res = private_run(hub16, "hub-pc", epsilon=1.0, seed=2)
    assert (res.plan["neighbours"], res.plan["margin"]) == (4, 0.0)
    assert res.plan["max_depth"] == HUB_DEPTH
    res = private_run(hub16, "hub-pc", epsilon=20.0, seed=2)
    assert (res.plan["neighbours"], res.plan["margin"]) == (8, 1.0)
    res = private_run(hub16, "hub-pc", epsilon=20.0, seed=2, neighbours=3, margin=0.0)
    assert (res.plan["neighbours"], res.plan["margin"]) == (3, 0.0)


def test_noise_sd_of_either_release() -> None:
    from accounting.mechanisms import Gaussian, Laplace

    assert noise_sd(Laplace(0.5, 0.25)) == pytest.approx(2.0 * math.sqrt(2.0))
    assert noise_sd(Gaussian(1.0, 3.0)) == 3.0


def _sds(path: Path, run_id: str) -> dict[tuple[int, int, int], float]:
    """(level, x, y) -> the noise sd of the pair's per-pair release at that level (from
    the ledger's mechanism parameters)."""
    out: dict[tuple[int, int, int], float] = {}
    for e in _entries(path, run_id):
        m = re.match(r"min over \d+ level-(\d+) sets of score - T, (\d+) _\|\|_ (\d+)$",
                     e["purpose"])
        if m is None:
            continue
        prm = e["params"]
        sd = (prm["sigma"] if e["mechanism"] == "gaussian"
              else math.sqrt(2.0) * prm["sensitivity"] / prm["epsilon"])
        out[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = float(sd)
    return out


@pytest.mark.parametrize(("rule", "delta"), [("zcdp", 1e-6), ("basic", 0.0)])
def test_margin_removes_below_margin_sds_and_only_adds_removals(
        hub16: Any, tmp_path: Path, rule: str, delta: float) -> None:
    """A pair is removed at a level >= 1 exactly when its noisy minimum is at most
    ``margin`` noise sds: every removal's released statistic is below the cut, and with
    the same noise seed level 1 (identical releases) removes a superset of what the
    margin-0 run removes there."""
    runs = {}
    for margin in (0.0, 2.0):
        path = tmp_path / f"l{margin}.db"
        res = private_run(hub16, "hub-pc", epsilon=1.0, delta=delta, seed=5, ledger=path,
                            dataset_id="hub16", margin=margin, rule=rule, neighbours=4)
        assert res.ledger is not None
        assert res.plan["margin"] == margin
        sds = _sds(path, res.ledger["run_id"])
        removed = [t for t in res.pc.tests if t.level >= 1 and t.independent]
        assert removed
        for t in removed:
            assert t.statistic is not None
            assert t.statistic <= margin * sds[(t.level, t.x, t.y)]
        runs[margin] = res
    one = [{(t.x, t.y) for t in runs[m].pc.tests if t.level == 1 and t.independent}
           for m in (0.0, 2.0)]
    assert one[0] < one[1]  # strictly more removals at this seed


def test_seeded_runs_are_reproducible(hub16: Any) -> None:
    a = private_run(hub16, "hub-pc", epsilon=1.0, seed=11)
    b = private_run(hub16, "hub-pc", epsilon=1.0, seed=11)
    assert a.cpdag.to_json() == b.cpdag.to_json()
    assert a.mechanisms == b.mechanisms


@pytest.mark.parametrize(
    "kwargs",
    [{"neighbours": 0}, {"neighbours": -2}, {"neighbours": True}, {"neighbours": 2.5},
     {"neighbours": "3"}, {"select_share": 0.0}, {"select_share": 1.0},
     {"select_share": float("nan")}, {"select_share": "0.2"}, {"rule": "rdp"},
     {"rule": "zcdp", "delta": 0.0}, {"epsilon": 0.0}, {"epsilon": -1.0},
     {"delta": 1.0}, {"epsilon": 1e-300}, {"max_depth": -1}, {"test": "g3"},
     {"plan_size": 10}, {"margin": -0.5}, {"margin": float("nan")},
     {"margin": float("inf")}, {"margin": "1"}, {"margin": True}],
)
def test_bad_input_is_refused_before_anything_is_recorded(hub16: Any, tmp_path: Path,
                                                          kwargs: dict[str, Any]) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "l.db"
    args: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, "seed": 1, "ledger": path,
                            "dataset_id": "hub16"}
    args.update(kwargs)
    with pytest.raises(AlgorithmError):
        private_run(hub16, "hub-pc", **args)
    if path.exists():
        led = Ledger.open(path)
        assert led.verify().ok
        assert not [e for e in led.entries() if e["kind"] == "mechanism"]


# ------------------------------------------------------------ Priv-PC's opt-in option


def test_priv_pc_node_select_makes_the_per_node_selection(hub16: Any, tmp_path: Path
                                                          ) -> None:
    path = tmp_path / "l.db"
    res = private_run(hub16, "priv-pc", epsilon=1.0, delta=1e-6, seed=4, ledger=path,
                      dataset_id="hub16", node_select=3)
    assert res.ledger is not None
    entries = _entries(path, res.ledger["run_id"])
    tops = [e for e in entries if e["mechanism"] == "top-k"]
    p = len(hub16.names)
    assert len(tops) == p
    assert all(e["purpose"].startswith("priv-pc level 0: node ") for e in tops)
    assert all(e["params"]["k"] == 3 and e["sensitivity"] == 1.0 for e in tops)
    assert [e["mechanism"] for e in entries[:p]] == ["top-k"] * p
    assert res.plan["node_select"] == 3
    assert res.plan["select_k"] == p * 3
    assert res.plan["max_depth"] == HUB_DEPTH  # the option's default depth cap
    assert res.plan["screened"] is False
    lv0 = res.plan["used_levels"][0]
    assert lv0["selected"] <= p * 3
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()
    # the selection's steps fit the share the plan gives it (level 0's SELECT_SHARE)
    capped = private_run(hub16, "priv-pc", epsilon=1.0, seed=4, node_select=3, max_depth=1)
    assert capped.plan["max_depth"] == 1


def test_priv_pc_default_plan_is_unchanged(hub16: Any) -> None:
    res = private_run(hub16, "priv-pc", epsilon=1.0, seed=4)
    assert "node_select" not in res.plan
    assert res.plan["max_depth"] is None
    assert "top-k" not in res.mechanisms or res.plan["select_k"] > 0


@pytest.mark.parametrize(
    "kwargs",
    [{"node_select": 0}, {"node_select": True}, {"node_select": 1.5},
     {"node_select": 2, "plan_size": 10}, {"node_select": 2, "test_epsilon": 0.1},
     {"node_select": 2, "select": 4.0}, {"node_select": 2, "screen_selection": 1},
     {"node_select": 2, "epsilon": 1e-300}],
)
def test_priv_pc_node_select_bad_input_is_refused_before_anything_is_recorded(
        hub16: Any, tmp_path: Path, kwargs: dict[str, Any]) -> None:
    from accounting.ledger import Ledger

    path = tmp_path / "l.db"
    args: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, "seed": 1, "ledger": path,
                            "dataset_id": "hub16"}
    args.update(kwargs)
    # a budget beyond the samplers' range is Priv-PC's accounting error, as without the
    # option (accounting.errors.InvalidParameterError); both are refused uncharged
    with pytest.raises((AlgorithmError, InvalidParameterError)):
        private_run(hub16, "priv-pc", **args)
    if path.exists():
        led = Ledger.open(path)
        assert not [e for e in led.entries() if e["kind"] == "mechanism"]


def test_background_knowledge_is_respected(hub16: Any) -> None:
    """Required and forbidden pairs are not among level 0's pairs: no node ranks them,
    a required edge stays and a forbidden one never appears."""
    from dpcg.pc.background import BackgroundKnowledge

    n = list(hub16.names)
    bk = BackgroundKnowledge.build(required_edges=[(n[0], n[15]), (n[3], n[9])],
                                   forbidden_edges=[(n[1], n[2])])
    res = private_run(hub16, "hub-pc", epsilon=1.0, seed=3, background=bk, neighbours=1)
    edges = {frozenset(e) for kind in ("directed", "undirected")
             for e in res.cpdag.to_json()["edges"][kind]}
    assert frozenset((n[0], n[15])) in edges
    assert frozenset((n[3], n[9])) in edges
    assert frozenset((n[1], n[2])) not in edges
    p = len(n)
    assert res.plan["used_levels"][0]["pairs"] == p * (p - 1) // 2 - 3
