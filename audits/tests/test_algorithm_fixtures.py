"""The whole-run audits on the hub fixture (full profile) exercise what they name: on both
neighbouring datasets Laplace-PC and Priv-PC make the screened level-0 selection and
carry its dropped pairs into level 1's candidate sets, and Hub-PC makes one per-node
top-k release for every node."""

from __future__ import annotations

from typing import Any

import pytest

from audits.algorithms import HUB_SELECT, SCREENED, hub_pair


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc"])
def test_hub_fixture_screens_and_carries(algorithm: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import dpcg.pc.engine as engine
    from dpcg.private import discover

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
        res = discover(data, algorithm=algorithm, epsilon=1.0, seed=5, **SCREENED)
        assert res.plan["screened"] is True
        assert res.plan["screen_k"] == 8
        assert res.plan["select_k"] == 2
    assert carried == [6, 6]


def test_hub_fixture_runs_every_per_node_selection() -> None:
    from dpcg.private import discover

    pair = hub_pair()
    for data in (pair.d, pair.d_prime):
        res = discover(data, algorithm="hub-pc", epsilon=1.0, seed=5, **HUB_SELECT)
        assert res.mechanisms.get("top-k") == 5
        assert res.plan["used_levels"][0]["selections"] == 5
        assert res.plan["neighbours"] == 2
