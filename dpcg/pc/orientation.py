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
3. **Meek's rules R1-R4** (Meek 1995; :func:`dpcg.graph.meek_closure`) are applied to
   a fixed point, visiting undirected edges in node order; no rule orients an edge
   against background knowledge. The rules only orient undirected edges; they never
   reverse an arc.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dpcg.graph import CPDAG, Arc, cpdag_of_dag, meek_closure

__all__ = ["Arc", "Orientation", "cpdag_of_dag", "meek_closure", "orient"]


@dataclass(frozen=True)
class Orientation:
    """The oriented graph plus what happened on the way (for reports and debugging)."""

    cpdag: CPDAG
    v_structures: tuple[tuple[int, int, int], ...]  # (x, z, y): x -> z <- y, x < y
    conflicts: tuple[tuple[int, int], ...]  # edges (a, b), a < b, left undirected


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
