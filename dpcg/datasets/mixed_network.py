"""Generated mixed networks: discrete and continuous nodes in one DAG, from a seed.

``mixed_network(MixedSpec(...))`` draws, in this fixed order (part of the definition):

1. a DAG: a uniformly random topological order of the ``nodes`` nodes; the node at
   position ``i`` gets ``k ~ Uniform{0, ..., min(max_parents, i)}`` parents chosen
   uniformly without replacement among the nodes before it (as
   :mod:`dpcg.datasets.random_network`);
2. which nodes are continuous: exactly ``round(continuous_share * nodes)`` of them,
   chosen uniformly; the others are discrete with ``Uniform{card_lo..card_hi}`` states;
3. the conditional laws, node by node in topological order:

   * a **continuous** node ``X = c (sum_k w_k g_k(P_k) + sum_d a_d[P_d]) + m + s e``,
     ``e ~ N(0, 1)``: each continuous parent ``P_k`` enters through a link ``g_k``,
     the identity (linear) or, with probability ``nonlinear``, one of ``tanh(1.5 x)``,
     ``sin(2 x)``, ``(x^2 - 1) / sqrt 2``; each discrete parent ``P_d`` shifts the mean by
     ``a_d[state]`` (``a_d ~ N(0, 1)`` per state, centred); weights ``|w_k| ~ U[0.5, 1.5]``
     with random signs. ``c``, ``m`` and ``s`` make the node's mean 0 and variance 1
     with a share ``r2 ~ U[r2_low, r2_high]`` explained by the parents. They are set
     from a pilot sample drawn inside the generator (part of the model, fixed by the
     seed, never from the data a user samples), as in :func:`dpcg.datasets.sem.random_sem`.
   * a **discrete** node with ``c`` states: ``P(V = k | parents) = softmax_k(b_k +
     sum_d B_d[P_d, k] + sum_k' u_k'k P_k')``: a conditional-probability shift per state
     of each discrete parent (``B_d ~ N(0, strength^2)``) and a multinomial-logistic
     (softmax) link in each continuous parent (``u ~ N(0, strength^2)``), intercepts
     ``b ~ N(0, 0.5^2)``.

4. every continuous node is declared with the public bounds ``[-bound, bound]``
   (default 5: five standard deviations of a unit-variance node) and clipped to them
   when sampled; a clipped value feeds its children (bounds from the design, never from
   a sample).

Nodes are called ``X0 .. X{P-1}`` (column order; the topological order is the random
one) and the states of a discrete node ``s0 .. s{c-1}``. The spec has a canonical name
``mixed:nodes=20,share=0.5,max_parents=3,card=2-4,nonlinear=0.5,seed=1``
(:func:`parse_mixed_spec` reads it back). The randomness here makes synthetic data, not
privacy noise (``dpcg/datasets`` is allowlisted in ``tests/test_layering.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data import Categorical, Continuous, Dataset, Schema
from dpcg.errors import DataValidationError
from dpcg.graph import CPDAG, cpdag_of_dag

__all__ = [
    "MIXED_PREFIX",
    "MixedNetwork",
    "MixedNode",
    "MixedSpec",
    "mixed_network",
    "null_mixed_table",
    "parse_mixed_spec",
]

#: Names of generated mixed networks start with this prefix.
MIXED_PREFIX = "mixed:"
MAX_NODES = 10_000
MAX_CARDINALITY = 100
#: Largest number of discrete parent configurations of one node's shift table.
MAX_TABLE = 1_000_000
PILOT_ROWS = 20_000
#: Link functions of continuous parents of a continuous node.
LINKS = ("identity", "tanh", "sin", "quad")

_KEYS = ("nodes", "share", "max_parents", "card", "nonlinear", "strength", "seed", "bound")

Floats = NDArray[np.float64]


def _link(code: int, x: Floats) -> Floats:
    if code == 1:
        return np.tanh(1.5 * x)
    if code == 2:
        return np.sin(2.0 * x)
    if code == 3:
        out: Floats = (x * x - 1.0) / math.sqrt(2.0)
        return out
    return x


@dataclass(frozen=True)
class MixedSpec:
    """Parameters of one generated mixed network (all public; validated)."""

    nodes: int
    continuous_share: float = 0.5
    max_parents: int = 3
    card_lo: int = 2
    card_hi: int = 4
    nonlinear: float = 0.5
    strength: float = 1.0
    seed: int = 0
    bound: float = 5.0
    r2_low: float = 0.4
    r2_high: float = 0.8

    def __post_init__(self) -> None:
        def _int(name: str, v: object, lo: int, hi: int) -> None:
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise DataValidationError(f"mixed network: {name} must be an integer, "
                                          f"got {v!r}")
            if not lo <= int(v) <= hi:
                raise DataValidationError(f"mixed network: {name}={v} must be between "
                                          f"{lo} and {hi}")

        def _num(name: str, v: object, lo: float, hi: float, open_lo: bool = False) -> None:
            if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
                raise DataValidationError(f"mixed network: {name} must be a number, got {v!r}")
            x = float(v)
            if not (math.isfinite(x) and (lo < x if open_lo else lo <= x) and x <= hi):
                raise DataValidationError(f"mixed network: {name}={v!r} must be in "
                                          f"{'(' if open_lo else '['}{lo:g}, {hi:g}]")

        _int("nodes", self.nodes, 1, MAX_NODES)
        _int("max_parents", self.max_parents, 0, MAX_NODES)
        _int("card low", self.card_lo, 2, MAX_CARDINALITY)
        _int("card high", self.card_hi, 2, MAX_CARDINALITY)
        if self.card_lo > self.card_hi:
            raise DataValidationError(
                f"mixed network: card={self.card_lo}-{self.card_hi} has low > high")
        _int("seed", self.seed, 0, 2**63 - 1)
        _num("continuous share", self.continuous_share, 0.0, 1.0)
        _num("nonlinear", self.nonlinear, 0.0, 1.0)
        _num("strength", self.strength, 0.0, 100.0)
        _num("bound", self.bound, 0.5, 1e6, open_lo=False)
        _num("r2_low", self.r2_low, 0.0, 1.0, open_lo=True)
        _num("r2_high", self.r2_high, 0.0, 1.0, open_lo=True)
        if not self.r2_low <= self.r2_high < 1.0:
            raise DataValidationError("mixed network: need 0 < r2_low <= r2_high < 1")
        k = min(self.max_parents, self.nodes - 1)
        if float(self.card_hi) ** (k + 1) > MAX_TABLE:
            raise DataValidationError(
                f"mixed network: a discrete node with {k} discrete parents of "
                f"{self.card_hi} states would need a table of "
                f"{float(self.card_hi) ** (k + 1):.3g} entries (limit {MAX_TABLE:.0e}); "
                "lower max_parents or the high cardinality")

    @property
    def name(self) -> str:
        """Canonical name (every key that defines the network): parses back to this spec."""
        card = str(self.card_lo) if self.card_lo == self.card_hi \
            else f"{self.card_lo}-{self.card_hi}"
        return (f"{MIXED_PREFIX}nodes={self.nodes},share={float(self.continuous_share):g},"
                f"max_parents={self.max_parents},card={card},"
                f"nonlinear={float(self.nonlinear):g},strength={float(self.strength):g},"
                f"seed={self.seed},bound={float(self.bound):g}")


def parse_mixed_spec(name: str) -> MixedSpec:
    """Parse ``mixed:key=value,...`` (keys: ``nodes`` required, ``share``,
    ``max_parents``, ``card`` (``LO-HI`` or ``C``), ``nonlinear``, ``strength``,
    ``seed``, ``bound``) into a spec; errors name the offending key."""
    if not isinstance(name, str) or not name.startswith(MIXED_PREFIX):
        raise DataValidationError(f"a mixed network spec starts with {MIXED_PREFIX!r}, "
                                  f"got {name!r}")
    values: dict[str, str] = {}
    body = name[len(MIXED_PREFIX):].strip()
    for part in body.split(",") if body else []:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise DataValidationError(f"mixed network spec: {part.strip()!r} is not "
                                      f"key=value with a key of {', '.join(_KEYS)}")
        if key in values:
            raise DataValidationError(f"mixed network spec: key {key!r} given twice")
        values[key] = value.strip()
    if "nodes" not in values:
        raise DataValidationError("mixed network spec: 'nodes' is required")

    def _int(key: str) -> int:
        text = values[key]
        if not text.lstrip("+-").isdigit():
            raise DataValidationError(f"mixed network spec: {key}={text!r} is not an integer")
        return int(text)

    def _float(key: str) -> float:
        try:
            return float(values[key])
        except ValueError:
            raise DataValidationError(
                f"mixed network spec: {key}={values[key]!r} is not a number") from None

    kwargs: dict[str, Any] = {"nodes": _int("nodes")}
    for key, field_name in (("max_parents", "max_parents"), ("seed", "seed")):
        if key in values:
            kwargs[field_name] = _int(key)
    for key, field_name in (("share", "continuous_share"), ("nonlinear", "nonlinear"),
                            ("strength", "strength"), ("bound", "bound")):
        if key in values:
            kwargs[field_name] = _float(key)
    if "card" in values:
        lo_text, dash, hi_text = values["card"].partition("-")
        values["card_lo"], values["card_hi"] = lo_text, hi_text if dash else lo_text
        kwargs["card_lo"], kwargs["card_hi"] = _int("card_lo"), _int("card_hi")
    return MixedSpec(**kwargs)


@dataclass(frozen=True)
class MixedNode:
    """The conditional law of one node (see the module docstring).

    Continuous: ``links``/``weights`` per continuous parent, ``shifts`` (one
    ``(card,)`` array per discrete parent), ``scale``, ``offset``, ``noise_sd``.
    Discrete: ``intercepts`` ``(card,)``, ``shifts`` (one ``(card_parent, card)`` array
    per discrete parent) and ``weights`` ``(n_cont_parents, card)``.
    """

    name: str
    card: int | None
    cont_parents: tuple[int, ...]
    disc_parents: tuple[int, ...]
    links: tuple[int, ...]
    weights: Floats
    shifts: tuple[Floats, ...]
    intercepts: Floats
    scale: float
    offset: float
    noise_sd: float


@dataclass(frozen=True)
class MixedNetwork:
    """A generated mixed network: nodes in column order, a topological order, the laws."""

    spec: MixedSpec
    nodes: tuple[MixedNode, ...]
    order: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.nodes)

    @property
    def dag_edges(self) -> tuple[tuple[str, str], ...]:
        """The true DAG, ``(parent, child)`` pairs sorted by child then parent."""
        out = []
        for v in self.nodes:
            for k in sorted(v.cont_parents + v.disc_parents):
                out.append((self.nodes[k].name, v.name))
        return tuple(out)

    @property
    def cpdag(self) -> CPDAG:
        """The CPDAG (Markov equivalence class) of the true DAG."""
        return cpdag_of_dag(self.names, self.dag_edges)

    @property
    def continuous(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.nodes if v.card is None)

    @property
    def schema(self) -> Schema:
        """Declared schema: continuous nodes with the design's bounds ``[-bound, bound]``,
        discrete nodes categorical with states ``s0 .. s{c-1}``."""
        b = float(self.spec.bound)
        return Schema([Continuous(v.name, -b, b) if v.card is None
                       else Categorical(v.name, [f"s{k}" for k in range(v.card)])
                       for v in self.nodes])

    def _draw(self, n: int, g: np.random.Generator, clip: bool
              ) -> tuple[list[Floats | None], list[NDArray[np.intp] | None]]:
        p = len(self.nodes)
        cont: list[Floats | None] = [None] * p
        disc: list[NDArray[np.intp] | None] = [None] * p
        b = float(self.spec.bound)
        for j in self.order:
            v = self.nodes[j]
            if v.card is None:
                acc = np.zeros(n)
                for k, link, w in zip(v.cont_parents, v.links, v.weights, strict=True):
                    parent = cont[k]
                    assert parent is not None
                    acc += float(w) * _link(link, parent)
                for k, shift in zip(v.disc_parents, v.shifts, strict=True):
                    codes = disc[k]
                    assert codes is not None
                    acc += shift[codes]
                x = v.scale * acc + v.offset + v.noise_sd * g.standard_normal(n)
                cont[j] = np.clip(x, -b, b) if clip else x
            else:
                logits = np.broadcast_to(v.intercepts, (n, v.card)).copy()
                for k, shift in zip(v.disc_parents, v.shifts, strict=True):
                    codes = disc[k]
                    assert codes is not None
                    logits += shift[codes]
                if v.cont_parents:
                    parents = np.stack([cont[k] for k in v.cont_parents  # type: ignore[misc]
                                        ], axis=1)
                    logits += parents @ v.weights
                logits -= logits.max(axis=1, keepdims=True)
                prob = np.exp(logits)
                cum = np.cumsum(prob, axis=1)
                u = g.random(n) * cum[:, -1]
                codes_out = (u[:, None] >= cum).sum(axis=1)
                disc[j] = np.minimum(codes_out, v.card - 1).astype(np.intp)
        return cont, disc

    def sample(self, n: int, seed: int | np.random.Generator) -> Dataset:
        """``n`` rows (continuous values clipped to the declared bounds) as a Dataset."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
            raise DataValidationError(f"mixed network: rows must be a positive int, got {n!r}")
        g = seed if isinstance(seed, np.random.Generator) else _rng(seed)
        cont, disc = self._draw(int(n), g, clip=True)
        columns: list[NDArray[Any]] = []
        for j, v in enumerate(self.nodes):
            col = cont[j] if v.card is None else disc[j]
            assert col is not None
            columns.append(col)
        return Dataset.from_columns(columns, self.schema, encoded=True)


def _rng(seed: object) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise DataValidationError(f"mixed network: seed must be an int >= 0, got {seed!r}")
    return np.random.default_rng(int(seed))


def mixed_network(spec: MixedSpec | str) -> MixedNetwork:
    """The mixed network of ``spec`` (a :class:`MixedSpec` or a ``mixed:...`` name)."""
    sp = parse_mixed_spec(spec) if isinstance(spec, str) else spec
    rng = np.random.default_rng(sp.seed)
    p = sp.nodes
    order = rng.permutation(p)
    parents: dict[int, list[int]] = {}
    for pos in range(p):
        k = int(rng.integers(0, min(sp.max_parents, pos) + 1))
        chosen = rng.choice(pos, size=k, replace=False) if k else np.empty(0, dtype=np.int64)
        parents[int(order[pos])] = sorted(int(order[c]) for c in chosen)
    n_cont = round(float(sp.continuous_share) * p)
    is_cont = np.zeros(p, dtype=bool)
    is_cont[rng.choice(p, size=n_cont, replace=False)] = True
    cards = rng.integers(sp.card_lo, sp.card_hi + 1, size=p)
    card_of: list[int | None] = [None if is_cont[i] else int(cards[i]) for i in range(p)]
    strength = float(sp.strength)
    # laws in topological order; a pilot sample of the nodes built so far fixes c, m, s
    pilot_cont: dict[int, Floats] = {}
    pilot_disc: dict[int, NDArray[np.intp]] = {}
    nodes: dict[int, MixedNode] = {}
    b = float(sp.bound)
    for pos in range(p):
        j = int(order[pos])
        pa = parents[j]
        cpa = tuple(k for k in pa if is_cont[k])
        dpa = tuple(k for k in pa if not is_cont[k])
        name = f"X{j}"
        if is_cont[j]:
            nonlin = rng.random(len(cpa)) < float(sp.nonlinear)
            link_draw = rng.integers(1, len(LINKS), size=len(cpa))
            links = tuple(int(c) if nl else 0 for c, nl in zip(link_draw, nonlin, strict=True))
            weights = rng.uniform(0.5, 1.5, len(cpa)) * rng.choice([-1.0, 1.0], len(cpa))
            shifts = []
            for k in dpa:
                a = rng.standard_normal(card_of[k])
                shifts.append(a - a.mean())
            r2 = float(rng.uniform(sp.r2_low, sp.r2_high))
            acc = np.zeros(PILOT_ROWS)
            for k, link, w in zip(cpa, links, weights, strict=True):
                acc += w * _link(link, pilot_cont[k])
            for k, shift in zip(dpa, shifts, strict=True):
                acc += shift[pilot_disc[k]]
            sd = float(acc.std())
            if pa and sd > 0:
                scale = math.sqrt(r2) / sd
                offset = -scale * float(acc.mean())
                noise = math.sqrt(1.0 - r2)
            else:
                scale, offset, noise = 0.0, 0.0, 1.0
            node = MixedNode(name, None, cpa, dpa, links, np.asarray(weights, dtype=np.float64),
                             tuple(shifts), np.zeros(0), scale, offset, noise)
            e = rng.standard_normal(PILOT_ROWS)
            pilot_cont[j] = np.clip(scale * acc + offset + noise * e, -b, b)
        else:
            c = int(cards[j])
            intercepts = 0.5 * rng.standard_normal(c)
            shifts = [strength * rng.standard_normal((card_of[k], c))  # type: ignore[arg-type]
                      for k in dpa]
            weights = strength * rng.standard_normal((len(cpa), c))
            node = MixedNode(name, c, cpa, dpa, (), weights, tuple(shifts), intercepts,
                             1.0, 0.0, 0.0)
            # the pilot of a discrete node: drawn with the node's own law
            logits = np.broadcast_to(intercepts, (PILOT_ROWS, c)).copy()
            for k, shift in zip(dpa, shifts, strict=True):
                logits += shift[pilot_disc[k]]
            if cpa:
                logits += np.stack([pilot_cont[k] for k in cpa], axis=1) @ weights
            logits -= logits.max(axis=1, keepdims=True)
            cum = np.cumsum(np.exp(logits), axis=1)
            u = rng.random(PILOT_ROWS) * cum[:, -1]
            pilot_disc[j] = np.minimum((u[:, None] >= cum).sum(axis=1), c - 1).astype(np.intp)
        nodes[j] = node
    return MixedNetwork(sp, tuple(nodes[i] for i in range(p)), tuple(int(i) for i in order))


def null_mixed_table(n: int, seed: int, beta: float = 0.0) -> Dataset:
    """A mixed table for level and power studies of mixed CI tests: columns ``X``
    (continuous), ``Y`` (3 states), ``Z`` (3 states), ``W`` (continuous).
    ``X = a[Z] + 0.6 W + beta 1{Y = 2} + e`` and ``Y ~ softmax(B[Z] + u W)``, so
    ``X _||_ Y | {Z, W}`` iff ``beta = 0`` (the null; ``E[X | Z, W]`` is then linear in the
    one-hot/Gaussian embedding). ``W ~ N(0, 1)`` clipped to its declared bounds
    ``[-5, 5]``, ``X`` to ``[-10, 10]``."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise DataValidationError(f"null mixed table: rows must be a positive int, got {n!r}")
    rng = _rng(seed)
    z = rng.integers(0, 3, int(n))
    w = np.clip(rng.standard_normal(int(n)), -5, 5)
    logits = np.array([[0.0, 1.0, -1.0], [1.0, 0.0, 0.5], [-0.5, 0.5, 1.0]])[z] \
        + np.outer(w, [0.0, 0.8, -0.8])
    prob = np.exp(logits)
    prob /= prob.sum(axis=1, keepdims=True)
    y = np.minimum((rng.random(int(n))[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), 2)
    x = np.clip(np.array([-0.7, 0.2, 0.5])[z] + 0.6 * w + float(beta) * (y == 2)
                + rng.standard_normal(int(n)), -10, 10)
    schema = Schema([Continuous("X", -10, 10), Categorical("Y", ["a", "b", "c"]),
                     Categorical("Z", ["0", "1", "2"]), Continuous("W", -5, 5)])
    return Dataset.from_columns([x, y, z, w], schema, encoded=True)
