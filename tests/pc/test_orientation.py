"""Orientation: CPDAG of a DAG (vs brute force), Meek rules, v-structure conflicts."""

from __future__ import annotations

from hypothesis import given, settings

from dpcg.graph import CPDAG
from dpcg.pc.orientation import meek_closure, orient
from tests.pc.dags import HAND_DAGS, brute_force_cpdag, random_dags


def adjacency(n: int, pairs: list[tuple[int, int]]) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    return adj


def test_hand_examples() -> None:
    chain = CPDAG.from_dag(*HAND_DAGS["chain"])
    assert not chain.directed
    assert len(chain.undirected) == 3
    coll = CPDAG.from_dag(*HAND_DAGS["collider"])
    assert coll.directed == {("a", "c"), ("b", "c")}
    assert not coll.undirected
    asia = CPDAG.from_dag(*HAND_DAGS["asia"])
    assert asia.directed == {("tub", "either"), ("lung", "either"), ("either", "xray"),
                             ("either", "dysp"), ("bronc", "dysp")}
    assert asia.undirected == {("asia", "tub"), ("smoke", "lung"), ("smoke", "bronc")}


def test_hand_dags_match_brute_force() -> None:
    for name, (nodes, edges) in HAND_DAGS.items():
        if len(edges) <= 10:  # 2^edges orientations
            assert CPDAG.from_dag(nodes, edges) == brute_force_cpdag(nodes, edges), name


@settings(max_examples=80, deadline=None)
@given(random_dags(max_nodes=7, max_edges=8))
def test_from_dag_matches_brute_force(
    dag: tuple[tuple[str, ...], tuple[tuple[str, str], ...]],
) -> None:
    nodes, edges = dag
    assert CPDAG.from_dag(nodes, edges) == brute_force_cpdag(nodes, edges)


def test_meek_r1() -> None:
    # c -> a - b, c not adjacent to b  =>  a -> b
    adj = adjacency(3, [(2, 0), (0, 1)])
    assert meek_closure(adj, {(2, 0)}) == {(2, 0), (0, 1)}


def test_meek_r2() -> None:
    # a -> c -> b and a - b  =>  a -> b
    adj = adjacency(3, [(0, 2), (2, 1), (0, 1)])
    assert meek_closure(adj, {(0, 2), (2, 1)}) == {(0, 2), (2, 1), (0, 1)}


def test_meek_r3() -> None:
    # a - c -> b, a - d -> b, c and d not adjacent, a - b  =>  a -> b
    a, b, c, d = range(4)
    adj = adjacency(4, [(a, c), (a, d), (c, b), (d, b), (a, b)])
    out = meek_closure(adj, {(c, b), (d, b)})
    assert (a, b) in out
    assert (a, c) not in out
    assert (c, a) not in out


def test_meek_r4() -> None:
    # a - d -> c -> b, a adjacent to c (undirected), d not adjacent to b, a - b  =>  a -> b
    a, b, c, d = range(4)
    adj = adjacency(4, [(a, d), (d, c), (c, b), (a, c), (a, b)])
    out = meek_closure(adj, {(d, c), (c, b)})
    assert (a, b) in out
    # R4 only: R1-R3 alone do not give a -> b here.
    assert (a, d) not in out
    assert (d, a) not in out


def test_meek_respects_forbidden_arcs() -> None:
    adj = adjacency(3, [(2, 0), (0, 1)])
    assert meek_closure(adj, {(2, 0)}, frozenset({(0, 1)})) == {(2, 0)}


def test_conflicting_v_structures_leave_edge_undirected() -> None:
    # Skeleton a - b - c - d with sepsets claiming colliders at b (a,c) and at c (b,d):
    # b -> c and c -> b are both claimed, so b - c stays undirected; the rest stand.
    names = ("a", "b", "c", "d")
    adj = adjacency(4, [(0, 1), (1, 2), (2, 3)])
    out = orient(names, adj, {(0, 2): (), (1, 3): (), (0, 3): (1, 2)})
    assert out.conflicts == ((1, 2),)
    assert out.cpdag.directed == {("a", "b"), ("d", "c")}
    assert out.cpdag.undirected == {("b", "c")}


def test_orientation_is_order_independent_of_sepset_insertion() -> None:
    names = ("a", "b", "c", "d")
    adj = adjacency(4, [(0, 1), (1, 2), (2, 3)])
    seps = {(0, 2): (), (1, 3): (), (0, 3): (1, 2)}
    rev = dict(reversed(list(seps.items())))
    assert orient(names, adj, seps).cpdag == orient(names, adj, rev).cpdag


def test_background_orientation_overrides_v_structure() -> None:
    names = ("a", "b", "c")
    adj = adjacency(3, [(0, 2), (1, 2)])
    out = orient(names, adj, {(0, 1): ()}, frozenset({(2, 0)}))
    assert out.cpdag.directed == {("c", "a"), ("b", "c")}
