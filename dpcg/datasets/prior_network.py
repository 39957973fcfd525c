"""The budget advisor's prior over networks: random Bayesian networks shaped by public facts.

:func:`prior_network` draws one discrete network for :mod:`dpcg.advise` from a schema's
cardinalities (public) and a seed; it is the advisor's *prior*: a family wide enough that
a real network of that schema is, in its F1 under PC, one more draw from it (calibrated in
``docs/benchmarks/advise.md``). Per network, in this fixed order, from
``numpy.random.default_rng(seed)``:

* **shape**: ``uniform`` or ``scale-free`` (probability 1/2 each) unless given;
* **maximum in-degree** ``K``: uniform on ``{2, 3, 4}`` (uniform shape) or ``{1, 2, 3}``
  (scale-free: every node after the first takes ``1..K`` parents) unless given; the DAG
  is :func:`~dpcg.datasets.random_network.random_network`'s of that shape and ``K``;
* **cardinalities**: the schema's (a multiset: their order does not matter), in a
  random order over the nodes (a column of one
  category counts as two); a node whose table would exceed :data:`MAX_TABLE` entries
  drops its parents of largest cardinality until it fits;
* **dependence strength**: a network-level log-median ``mu ~ Uniform(log s_lo, log s_hi)``
  (:data:`STRENGTH`), a spread ``sigma ~ Uniform(SPREAD)``, and per edge
  ``s = exp(mu + sigma * z)``, ``z ~ N(0, 1)``: the networks range from most edges
  invisible at ``n`` rows to nearly every edge strong, and within one network edges of
  very different strengths (what real networks' weak edges look like to PC);
* **marginal skew**: ``tau ~ Uniform(0, SKEW)``; each node's baseline log-odds
  ``b ~ N(0, tau^2)`` per category;
* **table kind**: with probability :data:`DIRICHLET` the tables are unstructured, every
  row ``~ Dirichlet(c, ..., c)`` with ``c`` log-uniform on :data:`CONCENTRATION` (the
  generated families of :mod:`~dpcg.datasets.random_network`); otherwise log-linear
  with main effects, ``P(v = k | parents) proportional to exp(b_k + sum_j s_j
  E_j[x_j, k])``, ``E_j`` a ``(card_j, card_v)`` matrix of ``N(0, 1)`` entries (so a
  dependence need not be monotone in the codes).

The strength, spread, skew and kind are drawn (and all other draws made) whatever the
kind, so a draw's DAG and cardinalities do not depend on the table kind.

The randomness here makes synthetic data for a simulation, not privacy noise
(``dpcg/datasets`` is listed in ``NON_PRIVACY_RANDOMNESS`` of ``tests/test_layering.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.datasets.network import BayesianNetwork
from dpcg.datasets.random_network import SHAPES, RandomSpec, random_network
from dpcg.errors import DataValidationError

__all__ = ["CONCENTRATION", "DIRICHLET", "MAX_TABLE", "SKEW", "SPREAD", "STRENGTH", "PriorDraw",
           "prior_network"]

#: Range of the network-level median edge strength (log-uniform).
STRENGTH = (0.03, 5.0)
#: Range of the log-scale spread of edge strengths within one network (uniform).
SPREAD = (0.3, 1.3)
#: Largest standard deviation of the baseline log-odds (marginal skew).
SKEW = 2.0
#: Probability that a network's tables are unstructured Dirichlet rows instead.
DIRICHLET = 0.25
#: Range of the Dirichlet concentration of those tables (log-uniform).
CONCENTRATION = (0.3, 3.0)
#: Largest conditional table (parent configurations x categories) of one node.
MAX_TABLE = 200_000


@dataclass(frozen=True)
class PriorDraw:
    """The network-level parameters one draw took (for the advisor's diagnostics)."""

    shape: str
    max_parents: int
    tables: str
    strength: float
    spread: float
    skew: float
    edges: int


def _softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    out: NDArray[np.float64] = e / e.sum(axis=-1, keepdims=True)
    # exact row sums up to one ulp: the residue on each row's largest entry
    resid = 1.0 - out.sum(axis=-1, keepdims=True)
    idx = np.argmax(out, axis=-1)[..., None]
    np.put_along_axis(out, idx, np.take_along_axis(out, idx, axis=-1) + resid, axis=-1)
    return out


def prior_network(cardinalities: Sequence[int], seed: int, *, max_parents: int | None = None,
                  shape: str | None = None) -> tuple[BayesianNetwork, PriorDraw]:
    """One network of the advisor's prior (module docstring) and the parameters drawn."""
    cards_in = [int(c) for c in cardinalities]
    p = len(cards_in)
    if p < 2 or any(c < 1 for c in cards_in):
        raise DataValidationError("prior network: need at least 2 columns of >= 1 category")
    if shape is not None and shape not in SHAPES:
        raise DataValidationError(f"prior network: shape must be one of {', '.join(SHAPES)}")
    if max_parents is not None and (isinstance(max_parents, bool) or max_parents < 1):
        raise DataValidationError("prior network: max_parents must be an integer >= 1")
    rng = np.random.default_rng(int(seed))
    shp = shape if shape is not None else ("uniform" if rng.random() < 0.5 else "scale-free")
    if max_parents is not None:
        k = int(max_parents)
    else:
        k = int(rng.integers(2, 5)) if shp == "uniform" else int(rng.integers(1, 4))
    k = min(k, p - 1)
    dag = random_network(RandomSpec(nodes=p, max_parents=k, card_lo=2, card_hi=2,
                                    seed=int(rng.integers(0, 2**62)), shape=shp))
    names = list(dag.nodes)
    perm = rng.permutation(sorted(cards_in))
    cards = {v: max(2, int(c)) for v, c in zip(names, perm, strict=True)}
    parents: dict[str, list[str]] = {}
    for v in names:
        pars = list(dag.parents[v])
        while pars and cards[v] * math.prod(cards[q] for q in pars) > MAX_TABLE:
            pars.remove(max(pars, key=lambda q: (cards[q], q)))
        parents[v] = pars
    lo, hi = math.log(STRENGTH[0]), math.log(STRENGTH[1])
    mu = float(rng.uniform(lo, hi))
    spread = float(rng.uniform(*SPREAD))
    tau = float(rng.uniform(0.0, SKEW))
    dirichlet = bool(rng.random() < DIRICHLET)
    conc = float(np.exp(rng.uniform(math.log(CONCENTRATION[0]), math.log(CONCENTRATION[1]))))
    cpts: dict[str, NDArray[np.float64]] = {}
    for v in dag.topological_order:
        c = cards[v]
        pars = parents[v]
        if dirichlet:
            rows = math.prod(cards[q] for q in pars)
            g = rng.standard_gamma(conc, size=(rows, c)) + 1e-300
            cpts[v] = _softmax(np.log(g)).reshape((*(cards[q] for q in pars), c))
            continue
        logits = np.broadcast_to(rng.normal(0.0, tau, size=c),
                                 (*(cards[q] for q in pars), c)).copy()
        strengths = np.exp(mu + spread * rng.standard_normal(len(pars)))
        for j, q in enumerate(pars):
            effect = strengths[j] * rng.standard_normal((cards[q], c))
            shape_j = [1] * (len(pars) + 1)
            shape_j[j], shape_j[-1] = cards[q], c
            logits += effect.reshape(shape_j)
        cpts[v] = _softmax(logits)
    states = {v: [f"s{i}" for i in range(cards[v])] for v in names}
    net = BayesianNetwork(f"advisor-prior:seed={int(seed)}", states, parents, cpts, atol=1e-9)
    draw = PriorDraw(shp, k, "dirichlet" if dirichlet else "log-linear", math.exp(mu),
                     spread, tau, sum(len(ps) for ps in parents.values()))
    return net, draw
