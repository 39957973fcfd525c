"""Graph value types: the CPDAG that discovery returns.

A :class:`CPDAG` (completed partially directed acyclic graph) represents a Markov
equivalence class of DAGs: directed edges are compelled (every DAG of the class has
them), undirected edges are reversible. PC returns a CPDAG; when its tests err it can
return a graph that is not a valid CPDAG of any DAG, and :class:`CPDAG` holds that too
(it only requires that each node pair carries at most one edge).

Edges are stored by node name. An undirected edge ``{a, b}`` is stored once, as the
pair ordered by the nodes' positions in :attr:`CPDAG.nodes`.

Meek's rules (:func:`meek_closure`) and the CPDAG of a DAG (:func:`cpdag_of_dag`, behind
:meth:`CPDAG.from_dag`) live here too: they are facts about Markov equivalence classes,
which :mod:`dpcg.pc.orientation` uses to orient a learned skeleton.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import networkx as nx

from dpcg.errors import GraphError

#: Edge attribute set by :meth:`CPDAG.to_networkx` on every arc of the DiGraph.
EDGE_KIND = "kind"
DIRECTED = "directed"
UNDIRECTED = "undirected"

__all__ = [
    "CPDAG", "DIRECTED", "EDGE_KIND", "UNDIRECTED", "Arc", "Edge", "GraphError", "cpdag_of_dag",
    "meek_closure",
]


Edge = tuple[str, str]
#: An arc ``a -> b`` between node positions.
Arc = tuple[int, int]


def _as_name_pair(nodes: Sequence[str], edge: Sequence[object], what: str) -> Edge:
    if isinstance(edge, str | bytes) or len(edge) != 2:
        raise GraphError(f"{what}: each edge must be a pair of node names, got {edge!r}")
    out: list[str] = []
    for end in edge:
        if isinstance(end, int) and not isinstance(end, bool):
            if not 0 <= end < len(nodes):
                raise GraphError(f"{what}: node index {end} out of range 0..{len(nodes) - 1}")
            out.append(nodes[end])
        elif isinstance(end, str):
            out.append(end)
        else:
            raise GraphError(f"{what}: edge end {end!r} is neither a node name nor an index")
    return out[0], out[1]


@dataclass(frozen=True)
class CPDAG:
    """A partially directed graph over named nodes (the output of PC).

    ``directed`` holds arcs ``(tail, head)``; ``undirected`` holds unordered pairs,
    normalised so that the first node comes first in ``nodes``. Both accept node names
    or integer positions; they are stored as names in a ``frozenset``.
    """

    nodes: tuple[str, ...]
    directed: frozenset[Edge]
    undirected: frozenset[Edge]

    def __init__(
        self,
        nodes: Iterable[str],
        directed: Iterable[Sequence[object]] = (),
        undirected: Iterable[Sequence[object]] = (),
    ) -> None:
        node_tuple = tuple(nodes)
        for name in node_tuple:
            if not isinstance(name, str) or not name:
                raise GraphError(f"nodes: every node name must be a non-empty string, got {name!r}")
        if len(set(node_tuple)) != len(node_tuple):
            dupes = sorted({n for n in node_tuple if node_tuple.count(n) > 1})
            raise GraphError(f"nodes: duplicate node names {dupes}")
        position = {name: i for i, name in enumerate(node_tuple)}

        seen: dict[frozenset[str], str] = {}

        def check(pair: Edge, what: str) -> None:
            a, b = pair
            for end in pair:
                if end not in position:
                    raise GraphError(f"{what}: unknown node {end!r}")
            if a == b:
                raise GraphError(f"{what}: self-loop on {a!r}")
            key = frozenset(pair)
            if key in seen:
                raise GraphError(
                    f"{what}: the pair {a!r}, {b!r} already carries an edge ({seen[key]}); "
                    "a CPDAG has at most one edge per node pair"
                )
            seen[key] = what

        arcs: set[Edge] = set()
        for edge in directed:
            pair = _as_name_pair(node_tuple, edge, "directed")
            check(pair, "directed")
            arcs.add(pair)
        lines: set[Edge] = set()
        for edge in undirected:
            a, b = _as_name_pair(node_tuple, edge, "undirected")
            check((a, b), "undirected")
            lines.add((a, b) if position[a] < position[b] else (b, a))
        object.__setattr__(self, "nodes", node_tuple)
        object.__setattr__(self, "directed", frozenset(arcs))
        object.__setattr__(self, "undirected", frozenset(lines))

    # ------------------------------------------------------------------ queries
    def index(self, name: str) -> int:
        """Position of ``name`` in :attr:`nodes`."""
        try:
            return self.nodes.index(name)
        except ValueError:
            raise GraphError(f"unknown node {name!r}") from None

    def skeleton(self) -> frozenset[frozenset[str]]:
        """The adjacencies, as unordered node pairs."""
        return frozenset(frozenset(e) for e in self.directed | self.undirected)

    def edge_marks(self) -> dict[frozenset[str], Edge | None]:
        """For each adjacent pair, its arc ``(tail, head)`` or ``None`` if undirected."""
        marks: dict[frozenset[str], Edge | None] = {frozenset(e): None for e in self.undirected}
        for arc in self.directed:
            marks[frozenset(arc)] = arc
        return marks

    def sorted_directed(self) -> list[Edge]:
        """Arcs sorted by node position (stable output order)."""
        pos = {n: i for i, n in enumerate(self.nodes)}
        return sorted(self.directed, key=lambda e: (pos[e[0]], pos[e[1]]))

    def sorted_undirected(self) -> list[Edge]:
        """Undirected edges sorted by node position."""
        pos = {n: i for i, n in enumerate(self.nodes)}
        return sorted(self.undirected, key=lambda e: (pos[e[0]], pos[e[1]]))

    @property
    def n_edges(self) -> int:
        return len(self.directed) + len(self.undirected)

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_dag(cls, nodes: Iterable[str], edges: Iterable[Sequence[object]]) -> CPDAG:
        """The CPDAG (essential graph) of a DAG: its Markov equivalence class.

        Keeps the arcs of the DAG's v-structures, then closes the orientation under
        Meek's rules R1-R3 (Meek 1995, which shows they are complete here).
        Raises :class:`GraphError` if ``edges`` contain a cycle.
        """
        node_tuple = tuple(nodes)
        pairs = [_as_name_pair(node_tuple, e, "edges") for e in edges]
        return cpdag_of_dag(node_tuple, pairs)

    # ------------------------------------------------------------------ exports
    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph``: an arc per directed edge, both arcs per undirected one.

        Every arc carries the attribute ``kind`` = ``"directed"`` or ``"undirected"``.
        """
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        for a, b in self.sorted_directed():
            g.add_edge(a, b, **{EDGE_KIND: DIRECTED})
        for a, b in self.sorted_undirected():
            g.add_edge(a, b, **{EDGE_KIND: UNDIRECTED})
            g.add_edge(b, a, **{EDGE_KIND: UNDIRECTED})
        return g

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict.

        ``{"nodes": [...], "edges": {"directed": [[a, b], ...], "undirected": [...]}}``.
        """
        return {
            "nodes": list(self.nodes),
            "edges": {
                "directed": [list(e) for e in self.sorted_directed()],
                "undirected": [list(e) for e in self.sorted_undirected()],
            },
        }

    def dumps(self) -> str:
        """:meth:`to_json` as a JSON string."""
        return json.dumps(self.to_json(), indent=2)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> CPDAG:
        """Inverse of :meth:`to_json` (also accepts the JSON text)."""
        if isinstance(data, str):
            try:
                data = cast(Mapping[str, Any], json.loads(data))
            except json.JSONDecodeError as exc:
                raise GraphError(f"CPDAG JSON: not valid JSON ({exc})") from None
        if not isinstance(data, Mapping) or "nodes" not in data:
            raise GraphError("CPDAG JSON: expected an object with 'nodes' and 'edges'")
        edges = data.get("edges", {})
        if not isinstance(edges, Mapping):
            raise GraphError("CPDAG JSON: 'edges' must be an object")
        return cls(data["nodes"], edges.get("directed", ()), edges.get("undirected", ()))

    def to_dot(self, name: str = "cpdag") -> str:
        """Graphviz DOT text: ``a -> b`` for arcs, ``a -> b [dir=none]`` for undirected."""

        def q(s: str) -> str:
            return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

        lines = [f"digraph {q(name)} {{"]
        lines.extend(f"  {q(n)};" for n in self.nodes)
        lines.extend(f"  {q(a)} -> {q(b)};" for a, b in self.sorted_directed())
        lines.extend(f"  {q(a)} -> {q(b)} [dir=none];" for a, b in self.sorted_undirected())
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_graphml(self) -> str:
        """GraphML text of :meth:`to_networkx` (written by networkx)."""
        buf = io.BytesIO()
        nx.write_graphml(self.to_networkx(), buf)
        return buf.getvalue().decode("utf-8")

    def __repr__(self) -> str:
        arcs = ", ".join(f"{a}->{b}" for a, b in self.sorted_directed())
        lines = ", ".join(f"{a}-{b}" for a, b in self.sorted_undirected())
        return f"CPDAG(nodes={len(self.nodes)}, directed=[{arcs}], undirected=[{lines}])"


# ------------------------------------------------------------ Meek's rules


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
