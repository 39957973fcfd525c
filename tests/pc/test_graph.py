"""CPDAG value type: validation and exports (networkx, JSON, DOT, GraphML)."""

from __future__ import annotations

import io

import networkx as nx
import pytest

from dpcg.errors import GraphError
from dpcg.graph import CPDAG


def sample() -> CPDAG:
    return CPDAG(("a", "b", "c", "d"), directed=[("a", "c"), ("b", "c")],
                 undirected=[("d", "c")])


def test_normalises_undirected_and_accepts_indices() -> None:
    g = sample()
    assert g.undirected == frozenset({("c", "d")})
    assert CPDAG(("a", "b", "c", "d"), [(0, 2), (1, 2)], [(3, 2)]) == g
    assert g.skeleton() == {frozenset("ac"), frozenset("bc"), frozenset("cd")}
    assert g.n_edges == 3
    assert g.edge_marks()[frozenset("ac")] == ("a", "c")
    assert g.edge_marks()[frozenset("cd")] is None


@pytest.mark.parametrize(
    ("directed", "undirected", "match"),
    [
        ([("a", "x")], [], "unknown node"),
        ([("a", "a")], [], "self-loop"),
        ([("a", "b")], [("b", "a")], "at most one edge"),
        ([("a", "b"), ("b", "a")], [], "at most one edge"),
        ([("a",)], [], "pair"),
        ([(0, 7)], [], "out of range"),
    ],
)
def test_rejects_bad_edges(directed: list[tuple[object, ...]], undirected: list[tuple[object, ...]],
                           match: str) -> None:
    with pytest.raises(GraphError, match=match):
        CPDAG(("a", "b", "c"), directed, undirected)


def test_rejects_duplicate_nodes() -> None:
    with pytest.raises(GraphError, match="duplicate"):
        CPDAG(("a", "a"))


def test_to_networkx_marks_edges() -> None:
    g = sample().to_networkx()
    assert set(g.nodes) == {"a", "b", "c", "d"}
    assert g.edges["a", "c"]["kind"] == "directed"
    assert not g.has_edge("c", "a")
    assert g.edges["c", "d"]["kind"] == "undirected"
    assert g.edges["d", "c"]["kind"] == "undirected"
    assert g.number_of_edges() == 4


def test_json_round_trip() -> None:
    g = sample()
    data = g.to_json()
    assert data == {
        "nodes": ["a", "b", "c", "d"],
        "edges": {"directed": [["a", "c"], ["b", "c"]], "undirected": [["c", "d"]]},
    }
    assert CPDAG.from_json(data) == g
    assert CPDAG.from_json(g.dumps()) == g
    with pytest.raises(GraphError):
        CPDAG.from_json("{not json")
    with pytest.raises(GraphError):
        CPDAG.from_json({"edges": {}})


def test_dot_export() -> None:
    dot = CPDAG(("a", 'q"x'), [], [("a", 'q"x')]).to_dot()
    assert dot.startswith('digraph "cpdag" {')
    assert '"a" -> "q\\"x" [dir=none];' in dot
    dot2 = sample().to_dot()
    assert '"a" -> "c";' in dot2
    assert '"c" -> "d" [dir=none];' in dot2
    assert dot2.count("->") == 3


def test_graphml_export_round_trips_through_networkx() -> None:
    text = sample().to_graphml()
    g = nx.read_graphml(io.BytesIO(text.encode()))
    assert set(g.nodes) == {"a", "b", "c", "d"}
    assert g.edges["d", "c"]["kind"] == "undirected"
    assert g.edges["b", "c"]["kind"] == "directed"
    assert g.number_of_edges() == 4


def test_from_dag_rejects_cycles_and_unknown_nodes() -> None:
    with pytest.raises(GraphError, match="cycle"):
        CPDAG.from_dag("abc", [("a", "b"), ("b", "c"), ("c", "a")])
    with pytest.raises(GraphError, match="unknown"):
        CPDAG.from_dag("ab", [("a", "z")])
    with pytest.raises(GraphError, match="more than one edge"):
        CPDAG.from_dag("ab", [("a", "b"), ("b", "a")])
