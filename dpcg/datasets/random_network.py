"""Random discrete Bayesian networks: families of benchmark networks from a seed.

``random_network(RandomSpec(...))`` draws

* a DAG: a uniformly random topological order of the ``nodes`` nodes; the node at
  position ``i`` of that order gets ``k ~ Uniform{0, ..., min(max_parents, i)}``
  parents, chosen uniformly without replacement among the nodes before it;
* cardinalities ``~ Uniform{card_lo, ..., card_hi}`` per node;
* CPTs: every row (parent configuration) ``~ Dirichlet(conc, ..., conc)``. The
  concentration ``conc`` is the public dependence-strength knob: small values
  (``0.1``-``0.5``) give near-deterministic rows and strong dependences, ``1`` is
  uniform on the simplex, large values (``10``-``100``) give rows close to uniform and
  weak dependences.

Everything is a deterministic function of the spec (``numpy.random.default_rng(seed)``,
draws in a fixed order), so ``"random:nodes=50,max_parents=3,card=2-5,seed=1,conc=1"``
names one network on every machine. Nodes are called ``X0 .. X{P-1}`` (declaration
order = column order of sampled data; the topological order is the random one) and the
states of a node with ``c`` categories ``s0 .. s{c-1}``.

**Scale-free shape** (``shape=scale-free``, issue 59: networks with hubs). The DAG is
grown by preferential attachment instead: in the random topological order, the node at
position ``i >= 1`` takes ``k ~ Uniform{1, ..., min(max_parents, i)}`` parents (so
``max_parents`` is the maximum in-degree and the network is connected), drawn without
replacement among the nodes before it with probability proportional to
``(1 + out_degree)^exponent`` (the out-degrees so far; ``exponent=0`` is uniform
attachment, ``1`` linear preferential attachment, larger values fewer and bigger hubs).
Cardinalities and CPTs are drawn as above (the same ``conc`` knob).

Spec syntax (:func:`parse_random_spec`): ``random:`` followed by comma-separated
``key=value`` pairs, keys ``nodes`` (required), ``max_parents`` (default 3), ``card``
(``LO-HI`` or a single ``C``; default ``2-4``), ``seed`` (default 0), ``conc``
(default 1), ``shape`` (``uniform``, the default, or ``scale-free``) and ``exponent``
(scale-free only; default 1, in ``[0, 4]``). A uniform network's name and draws are
those from before the shape existed. The randomness here makes synthetic data, not
privacy noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.datasets.network import BayesianNetwork
from dpcg.errors import DataValidationError

__all__ = [
    "MAX_CARDINALITY",
    "MAX_CPT_ENTRIES",
    "MAX_NODES",
    "RANDOM_PREFIX",
    "SHAPES",
    "RandomSpec",
    "parse_random_spec",
    "random_network",
]

#: Dataset names starting with this prefix are generated, not bundled.
RANDOM_PREFIX = "random:"
#: Upper limits (keep a mistyped spec from allocating gigabytes).
MAX_NODES = 10_000
MAX_CARDINALITY = 1_000
#: Largest CPT (parent configurations x cardinality) of one node.
MAX_CPT_ENTRIES = 10_000_000

_KEYS = ("nodes", "max_parents", "card", "seed", "conc", "shape", "exponent")
#: The DAG shapes of :class:`RandomSpec`.
SHAPES = ("uniform", "scale-free")


@dataclass(frozen=True)
class RandomSpec:
    """Parameters of one random network (all public; validated on construction)."""

    nodes: int
    max_parents: int = 3
    card_lo: int = 2
    card_hi: int = 4
    seed: int = 0
    conc: float = 1.0
    shape: str = "uniform"
    exponent: float = 1.0

    def __post_init__(self) -> None:
        def _int(name: str, v: object, lo: int, hi: int) -> None:
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise DataValidationError(f"random network: {name} must be an integer, got {v!r}")
            if not lo <= int(v) <= hi:
                raise DataValidationError(
                    f"random network: {name}={v} must be between {lo} and {hi}"
                )

        _int("nodes", self.nodes, 1, MAX_NODES)
        _int("max_parents", self.max_parents, 0, MAX_NODES)
        _int("card low", self.card_lo, 2, MAX_CARDINALITY)
        _int("card high", self.card_hi, 2, MAX_CARDINALITY)
        if self.card_lo > self.card_hi:
            raise DataValidationError(
                f"random network: card={self.card_lo}-{self.card_hi} has low > high"
            )
        _int("seed", self.seed, 0, 2**63 - 1)
        c = self.conc
        if isinstance(c, bool) or not isinstance(c, int | float | np.integer | np.floating):
            raise DataValidationError(f"random network: conc must be a number, got {c!r}")
        if not (math.isfinite(float(c)) and 1e-3 <= float(c) <= 1e6):
            raise DataValidationError(
                f"random network: conc={c!r} must be a finite number in [0.001, 1e6]"
            )
        if self.shape not in SHAPES:
            raise DataValidationError(
                f"random network: shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")
        e = self.exponent
        if isinstance(e, bool) or not isinstance(e, int | float | np.integer | np.floating) \
                or not (math.isfinite(float(e)) and 0.0 <= float(e) <= 4.0):
            raise DataValidationError(
                f"random network: exponent must be a number in [0, 4], got {e!r}")
        if self.shape == "uniform" and float(e) != 1.0:
            raise DataValidationError(
                "random network: exponent applies to shape=scale-free only")
        worst = float(self.card_hi) ** (min(self.max_parents, self.nodes - 1) + 1)
        if worst > MAX_CPT_ENTRIES:
            raise DataValidationError(
                f"random network: a node with {min(self.max_parents, self.nodes - 1)} parents "
                f"of {self.card_hi} states would need a CPT of {worst:.3g} entries (limit "
                f"{MAX_CPT_ENTRIES:.0e}); lower max_parents or the high cardinality"
            )

    @property
    def name(self) -> str:
        """Canonical dataset name (every key, normalised): parses back to this spec."""
        card = str(self.card_lo) if self.card_lo == self.card_hi \
            else f"{self.card_lo}-{self.card_hi}"
        name = (f"{RANDOM_PREFIX}nodes={self.nodes},max_parents={self.max_parents},"
                f"card={card},seed={self.seed},conc={float(self.conc):g}")
        if self.shape != "uniform":
            name += f",shape={self.shape},exponent={float(self.exponent):g}"
        return name


def _parse_int(key: str, text: str) -> int:
    t = text.strip()
    if not t or not (t.isdigit() or (t[0] in "+-" and t[1:].isdigit())):
        raise DataValidationError(f"random network spec: {key}={text!r} is not an integer")
    return int(t)


def parse_random_spec(name: str) -> RandomSpec:
    """Parse ``random:key=value,...`` (see the module docstring) into a spec.

    Raises :class:`~dpcg.errors.DataValidationError` naming the offending key: unknown
    or repeated keys, a missing ``nodes``, malformed numbers, out-of-range values.
    """
    if not isinstance(name, str) or not name.startswith(RANDOM_PREFIX):
        raise DataValidationError(
            f"a random network spec starts with {RANDOM_PREFIX!r}, got {name!r}"
        )
    body = name[len(RANDOM_PREFIX):].strip()
    values: dict[str, str] = {}
    for part in body.split(",") if body else []:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise DataValidationError(
                f"random network spec: {part.strip()!r} is not key=value (keys: "
                f"{', '.join(_KEYS)}; e.g. random:nodes=50,max_parents=3,card=2-5,seed=1,conc=1)"
            )
        if key not in _KEYS:
            raise DataValidationError(
                f"random network spec: unknown key {key!r} (keys: {', '.join(_KEYS)})"
            )
        if key in values:
            raise DataValidationError(f"random network spec: key {key!r} given twice")
        values[key] = value
    if "nodes" not in values:
        raise DataValidationError(
            "random network spec: 'nodes' is required (e.g. random:nodes=50,seed=1)"
        )
    kwargs: dict[str, int | float] = {"nodes": _parse_int("nodes", values["nodes"])}
    if "max_parents" in values:
        kwargs["max_parents"] = _parse_int("max_parents", values["max_parents"])
    if "seed" in values:
        kwargs["seed"] = _parse_int("seed", values["seed"])
    if "card" in values:
        lo_text, dash, hi_text = values["card"].strip().partition("-")
        lo = _parse_int("card", lo_text)
        hi = _parse_int("card", hi_text) if dash else lo
        kwargs["card_lo"], kwargs["card_hi"] = lo, hi
    for key in ("conc", "exponent"):
        if key in values:
            try:
                kwargs[key] = float(values[key])
            except ValueError:
                raise DataValidationError(
                    f"random network spec: {key}={values[key]!r} is not a number"
                ) from None
    shape = values.get("shape", "uniform").strip()
    return RandomSpec(**kwargs, shape=shape)  # type: ignore[arg-type]


def _dirichlet_rows(rng: np.random.Generator, rows: int, card: int, conc: float
                    ) -> NDArray[np.float64]:
    """``rows`` independent Dirichlet(conc, ..., conc) rows, via normalised gammas.

    A row whose gammas all underflow to 0 (possible for tiny ``conc``) becomes a point
    mass on the largest log-gamma, which is what the distribution degenerates to.
    """
    g = rng.standard_gamma(conc, size=(rows, card))
    total = g.sum(axis=1, keepdims=True)
    bad = total[:, 0] <= 0
    if np.any(bad):  # pragma: no cover - only for conc far below the 1e-3 floor
        g[bad] = 0.0
        g[bad, 0] = 1.0
        total = g.sum(axis=1, keepdims=True)
    out: NDArray[np.float64] = g / total
    # exact row sums of 1 up to one ulp: put the rounding residue on each row's max
    resid = 1.0 - out.sum(axis=1)
    out[np.arange(rows), np.argmax(out, axis=1)] += resid
    return out


def _preferential(rng: np.random.Generator, order: NDArray[np.int64], max_parents: int,
                  exponent: float) -> dict[int, list[int]]:
    """Parent sets by preferential attachment (module docstring): position ``i >= 1``
    takes ``Uniform{1..min(max_parents, i)}`` parents among positions ``< i``, weights
    ``(1 + out_degree)^exponent``."""
    p = int(order.shape[0])
    out_degree = np.zeros(p, dtype=np.float64)  # by position
    parent_idx: dict[int, list[int]] = {int(order[0]): []} if p else {}
    for pos in range(1, p):
        hi = min(max_parents, pos)
        k = int(rng.integers(1, hi + 1)) if hi >= 1 else 0
        if k == 0:
            parent_idx[int(order[pos])] = []
            continue
        w = (1.0 + out_degree[:pos]) ** exponent
        chosen = rng.choice(pos, size=k, replace=False, p=w / w.sum())
        out_degree[chosen] += 1.0
        parent_idx[int(order[pos])] = sorted(int(order[c]) for c in chosen)
    return parent_idx


def random_network(spec: RandomSpec | str) -> BayesianNetwork:
    """The random network of ``spec`` (a :class:`RandomSpec` or a ``random:...`` name).

    Draw order (fixed, part of the definition): topological order (a permutation),
    parent counts and parent sets in that order, cardinalities, then the CPTs of the
    nodes in topological order.
    """
    sp = parse_random_spec(spec) if isinstance(spec, str) else spec
    rng = np.random.default_rng(sp.seed)
    p = sp.nodes
    order = rng.permutation(p)
    parent_idx: dict[int, list[int]] = {}
    if sp.shape == "scale-free":
        parent_idx = _preferential(rng, order, sp.max_parents, float(sp.exponent))
    else:
        for pos in range(p):
            k = int(rng.integers(0, min(sp.max_parents, pos) + 1))
            chosen = (rng.choice(pos, size=k, replace=False) if k
                      else np.empty(0, dtype=np.int64))
            parent_idx[int(order[pos])] = sorted(int(order[c]) for c in chosen)
    cards = rng.integers(sp.card_lo, sp.card_hi + 1, size=p)
    names = [f"X{i}" for i in range(p)]
    states = {names[i]: [f"s{k}" for k in range(int(cards[i]))] for i in range(p)}
    parents = {names[i]: [names[j] for j in parent_idx[i]] for i in range(p)}
    cpts: dict[str, NDArray[np.float64]] = {}
    for v in order:
        i = int(v)
        pc = [int(cards[j]) for j in parent_idx[i]]
        rows = int(np.prod(pc)) if pc else 1
        cpts[names[i]] = _dirichlet_rows(rng, rows, int(cards[i]), float(sp.conc)).reshape(
            (*pc, int(cards[i]))
        )
    return BayesianNetwork(sp.name, states, parents, {v: cpts[v] for v in names}, atol=1e-9)


def random_pair_codes(
    n: int, card: int, strata: int, seed: int, *, dependence: float = 0.05
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``(x, y, s)`` codes of ``n`` rows for timing one CI test: ``x`` uniform on
    ``card`` states, ``y = x`` with probability ``dependence`` (else uniform), ``s``
    uniform on ``strata`` configurations (synthetic benchmark data)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, card, n)
    y = np.where(rng.random(n) < dependence, x, rng.integers(0, card, n))
    s = rng.integers(0, strata, n)
    return x, y, s
