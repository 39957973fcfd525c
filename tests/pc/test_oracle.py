"""The bitset d-separation oracle agrees with networkx's d-separation."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.pc import DSeparationOracle
from tests.pc.dags import HAND_DAGS, random_dags


@settings(max_examples=80, deadline=None)
@given(random_dags(max_nodes=9), st.data())
def test_matches_networkx(dag: tuple[tuple[str, ...], tuple[tuple[str, str], ...]],
                          data: st.DataObject) -> None:
    nodes, edges = dag
    if len(nodes) < 2:
        return
    oracle = DSeparationOracle(nodes, edges)
    g = nx.DiGraph()
    g.add_nodes_from(range(len(nodes)))
    pos = {n: i for i, n in enumerate(nodes)}
    g.add_edges_from((pos[a], pos[b]) for a, b in edges)
    for _ in range(10):
        x, y = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=2, max_size=2,
                                  unique=True))
        rest = [v for v in range(len(nodes)) if v not in (x, y)]
        S = tuple(sorted(data.draw(st.lists(st.sampled_from(rest), unique=True)) if rest else []))
        assert oracle.test(x, y, S).independent == nx.is_d_separator(g, {x}, {y}, set(S))


def test_asia_examples() -> None:
    nodes, edges = HAND_DAGS["asia"]
    o = DSeparationOracle(nodes, edges)
    i = {n: k for k, n in enumerate(nodes)}
    assert not o.separated(i["tub"], i["lung"], (i["either"],))  # collider opened
    assert o.separated(i["tub"], i["lung"], ())
    assert o.separated(i["asia"], i["xray"], (i["either"],))
    assert not o.separated(i["asia"], i["xray"], ())
    assert o.separated(i["smoke"], i["dysp"], (i["lung"], i["bronc"]))
    assert o.separated(i["smoke"], i["dysp"], (i["lung"], i["bronc"], i["either"]))
    assert not o.separated(i["smoke"], i["dysp"], (i["lung"],))
