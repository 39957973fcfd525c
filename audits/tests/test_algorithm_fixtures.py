"""The whole-run audits on the hub fixture (full profile) exercise what they name: on both
neighbouring datasets Laplace-PC and Priv-PC make the screened level-0 selection and
carry its dropped pairs into level 1's candidate sets, Hub-PC makes one per-node
top-k release for every node, and Priv-PC's hub switch makes its check ('auto') or
takes the hub branch ('on')."""

from __future__ import annotations

from typing import Any

import pytest

from audits.algorithms import (
    HUB_SELECT,
    MARGINAL_SELECT_NODES,
    MARGINAL_SELECT_PAIRS,
    PRIV_HUB_CHECK,
    PRIV_HUB_FORCED,
    PRIV_NODE_SELECT,
    SCREENED,
    hub_pair,
)
from tests.engine_room import private_run


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc"])
def test_hub_fixture_screens_and_carries(algorithm: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import dpcg.pc.engine as engine

    carried: list[int] = []
    real = engine._with_carried

    def spy(adjacency: Any, tester: Any, level: int) -> Any:
        out = real(adjacency, tester, level)
        if level == 1:
            carried.append(sum(map(len, out)) // 2 - sum(map(len, adjacency)) // 2)
        return out
    monkeypatch.setattr(engine, "_with_carried", spy)
    pair = hub_pair()
    for data in (pair.d, pair.d_prime):
        res = private_run(data, algorithm=algorithm, epsilon=1.0, seed=5, **SCREENED)
        assert res.plan["screened"] is True
        assert res.plan["screen_k"] == 8
        assert res.plan["select_k"] == 2
    assert carried == [6, 6]


@pytest.mark.parametrize(("algorithm", "options"), [("hub-pc", HUB_SELECT),
                                                     ("priv-pc", PRIV_NODE_SELECT)])
def test_hub_fixture_runs_every_per_node_selection(algorithm: str,
                                                   options: dict[str, Any]) -> None:

    pair = hub_pair()
    for data in (pair.d, pair.d_prime):
        res = private_run(data, algorithm=algorithm, epsilon=1.0, seed=5, **options)
        assert res.mechanisms.get("top-k") == 5  # one per node: each has 4 > 2 pairs
        assert res.plan.get("neighbours", res.plan.get("node_select")) == 2


def test_hub_fixture_runs_priv_pc_hub_switch() -> None:
    """'auto' releases the check on both datasets (and stays on the default path there);
    'on' takes the hub branch without a check, with its margin and sieve asks."""
    pair = hub_pair()
    for data in (pair.d, pair.d_prime):
        res = private_run(data, algorithm="priv-pc", epsilon=1.0, seed=5, **PRIV_HUB_CHECK)
        assert res.plan["hub_switch"]["mode"] == "auto"
        assert res.plan["used_hub_density"] is not None
        assert res.plan["used_hub_switch"] is False
        res = private_run(data, algorithm="priv-pc", epsilon=1.0, seed=5, **PRIV_HUB_FORCED)
        assert res.plan["used_hub_switch"] is True
        assert res.plan["used_hub_density"] is None
        assert res.plan["used_levels"][0]["hub"] is True


def test_hub_fixture_runs_marginal_pc_level0_selections() -> None:
    """Marginal-PC's level-0 selection on both datasets: per node, 5 top-k releases (each
    node keeps 2 of its 4 pairs) and the kept pairs' tables; of pairs, one top-5 release
    and no level-0 table."""
    pair = hub_pair()
    for data in (pair.d, pair.d_prime):
        res = private_run(data, algorithm="marginal-pc", epsilon=1.0, seed=5,
                          **MARGINAL_SELECT_NODES)
        assert res.plan["level0"] == "select"
        assert res.mechanisms.get("top-k") == 5
        level0 = res.plan["used_levels"][0]
        assert level0["tables"] == level0["selected"] >= 5
        res = private_run(data, algorithm="marginal-pc", epsilon=1.0, seed=5,
                          **MARGINAL_SELECT_PAIRS)
        assert res.mechanisms.get("top-k") == 1
        assert res.plan["select_k"] == 5
        assert res.plan["used_levels"][0]["tables"] == 0
