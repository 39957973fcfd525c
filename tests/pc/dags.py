"""Hand-written DAGs and a Hypothesis strategy for random DAGs (test helpers)."""

from __future__ import annotations

from itertools import product

import networkx as nx
from hypothesis import strategies as st

from dpcg.graph import CPDAG

# Lauritzen & Spiegelhalter's asia network.
ASIA_NODES = ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")
ASIA_EDGES = (
    ("asia", "tub"), ("smoke", "lung"), ("smoke", "bronc"), ("tub", "either"),
    ("lung", "either"), ("either", "xray"), ("either", "dysp"), ("bronc", "dysp"),
)

# Sachs et al. consensus network as shipped by bnlearn (11 nodes, 17 arcs).
SACHS_NODES = ("Akt", "Erk", "Jnk", "Mek", "P38", "PIP2", "PIP3", "PKA", "PKC", "Plcg", "Raf")
SACHS_EDGES = (
    ("Erk", "Akt"), ("Mek", "Erk"), ("PIP3", "PIP2"), ("PKA", "Akt"), ("PKA", "Erk"),
    ("PKA", "Jnk"), ("PKA", "Mek"), ("PKA", "P38"), ("PKA", "Raf"), ("PKC", "Jnk"),
    ("PKC", "Mek"), ("PKC", "P38"), ("PKC", "PKA"), ("PKC", "Raf"), ("Plcg", "PIP2"),
    ("Plcg", "PIP3"), ("Raf", "Mek"),
)

HAND_DAGS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "asia": (ASIA_NODES, ASIA_EDGES),
    "sachs": (SACHS_NODES, SACHS_EDGES),
    "chain": (("a", "b", "c", "d"), (("a", "b"), ("b", "c"), ("c", "d"))),
    "collider": (("a", "b", "c"), (("a", "c"), ("b", "c"))),
    "diamond": (("a", "b", "c", "d"), (("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"))),
    "empty": (("a", "b", "c"), ()),
    "single": (("a",), ()),
}


@st.composite
def random_dags(
    draw: st.DrawFn, max_nodes: int = 8, max_edges: int | None = None
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """A random DAG over ``n <= max_nodes`` nodes, with names in a shuffled order."""
    n = draw(st.integers(1, max_nodes))
    order = draw(st.permutations(range(n)))
    names = tuple(f"v{i}" for i in range(n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = (
        draw(st.lists(st.sampled_from(pairs), unique=True, max_size=max_edges)) if pairs else []
    )
    edges = tuple((names[order[i]], names[order[j]]) for i, j in chosen)
    return names, edges


def v_structures(g: nx.DiGraph) -> set[tuple[str, str, str]]:
    out = set()
    for z in g.nodes:
        ps = sorted(g.predecessors(z))
        for i, x in enumerate(ps):
            for y in ps[i + 1 :]:
                if not g.has_edge(x, y) and not g.has_edge(y, x):
                    out.add((x, z, y))
    return out


def brute_force_cpdag(nodes: tuple[str, ...], edges: tuple[tuple[str, str], ...]) -> CPDAG:
    """CPDAG by enumerating every DAG with the same skeleton and v-structures."""
    true = nx.DiGraph(list(edges))
    true.add_nodes_from(nodes)
    target = v_structures(true)
    skel = [(min(a, b), max(a, b)) for a, b in edges]
    seen: dict[tuple[str, str], set[tuple[str, str]]] = {e: set() for e in skel}
    for flips in product((False, True), repeat=len(skel)):
        arcs = [(b, a) if f else (a, b) for (a, b), f in zip(skel, flips, strict=True)]
        g = nx.DiGraph(arcs)
        g.add_nodes_from(nodes)
        if nx.is_directed_acyclic_graph(g) and v_structures(g) == target:
            for e, arc in zip(skel, arcs, strict=True):
                seen[e].add(arc)
    directed = [next(iter(s)) for s in seen.values() if len(s) == 1]
    undirected = [e for e, s in seen.items() if len(s) == 2]
    return CPDAG(nodes, directed, undirected)
