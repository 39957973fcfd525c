"""Discrete Bayesian networks with a vectorised forward sampler.

The randomness drawn here generates *synthetic benchmark data*; it is not privacy noise
(see ``NON_PRIVACY_RANDOMNESS`` in ``tests/test_layering.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcg.data import Categorical, Dataset, Schema, code_dtype
from dpcg.errors import DataValidationError, GraphError

__all__ = ["BayesianNetwork"]


class BayesianNetwork:
    """A discrete Bayesian network: named nodes, ordered states, parents and CPTs.

    * ``nodes``: node names in declaration (BIF) order; this is also the column order
      of sampled data.
    * ``states[v]``: the states of ``v`` in declared order (codes are positions).
    * ``parents[v]``: the parents of ``v`` in declared order.
    * ``cpts[v]``: float64 array of shape ``(*parent_cardinalities, cardinality)``;
      ``cpts[v][i_1, ..., i_k, :]`` is ``P(v | parents = states i_1..i_k)``.

    The mappings and arrays are read-only (bundled networks are cached and shared).
    """

    def __init__(
        self,
        name: str,
        states: Mapping[str, Sequence[str]],
        parents: Mapping[str, Sequence[str]],
        cpts: Mapping[str, ArrayLike],
        *,
        atol: float = 1e-6,
    ) -> None:
        self.name = name
        self.nodes: tuple[str, ...] = tuple(states)
        self.states: Mapping[str, tuple[str, ...]] = MappingProxyType(
            {v: tuple(states[v]) for v in self.nodes}
        )
        for v, st in self.states.items():
            if not st:
                raise GraphError(f"network {name!r}: node {v!r} has no states")
        if set(parents) != set(self.nodes) or set(cpts) != set(self.nodes):
            raise GraphError(f"network {name!r}: states, parents and cpts must have the same keys")
        parent_map: dict[str, tuple[str, ...]] = {}
        for v in self.nodes:
            pars = tuple(parents[v])
            for p in pars:
                if p not in self.states:
                    raise GraphError(f"network {name!r}: parent {p!r} of {v!r} is not a node")
                if p == v:
                    raise GraphError(f"network {name!r}: {v!r} is its own parent")
            if len(set(pars)) != len(pars):
                raise GraphError(f"network {name!r}: {v!r} lists a parent twice")
            parent_map[v] = pars
        self.parents: Mapping[str, tuple[str, ...]] = MappingProxyType(parent_map)
        cpt_map: dict[str, NDArray[np.float64]] = {}
        for v in self.nodes:
            shape = (*(len(self.states[p]) for p in self.parents[v]), len(self.states[v]))
            cpt = np.array(cpts[v], dtype=np.float64)
            if cpt.shape != shape:
                raise GraphError(
                    f"network {name!r}: CPT of {v!r} has shape {cpt.shape}, expected {shape}"
                )
            if not np.all(np.isfinite(cpt)) or np.any(cpt < 0):
                raise GraphError(
                    f"network {name!r}: CPT of {v!r} has negative or non-finite entries"
                )
            if not np.allclose(cpt.sum(axis=-1), 1.0, rtol=0.0, atol=atol):
                raise GraphError(f"network {name!r}: CPT rows of {v!r} do not sum to 1")
            cpt.flags.writeable = False
            cpt_map[v] = cpt
        self.cpts: Mapping[str, NDArray[np.float64]] = MappingProxyType(cpt_map)
        self.topological_order: tuple[str, ...] = self._topological_order()
        self._cdf: dict[str, NDArray[np.float64]] = {}

    # -- structure ---------------------------------------------------------------------
    def _topological_order(self) -> tuple[str, ...]:
        """Kahn's algorithm; ties broken by declaration order (deterministic)."""
        position = {v: i for i, v in enumerate(self.nodes)}
        children: dict[str, list[str]] = {v: [] for v in self.nodes}
        indegree = {v: len(self.parents[v]) for v in self.nodes}
        for v in self.nodes:
            for p in self.parents[v]:
                children[p].append(v)
        ready = sorted((v for v in self.nodes if indegree[v] == 0), key=position.__getitem__)
        order: list[str] = []
        while ready:
            v = ready.pop(0)
            order.append(v)
            for c in children[v]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
            ready.sort(key=position.__getitem__)
        if len(order) != len(self.nodes):
            stuck = [v for v in self.nodes if indegree[v] > 0]
            raise GraphError(
                f"network {self.name!r}: the parent relation has a cycle among {stuck}"
            )
        return tuple(order)

    @property
    def dag_edges(self) -> tuple[tuple[str, str], ...]:
        """``(parent, child)`` pairs, by child in node order, parents in declared order."""
        return tuple((p, v) for v in self.nodes for p in self.parents[v])

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return tuple(len(self.states[v]) for v in self.nodes)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_edges(self) -> int:
        return sum(len(self.parents[v]) for v in self.nodes)

    def index(self, node: str) -> int:
        try:
            return self.nodes.index(node)
        except ValueError:
            raise GraphError(f"network {self.name!r} has no node {node!r}") from None

    def conditional(self, node: str) -> NDArray[np.float64]:
        """CPT of ``node`` as a ``(parent configurations, cardinality)`` matrix.

        Parent configurations are numbered row-major over the parents in declared order
        (the last parent varies fastest).
        """
        cpt = self.cpts[node]
        out: NDArray[np.float64] = cpt.reshape(-1, cpt.shape[-1])
        return out

    def schema(self) -> Schema:
        """All columns categorical, with the BIF state names in BIF order."""
        return Schema([Categorical(v, self.states[v]) for v in self.nodes])

    def to_networkx(self) -> Any:
        """The DAG as a ``networkx.DiGraph`` (node attribute ``states``)."""
        import networkx as nx

        graph = nx.DiGraph()
        for v in self.nodes:
            graph.add_node(v, states=list(self.states[v]))
        graph.add_edges_from(self.dag_edges)
        return graph

    def true_cpdag(self) -> Any:
        """The CPDAG of the true DAG (a :class:`dpcg.graph.CPDAG`)."""
        from dpcg.graph import CPDAG

        return CPDAG.from_dag(self.nodes, self.dag_edges)

    def __repr__(self) -> str:
        return f"BayesianNetwork({self.name!r}, nodes={self.n_nodes}, edges={self.n_edges})"

    def to_bif(self, *, form: str = "rows") -> str:
        """The network as BIF text (``form="rows"``: one line per parent configuration;
        ``form="table"``: one flat ``table`` per node). ``repr`` floats round-trip exactly.
        """
        if form not in ("rows", "table"):
            raise GraphError(f"form must be 'rows' or 'table', got {form!r}")

        def name(text: str) -> str:
            bare = text and all(ch.isalnum() or ch in "_-.+" for ch in text)
            return text if bare else '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

        lines = [f"network {name(self.name)} {{", "}"]
        for v in self.nodes:
            states = ", ".join(name(s) for s in self.states[v])
            lines += [f"variable {name(v)} {{",
                      f"  type discrete [ {len(self.states[v])} ] {{ {states} }};", "}"]
        for v in self.nodes:
            pars = self.parents[v]
            head = name(v) + (" | " + ", ".join(name(p) for p in pars) if pars else "")
            lines.append(f"probability ( {head} ) {{")
            probs = self.conditional(v)
            if form == "table" or not pars:
                flat = probs.T.ravel()  # child slowest, last parent fastest
                lines.append("  table " + ", ".join(repr(float(x)) for x in flat) + ";")
            else:
                cards = [len(self.states[p]) for p in pars]
                for r, config in enumerate(np.ndindex(*cards)):
                    labels = ", ".join(name(self.states[p][k]) for p, k in zip(pars, config,
                                                                                strict=True))
                    values = ", ".join(repr(float(x)) for x in probs[r])
                    lines.append(f"  ({labels}) {values};")
            lines.append("}")
        return "\n".join(lines) + "\n"

    # -- sampling ----------------------------------------------------------------------
    def _cumulative(self, node: str) -> NDArray[np.float64]:
        """Cumulative CPT rows without the last column, made safe for inverse-CDF use.

        Entry ``k`` of a row is ``P(X <= k)``; from the last state with positive
        probability on, entries are set to exactly 1.0 so that float rounding can never
        select a zero-probability trailing state (uniforms are in ``[0, 1)``).
        """
        cached = self._cdf.get(node)
        if cached is not None:
            return cached
        probs = self.conditional(node)
        card = probs.shape[1]
        cum = np.cumsum(probs, axis=1)
        last_positive = card - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)
        cum[np.arange(card)[None, :] >= last_positive[:, None]] = 1.0
        out = np.ascontiguousarray(cum[:, :-1])
        self._cdf[node] = out
        return out

    def sample(self, n: int, seed: int | np.random.Generator) -> Dataset:
        """Draw ``n`` rows by vectorised ancestral (forward) sampling.

        One uniform per row and node (a ``(p, n)`` block drawn up front, rows of it in
        node order), consumed by inverse-CDF sampling: for each node in topological
        order, the parent-configuration index of every row is computed at once and the
        code is the number of cumulative-CPT entries ``<= u``. Deterministic given the
        seed.
        """
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise DataValidationError(f"n must be a positive integer, got {n!r}")
        n = int(n)
        if isinstance(seed, np.random.Generator):
            rng = seed
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            rng = np.random.default_rng(int(seed))
        else:
            raise DataValidationError(
                f"seed must be an int or a numpy Generator, got {type(seed).__name__}"
            )
        p = len(self.nodes)
        dtype = code_dtype(self.cardinalities)
        uniforms = rng.random((p, n))
        codes = np.empty((p, n), dtype=dtype)
        position = {v: i for i, v in enumerate(self.nodes)}
        for v in self.topological_order:
            j = position[v]
            cum = self._cumulative(v)
            u = uniforms[j]
            pars = self.parents[v]
            if pars:
                config = np.zeros(n, dtype=np.intp)
                for p_name in pars:
                    config *= len(self.states[p_name])
                    config += codes[position[p_name]]
                rows = cum[config]  # (n, card - 1)
                out = np.count_nonzero(rows <= u[:, None], axis=1)
            else:
                out = np.searchsorted(cum[0], u, side="right")
            codes[j] = out
        return Dataset(self.schema(), codes, None, n)

    def log_likelihood(self, data: Dataset) -> float:
        """Total log-probability of ``data`` (columns in node order) under the network."""
        codes = data.select(list(self.nodes)).codes
        position = {v: i for i, v in enumerate(self.nodes)}
        total = 0.0
        for v in self.nodes:
            config = np.zeros(data.n, dtype=np.intp)
            for p_name in self.parents[v]:
                config *= len(self.states[p_name])
                config += codes[position[p_name]]
            probs = self.conditional(v)[config, codes[position[v]]]
            with np.errstate(divide="ignore"):
                total += float(np.sum(np.log(probs)))
        return total if math.isfinite(total) else -math.inf
