"""Orientation: v-structures from separating sets, background knowledge, Meek's rules.

Orientation only reads the skeleton and the separating sets that the skeleton phase
already released, so for private variants it is post-processing and costs nothing.

Procedure (:func:`orient`):

1. **V-structures.** For every non-adjacent pair ``x < y`` that has a separating set
   and every common neighbour ``z`` not in that set, claim ``x -> z`` and ``y -> z``.
   All claims are collected first (the result does not depend on the order in which
   triples are visited). **Conflicts** (an edge claimed in both directions by two
   different v-structures, which only happens when some test erred) are resolved by
   leaving that edge undirected; every other claim stands. This is the
   order-independent resolution of Colombo & Maathuis (2014, sec. 5.1), which marks such
   an edge bi-directed, rendered in a CPDAG as undirected. Conflicting edges are
   reported in :attr:`Orientation.conflicts`; Meek's rules do not orient them later
   either (a bi-directed edge is not orientable). Pairs without a separating set (forbidden
   by background knowledge, or never tested because the run stopped) form no
   v-structure.
2. **Background knowledge.** Required arcs (and the reverse of forbidden arcs) are
   applied to adjacent pairs, overriding step 1.
3. **Meek's rules R1-R4** (Meek 1995) are applied to a fixed point, visiting undirected
   edges in node order; no rule orients an edge against background knowledge. The
   rules only orient undirected edges; they never reverse an arc.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from dpcg.errors import GraphError
from dpcg.graph import CPDAG

Arc = tuple[int, int]


@dataclass(frozen=True)
class Orientation:
    """The oriented graph plus what happened on the way (for reports and debugging)."""

    cpdag: CPDAG
    v_structures: tuple[tuple[int, int, int], ...]  # (x, z, y): x -> z <- y, x < y
    conflicts: tuple[tuple[int, int], ...]  # edges (a, b), a < b, left undirected


def meek_closure(
    adj: Sequence[set[int]], arcs: set[Arc], forbidden: frozenset[Arc] = frozenset()
) -> set[Arc]:
    """Apply Meek's rules R1-R4 until nothing changes; returns the new arc set.

    ``adj`` is the skeleton (symmetric adjacency sets), ``arcs`` the arcs oriented so
    far; ``forbidden`` lists arcs no rule may create. For an undirected edge ``a - b``:

    * R1: ``c -> a``, ``c`` not adjacent to ``b``  gives ``a -> b``;
    * R2: ``a -> c -> b``  gives ``a -> b``;
    * R3: ``a - c -> b`` and ``a - d -> b`` with ``c``, ``d`` not adjacent gives ``a -> b``;
    * R4: ``a - d -> c -> b`` with ``a`` adjacent to ``c`` and ``d`` not adjacent to ``b``
      gives ``a -> b``.
    """
    arcs = set(arcs)
    n = len(adj)
    parents: list[set[int]] = [set() for _ in range(n)]
    children: list[set[int]] = [set() for _ in range(n)]
    for a, b in arcs:
        parents[b].add(a)
        children[a].add(b)

    def undirected(v: int) -> set[int]:
        return adj[v] - parents[v] - children[v]

    def fires(a: int, b: int) -> bool:
        und_a = undirected(a)
        # R1
        if any(c != b and c not in adj[b] for c in parents[a]):
            return True
        # R2
        if children[a] & parents[b]:
            return True
        # R3
        cands = sorted(und_a & parents[b])
        for i, c in enumerate(cands):
            for d in cands[i + 1 :]:
                if d not in adj[c]:
                    return True
        # R4
        for c in sorted(parents[b] & adj[a]):
            for d in sorted(parents[c] & und_a):
                if d != b and d not in adj[b]:
                    return True
        return False

    changed = True
    while changed:
        changed = False
        for a in range(n):
            for b in sorted(undirected(a)):
                if (a, b) in forbidden or b not in undirected(a):
                    continue
                if fires(a, b):
                    arcs.add((a, b))
                    parents[b].add(a)
                    children[a].add(b)
                    changed = True
    return arcs


def orient(
    names: Sequence[str],
    adj: Sequence[set[int]],
    sepsets: Mapping[tuple[int, int], tuple[int, ...]],
    forced_arcs: frozenset[Arc] = frozenset(),
) -> Orientation:
    """Orient a skeleton into a CPDAG (see the module docstring for the procedure).

    ``sepsets`` is keyed by ``(x, y)`` with ``x < y``. ``forced_arcs`` are the arcs
    background knowledge requires (including reversed forbidden arcs).
    """
    n = len(names)
    claims: set[Arc] = set()
    vstructs: list[tuple[int, int, int]] = []
    for (x, y), sep in sorted(sepsets.items()):
        if y in adj[x]:
            continue
        sep_set = set(sep)
        for z in sorted(adj[x] & adj[y]):
            if z not in sep_set:
                vstructs.append((x, z, y))
                claims.add((x, z))
                claims.add((y, z))
    conflicts = sorted({(min(a, b), max(a, b)) for a, b in claims if (b, a) in claims})
    conflict_set = set(conflicts)
    arcs = {(a, b) for a, b in claims if (min(a, b), max(a, b)) not in conflict_set}
    for a, b in sorted(forced_arcs):
        if b in adj[a]:
            arcs.discard((b, a))
            arcs.add((a, b))
    forbidden = {(b, a) for a, b in forced_arcs}
    for a, b in conflicts:  # conflict edges stay undirected: Meek may not orient them
        forbidden.add((a, b))
        forbidden.add((b, a))
    arcs = meek_closure(adj, arcs, frozenset(forbidden))
    undirected = [(a, b) for a in range(n) for b in adj[a] if a < b and (a, b) not in arcs
                  and (b, a) not in arcs]
    cpdag = CPDAG(names, [(names[a], names[b]) for a, b in arcs],
                  [(names[a], names[b]) for a, b in undirected])
    return Orientation(cpdag, tuple(vstructs), tuple(conflicts))


def cpdag_of_dag(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> CPDAG:
    """The CPDAG of a DAG: v-structure arcs, closed under Meek's rules.

    Raises :class:`GraphError` on unknown nodes, duplicate or self edges, or a cycle.
    """
    pos = {name: i for i, name in enumerate(nodes)}
    if len(pos) != len(nodes):
        raise GraphError("from_dag: duplicate node names")
    n = len(nodes)
    adj: list[set[int]] = [set() for _ in range(n)]
    dag_arcs: set[Arc] = set()
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for a_name, b_name in edges:
        for end in (a_name, b_name):
            if end not in pos:
                raise GraphError(f"from_dag: unknown node {end!r}")
        a, b = pos[a_name], pos[b_name]
        if a == b:
            raise GraphError(f"from_dag: self-loop on {a_name!r}")
        if b in adj[a]:
            raise GraphError(f"from_dag: more than one edge between {a_name!r} and {b_name!r}")
        adj[a].add(b)
        adj[b].add(a)
        dag_arcs.add((a, b))
        g.add_edge(a, b)
    if not nx.is_directed_acyclic_graph(g):
        cycle = [nodes[u] for u, _ in nx.find_cycle(g)]
        raise GraphError(f"from_dag: the edges contain a cycle through {cycle}")
    parents: list[list[int]] = [sorted(a for a, b in dag_arcs if b == v) for v in range(n)]
    arcs: set[Arc] = set()
    for z in range(n):
        ps = parents[z]
        for i, x in enumerate(ps):
            for y in ps[i + 1 :]:
                if y not in adj[x]:
                    arcs.add((x, z))
                    arcs.add((y, z))
    arcs = meek_closure(adj, arcs)
    undirected = [(a, b) for a in range(n) for b in adj[a] if a < b and (a, b) not in arcs
                  and (b, a) not in arcs]
    return CPDAG(nodes, [(nodes[a], nodes[b]) for a, b in arcs],
                 [(nodes[a], nodes[b]) for a, b in undirected])
