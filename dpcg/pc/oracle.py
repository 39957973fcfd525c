"""A d-separation oracle: the CI "test" that knows the true DAG.

PC driven by this oracle must return exactly the true CPDAG (the faithfulness
assumption holds by construction). It is used to test the engine without data, and
in the CLI as ``--test dsep`` on bundled networks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from dpcg.errors import GraphError


@dataclass(frozen=True, slots=True)
class OracleResult:
    """Answer of the oracle: independence is exact, there is no statistic."""

    independent: bool
    statistic: float | None = None
    pvalue: float | None = None


class DSeparationOracle:
    """``test(x, y, S)`` answers whether x and y are d-separated by S in the DAG."""

    def __init__(self, names: Sequence[str], dag_edges: Iterable[Sequence[str]]) -> None:
        self.names = tuple(names)
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(range(len(self.names)))
        pos = {n: i for i, n in enumerate(self.names)}
        for edge in dag_edges:
            a, b = edge
            if a not in pos or b not in pos:
                raise GraphError(f"dag_edges: unknown node in {edge!r}")
            self.graph.add_edge(pos[a], pos[b])
        if not nx.is_directed_acyclic_graph(self.graph):
            raise GraphError("dag_edges: the graph has a cycle")
        self.calls = 0

    def test(self, x: int, y: int, S: tuple[int, ...]) -> OracleResult:
        self.calls += 1
        return OracleResult(bool(nx.is_d_separator(self.graph, {x}, {y}, set(S))))
