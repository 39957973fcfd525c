"""Priv-PC's hub switch (``docs/privacy/algorithm-priv-pc.md``, "The hub switch").

* the switch is planned from public facts only: off below ``n eps = HUB_WIDE_AT`` (the
  default plan is then the one of ``hub_mode='off'``), forced by ``'on'``;
* the check is one Laplace release, first in the ledger, with sensitivity ``1/clip``
  and the plan's epsilon, costing at most its share of the budget; with a tiny noise sd
  it releases the exact clipped mean;
* the decision is post-processing of that release (both cuts), and each branch makes
  the releases it names: the global selection, or one top-k per node with more than
  ``k`` pairs and levels ``1..hub_depth`` whose removals are below ``margin`` sd;
* Priv-PC's ``margin`` option: every level >= 1 removal is at most ``margin`` sd;
* bad options are AlgorithmErrors raised before anything is recorded.
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
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.private import priv_pc
from dpcg.private.common import marginal_utilities
from dpcg.private.hub_pc import HUB_WIDE_AT
from dpcg.private.planning import HUB_DEPTH, SELECTION_EMPTY_SET_BOUND
from tests.engine_room import private_run

HUB = "random:nodes=16,max_parents=3,card=2-4,seed=3,conc=0.6,shape=scale-free,exponent=1"
ROWS = 5_000
#: n eps at the switch's threshold on the fixture
EPS_WIDE = HUB_WIDE_AT / ROWS


@pytest.fixture(scope="module")
def hub16() -> Any:
    return load_network(HUB).sample(ROWS, 3)


def _entries(path: Path, run_id: str) -> list[dict[str, Any]]:
    from accounting.ledger import Ledger

    led = Ledger.open(path)
    assert led.verify().ok
    return [e for e in led.entries() if e.get("run_id") == run_id and e["kind"] == "mechanism"]


def _run(data: Any, path: Path, **kw: Any) -> tuple[Any, list[dict[str, Any]]]:
    res = private_run(data, "priv-pc", delta=1e-6, ledger=path, dataset_id="hub16", **kw)
    assert res.ledger is not None
    return res, _entries(path, res.ledger["run_id"])


def test_below_the_threshold_the_default_plan_is_unchanged(hub16: Any) -> None:
    eps = EPS_WIDE * 0.99
    a = private_run(hub16, "priv-pc", epsilon=eps, seed=4)
    b = private_run(hub16, "priv-pc", epsilon=eps, seed=4, hub_mode="off")
    assert "hub_switch" not in a.plan
    assert "used_hub_switch" not in a.plan
    assert a.cpdag.to_json() == b.cpdag.to_json()
    assert a.mechanisms == b.mechanisms
    assert {k: v for k, v in a.plan.items()} == {k: v for k, v in b.plan.items()}


def test_by_default_the_check_is_planned_only_where_level_0_selects(hub16: Any) -> None:
    """hub16 has 16 variables: level 0 tests every pair (no top-K selection), so the
    default makes no check even at n eps >= HUB_WIDE_AT; 'auto' makes it."""
    res = private_run(hub16, "priv-pc", epsilon=EPS_WIDE, seed=4, max_depth=1)
    assert res.plan["select_k"] == 0
    assert "hub_switch" not in res.plan
    src = source_for_dataset(hub16)
    from dpcg.private.contract import RunSettings
    for eps, mode, has in ((EPS_WIDE, None, False), (EPS_WIDE, "auto", True),
                           (1.0, "auto", True), (1.0, "on", True), (EPS_WIDE, "off", False)):
        plan = priv_pc.make_plan(priv_pc.PrivPCParams(hub_mode=mode),
                                 RunSettings(epsilon=eps, delta=1e-6, test="kendall-split"), src)
        assert bool(plan.hub_k) is has
        assert plan.hub_force is (mode == "on")


def test_the_check_is_first_and_fits_its_share(hub16: Any, tmp_path: Path) -> None:
    res, entries = _run(hub16, tmp_path / "l.db", epsilon=EPS_WIDE, seed=4,
                        hub_mode="auto")
    sw = res.plan["hub_switch"]
    assert sw["mode"] == "auto"
    first = entries[0]
    assert first["mechanism"] == "laplace"
    assert first["purpose"].startswith("priv-pc level 0: hub check")
    assert first["sensitivity"] == pytest.approx(1.0 / sw["check_clip"])
    assert first["params"]["epsilon"] == sw["check_epsilon"]
    # the noisy mean has the planned sd, and the check costs at most its share
    assert math.sqrt(2.0) / (sw["check_clip"] * sw["check_epsilon"]) == \
        pytest.approx(priv_pc.HUB_CHECK_SD)
    total = Budget(EPS_WIDE, 1e-6).rho()
    assert Fraction(first["cost"]["rho"]) <= priv_pc.HUB_CHECK_SHARE * total
    assert [e for e in entries if e["purpose"].startswith("priv-pc level 0: hub check")] \
        == [first]
    assert Fraction(res.spent["exact"]["rho"]) <= total
    # the decision is post-processing of the released mean: both cuts
    d = res.plan["used_hub_density"]
    p = len(hub16.names)
    assert res.plan["used_hub_switch"] == (d >= sw["check_density"]
                                           and d * (p - 1) >= sw["check_partners"])


def test_a_small_noise_releases_the_exact_clipped_mean(
        hub16: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's noise sd is HUB_CHECK_SD by construction (the clip follows the
    budget); with a tiny one the release is the exact clipped mean."""
    monkeypatch.setattr(priv_pc, "HUB_CHECK_SD", 1e-5)
    res = private_run(hub16, "priv-pc", epsilon=1e6, delta=1e-6, seed=2, hub_mode="auto",
                      max_depth=1)
    clip = res.plan["hub_switch"]["check_clip"]
    src = source_for_dataset(hub16)
    p = src.p
    pairs = [(x, y) for x in range(p) for y in range(x + 1, p)]
    u = marginal_utilities(src, pairs, SELECTION_EMPTY_SET_BOUND)
    exact = float(np.mean(np.clip(u, 0.0, clip))) / clip
    assert res.plan["used_hub_density"] == pytest.approx(exact, abs=1e-3)


@pytest.mark.parametrize(("cut", "taken"), [(0.0, True), (1e9, False)])
def test_each_branch_makes_the_releases_it_names(hub16: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 cut: float, taken: bool) -> None:
    monkeypatch.setattr(priv_pc, "HUB_CHECK_PARTNERS", cut)
    monkeypatch.setattr(priv_pc, "HUB_CHECK_DENSITY", -1.0 if taken else cut)
    res, entries = _run(hub16, tmp_path / "l.db", epsilon=EPS_WIDE, seed=6,
                        hub_mode="auto")
    assert res.plan["used_hub_switch"] is taken
    assert entries[0]["purpose"].startswith("priv-pc level 0: hub check")
    tops = [e for e in entries if e["mechanism"] == "top-k"]
    p = len(hub16.names)
    sw = res.plan["hub_switch"]
    if taken:
        # one per-node top-k per node (each has p - 1 = 15 > 8 pairs), then no level-0
        # test: levels 1..hub_depth only
        assert len(tops) == p
        assert all(e["purpose"].startswith("priv-pc level 0: node ") for e in tops)
        assert all(e["params"]["k"] == sw["neighbours"] == 8 for e in tops)
        assert all(e["params"]["epsilon"] == sw["select_epsilon"] for e in tops)
        assert sw["depth"] == HUB_DEPTH
        assert sw["margin"] == priv_pc.HUB_BRANCH_MARGIN
        assert sw["sieve_asks"] == priv_pc.HUB_SIEVE_ASKS
        assert not [t for t in res.pc.tests if t.level == 0 and t.statistic is not None]
        lv0 = res.plan["used_levels"][0]
        assert lv0["hub"] is True
        assert lv0["selected"] <= p * 8
        assert all(lv["level"] <= HUB_DEPTH for lv in res.plan["used_levels"])
        assert max(t.level for t in res.pc.tests) <= HUB_DEPTH
    else:
        assert not [e for e in tops if "node " in e["purpose"]]
        assert [e for e in entries if e["purpose"].startswith("priv-pc sieve")]
        assert "hub" not in res.plan["used_levels"][0]
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(EPS_WIDE, 1e-6).rho()


def _examine_sds(entries: list[dict[str, Any]]) -> dict[tuple[int, int, int], float]:
    out: dict[tuple[int, int, int], float] = {}
    for e in entries:
        m = re.match(r"priv-pc examine: min over \d+ level-(\d+) sets of score - T, "
                      r"(\d+) _\|\|_ (\d+)$", e["purpose"])
        if m is not None:
            prm = e["params"]
            out[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = \
                math.sqrt(2.0) * prm["sensitivity"] / prm["epsilon"]
    return out


@pytest.mark.parametrize("kwargs", [{"hub_mode": "on"}, {"hub_mode": "on", "margin": 0.5},
                                    {"margin": 1.5}, {"margin": 1.5, "hub_mode": "off"}])
def test_removals_are_below_the_margin(hub16: Any, tmp_path: Path,
                                       kwargs: dict[str, Any]) -> None:
    res, entries = _run(hub16, tmp_path / "l.db", epsilon=2.0, seed=7, **kwargs)
    margin = kwargs.get("margin", priv_pc.HUB_BRANCH_MARGIN)
    if kwargs.get("hub_mode") == "on":
        assert res.plan["hub_switch"]["mode"] == "on"
        assert res.plan["hub_switch"]["margin"] == margin
        assert not [e for e in entries if "hub check" in e["purpose"]]  # forced: none
        assert res.plan["used_hub_switch"] is True
    else:
        assert res.plan["margin"] == margin
    sds = _examine_sds(entries)
    removed = [t for t in res.pc.tests if t.level >= 1 and t.independent]
    assert removed
    for t in removed:
        assert t.statistic is not None
        assert t.statistic <= margin * sds[(t.level, t.x, t.y)]
    kept = [t for t in res.pc.tests if t.level >= 1 and not t.independent
            and t.statistic is not None]
    for t in kept:
        assert t.statistic > margin * sds[(t.level, t.x, t.y)]


def test_seeded_runs_are_reproducible(hub16: Any) -> None:
    a = private_run(hub16, "priv-pc", epsilon=EPS_WIDE, seed=11, hub_mode="auto")
    b = private_run(hub16, "priv-pc", epsilon=EPS_WIDE, seed=11, hub_mode="auto")
    assert a.cpdag.to_json() == b.cpdag.to_json()
    assert a.plan["used_hub_density"] == b.plan["used_hub_density"]


@pytest.mark.parametrize(
    "kwargs",
    [{"hub_mode": "maybe"}, {"hub_mode": True}, {"hub_mode": "on", "node_select": 2},
     {"hub_mode": "auto", "select": 4.0}, {"hub_mode": "on", "screen_selection": 1},
     {"hub_mode": "auto", "release": "test"}, {"hub_mode": "off", "plan_size": 10},
     {"margin": -1.0}, {"margin": float("nan")}, {"margin": "1"},
     {"margin": 1.0, "test_epsilon": 0.1}, {"hub_mode": "on", "epsilon": 1e-300},
     {"hub_mode": "auto", "epsilon": 1e-300}],
)
def test_bad_input_is_refused_before_anything_is_recorded(hub16: Any, tmp_path: Path,
                                                          kwargs: dict[str, Any]) -> None:
    from accounting.errors import InvalidParameterError
    from accounting.ledger import Ledger

    path = tmp_path / "l.db"
    args: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, "seed": 1, "ledger": path,
                            "dataset_id": "hub16"}
    args.update(kwargs)
    with pytest.raises((AlgorithmError, InvalidParameterError)):
        private_run(hub16, "priv-pc", **args)
    if path.exists():
        led = Ledger.open(path)
        assert led.verify().ok
        assert not [e for e in led.entries() if e["kind"] == "mechanism"]


def test_auto_without_selection_plans_level_0_on_what_the_check_leaves(hub16: Any) -> None:
    """'auto' on a network without a level-0 selection: the check takes its share first,
    so level 0's planned rounds and the run's report use the rest (the plan's first
    round is the one the level records)."""
    auto = private_run(hub16, "priv-pc", epsilon=EPS_WIDE, seed=4, hub_mode="auto",
                       max_depth=1)
    off = private_run(hub16, "priv-pc", epsilon=EPS_WIDE, seed=4, hub_mode="off",
                      max_depth=1)
    assert auto.plan["select_k"] == 0
    level0 = next(r for r in auto.plan["used_levels"] if r["level"] == 0)
    assert level0["epsilon_per_round"] == pytest.approx(auto.plan["epsilon_per_round"],
                                                        rel=1e-12)
    assert auto.plan["epsilon_per_round"] < off.plan["epsilon_per_round"]
