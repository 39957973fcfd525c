"""Black-box empirical privacy-loss auditor (and an exact white-box check).

A mechanism (or a whole algorithm) is given as a *sampler*
``run(dataset, n, rng) -> outputs``: ``n`` independent releases on ``dataset``, as
an array whose first axis has length ``n`` (1-D for scalar outputs, 2-D for vector
outputs). Given neighbouring datasets ``(D, D')`` the auditor

1. draws a **selection** split from both and, over a family of candidate events
   ``E``, picks the one (and the direction, ``D`` vs ``D'`` or ``D'`` vs ``D``)
   that maximises the Clopper-Pearson lower bound on ``eps`` on that split;
2. draws a **fresh** split, counts ``E`` under both datasets and reports

       eps_lb = ln((p_lo(first) - delta) / p_hi(second))

   where ``p_lo`` / ``p_hi`` are one-sided Clopper-Pearson bounds, each at level
   ``alpha_each / 2`` so that the pair holds jointly with probability
   ``>= 1 - alpha_each`` (the suite sets ``alpha_each = alpha / m`` for ``m``
   audits: Bonferroni).

If the mechanism is ``(eps, delta)``-DP then for every event
``P_D(E) <= e^eps P_D'(E) + delta``, so ``eps_lb > eps`` happens with probability
at most ``alpha_each``: a reported ``eps_lb`` above the declared ``eps`` is a
statistically valid refutation of the declared guarantee. The event is chosen on
data independent of the fresh split, so the selection does not bias the bound.

Event families (both directions are always searched):

* threshold events ``{out > t}`` and ``{out < t}`` over a grid of ``t`` (quantiles of
  the pooled selection sample; every distinct value when there are few) for scalar
  numeric outputs, and per coordinate for narrow vector outputs;
* single-value / output-pattern events ``{out = v}`` for discrete outputs (vector
  outputs are hashed to patterns, i.e. rows).

The white-box check :func:`exact_epsilon` takes two probability mass functions
(computed exactly or numerically, see :mod:`audits.exact`) and returns the exact
privacy loss ``max_E ln(P(E) / Q(E))`` (or the hockey-stick ``eps`` for a given
``delta``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

FloatArray = NDArray[np.float64]
Sampler = Callable[[Any, int, np.random.Generator], NDArray[Any]]

#: Largest number of value/pattern events enumerated (the most frequent ones).
MAX_PATTERNS = 4096
#: Number of quantile thresholds per coordinate for continuous outputs.
N_THRESHOLDS = 512
#: Largest vector width for which per-coordinate threshold events are searched.
MAX_COORDINATES = 32


# ---------------------------------------------------------------------------------
# Clopper-Pearson bounds (vectorised)
# ---------------------------------------------------------------------------------


def cp_lower(k: NDArray[Any] | int, n: NDArray[Any] | int, a: float) -> FloatArray:
    """One-sided ``1 - a`` Clopper-Pearson lower bound on a binomial proportion."""
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), k_arr.shape)
    safe_k = np.maximum(k_arr, 1.0)
    lo = stats.beta.ppf(a, safe_k, n_arr - safe_k + 1.0)
    return np.asarray(np.where(k_arr <= 0, 0.0, lo), dtype=np.float64)


def cp_upper(k: NDArray[Any] | int, n: NDArray[Any] | int, a: float) -> FloatArray:
    """One-sided ``1 - a`` Clopper-Pearson upper bound on a binomial proportion."""
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), k_arr.shape)
    safe_k = np.minimum(k_arr, n_arr - 1.0)
    hi = stats.beta.ppf(1.0 - a, safe_k + 1.0, n_arr - safe_k)
    return np.asarray(np.where(k_arr >= n_arr, 1.0, hi), dtype=np.float64)


def epsilon_lower_bound(
    k_first: NDArray[Any] | int,
    n_first: int,
    k_second: NDArray[Any] | int,
    n_second: int,
    alpha: float,
    delta: float = 0.0,
) -> FloatArray:
    """``ln((p_lo(first) - delta) / p_hi(second))`` with both one-sided CP bounds at
    level ``alpha / 2`` (jointly ``1 - alpha``). ``-inf`` where the numerator is not
    positive. Vectorised over the counts."""
    lo = cp_lower(k_first, n_first, alpha / 2.0) - delta
    hi = cp_upper(k_second, n_second, alpha / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(lo > 0.0, np.log(np.maximum(lo, 1e-300)) - np.log(hi), -np.inf)
    return np.asarray(out, dtype=np.float64)


# ---------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """A measurable set of outputs.

    ``kind`` is ``"gt"`` / ``"lt"`` (threshold on coordinate ``coord``, or on the
    scalar output when ``coord is None``) or ``"eq"`` (equality with ``value``: a
    scalar, or a whole output pattern when ``coord is None`` and outputs are vectors).
    """

    kind: str
    value: Hashable
    coord: int | None = None

    def indicator(self, outputs: NDArray[Any]) -> NDArray[np.bool_]:
        out = np.asarray(outputs)
        col = out if self.coord is None else out[:, self.coord]
        if self.kind == "gt":
            return np.asarray(col > self.value)
        if self.kind == "lt":
            return np.asarray(col < self.value)
        if self.kind == "eq":
            if col.ndim == 1:
                return np.asarray(col == self.value)
            pattern = np.asarray(self.value, dtype=col.dtype)
            return np.asarray(np.all(col == pattern[None, :], axis=1))
        raise ValueError(f"unknown event kind {self.kind!r}")

    def describe(self) -> str:
        target = "out" if self.coord is None else f"out[{self.coord}]"
        op = {"gt": ">", "lt": "<", "eq": "="}[self.kind]
        v = self.value
        if isinstance(v, float):
            v_text = f"{v:.4g}"
        elif isinstance(v, tuple):
            v_text = "(" + ",".join(_fmt(x) for x in v) + ")"
        else:
            v_text = str(v)
        return f"{target} {op} {v_text}"


def _fmt(x: object) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def _as_2d(outputs: NDArray[Any]) -> NDArray[Any]:
    out = np.asarray(outputs)
    if out.ndim == 1:
        return out[:, None]
    if out.ndim == 2:
        return out
    return out.reshape(out.shape[0], -1)


def _is_numeric(a: NDArray[Any]) -> bool:
    return bool(np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_)


@dataclass(frozen=True)
class _Candidates:
    events: list[Event]
    counts_d: NDArray[np.int64]
    counts_dp: NDArray[np.int64]


def _threshold_candidates(
    col_d: NDArray[Any], col_dp: NDArray[Any], coord: int | None
) -> _Candidates:
    cd = np.asarray(col_d, dtype=np.float64)
    cdp = np.asarray(col_dp, dtype=np.float64)
    pooled = np.concatenate([cd, cdp])
    pooled = pooled[np.isfinite(pooled)]
    if pooled.size == 0:
        return _Candidates([], np.zeros(0, np.int64), np.zeros(0, np.int64))
    distinct = np.unique(pooled)
    if distinct.size <= N_THRESHOLDS:
        grid = distinct
    else:
        grid = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, N_THRESHOLDS)))
    sd = np.sort(cd[~np.isnan(cd)])
    sdp = np.sort(cdp[~np.isnan(cdp)])
    # count(out > t) = len - searchsorted(right); count(out < t) = searchsorted(left)
    gt_d = sd.size - np.searchsorted(sd, grid, side="right")
    gt_dp = sdp.size - np.searchsorted(sdp, grid, side="right")
    lt_d = np.searchsorted(sd, grid, side="left")
    lt_dp = np.searchsorted(sdp, grid, side="left")
    events = [Event("gt", float(t), coord) for t in grid] + [
        Event("lt", float(t), coord) for t in grid
    ]
    return _Candidates(
        events,
        np.concatenate([gt_d, lt_d]).astype(np.int64),
        np.concatenate([gt_dp, lt_dp]).astype(np.int64),
    )


def _pattern_candidates(out_d: NDArray[Any], out_dp: NDArray[Any], vector: bool) -> _Candidates:
    n_d = out_d.shape[0]
    pooled = np.concatenate([out_d, out_dp], axis=0)
    if vector:
        uniq, inverse = np.unique(pooled, axis=0, return_inverse=True)
    else:
        uniq, inverse = np.unique(pooled[:, 0], return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    counts_d = np.bincount(inverse[:n_d], minlength=uniq.shape[0]).astype(np.int64)
    counts_dp = np.bincount(inverse[n_d:], minlength=uniq.shape[0]).astype(np.int64)
    if uniq.shape[0] > MAX_PATTERNS:  # keep the most frequent patterns
        keep = np.argsort(-(counts_d + counts_dp), kind="stable")[:MAX_PATTERNS]
        uniq, counts_d, counts_dp = uniq[keep], counts_d[keep], counts_dp[keep]
    events: list[Event] = []
    for u in uniq:
        if vector:
            events.append(Event("eq", tuple(v.item() for v in np.asarray(u)), None))
        else:
            events.append(Event("eq", np.asarray(u).item(), None))
    return _Candidates(events, counts_d, counts_dp)


def candidate_events(out_d: NDArray[Any], out_dp: NDArray[Any]) -> _Candidates:
    """Every candidate event of the families above, with its counts on both samples."""
    a = _as_2d(out_d)
    b = _as_2d(out_dp)
    if a.shape[1] != b.shape[1]:
        raise ValueError("outputs on D and D' have different widths")
    vector = np.asarray(out_d).ndim > 1
    parts: list[_Candidates] = []
    discrete = not np.issubdtype(a.dtype, np.floating) or (
        np.unique(np.concatenate([a, b], axis=0), axis=0).shape[0] <= MAX_PATTERNS
    )
    if discrete:
        parts.append(_pattern_candidates(a, b, vector))
    if _is_numeric(a) and a.shape[1] <= MAX_COORDINATES:
        for j in range(a.shape[1]):
            parts.append(_threshold_candidates(a[:, j], b[:, j], j if vector else None))
    events = [e for p in parts for e in p.events]
    cd = np.concatenate([p.counts_d for p in parts]) if parts else np.zeros(0, np.int64)
    cdp = np.concatenate([p.counts_dp for p in parts]) if parts else np.zeros(0, np.int64)
    return _Candidates(events, cd, cdp)


# ---------------------------------------------------------------------------------
# The auditor
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmpiricalResult:
    """Outcome of one empirical audit."""

    name: str
    declared_epsilon: float
    declared_delta: float
    epsilon_lb: float
    alpha: float
    event: str
    direction: str
    count_first: int
    count_second: int
    n_fresh: int
    n_selection: int
    selection_epsilon_lb: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha

    @property
    def n_samples(self) -> int:
        """Total releases drawn (both datasets, both splits)."""
        return 2 * (self.n_fresh + self.n_selection)

    @property
    def exceeds(self) -> bool:
        """The empirical lower bound refutes the declared epsilon."""
        return self.epsilon_lb > self.declared_epsilon

    @property
    def tightness(self) -> float:
        """``eps_lb / declared eps`` (``inf`` for a declared 0)."""
        if self.declared_epsilon <= 0:
            return math.inf
        return max(self.epsilon_lb, 0.0) / self.declared_epsilon


def _draw(sampler: Sampler, data: Any, n: int, rng: np.random.Generator) -> NDArray[Any]:
    out = np.asarray(sampler(data, n, rng))
    if out.shape[0] != n:
        raise ValueError(f"sampler returned {out.shape[0]} outputs, expected {n}")
    return out


def select_event(
    out_d: NDArray[Any],
    out_dp: NDArray[Any],
    alpha: float,
    delta: float,
    n_fresh: int | None = None,
    min_count: int = 10,
    selection_level: float = 0.05,
) -> tuple[Event, bool, float]:
    """The (event, direction, predicted bound) that maximises the CP lower bound.

    ``direction`` is ``True`` for ``P_D(E)`` vs ``P_D'(E)`` and ``False`` for the
    reverse. The criterion is the bound *predicted* for the fresh split: conservative
    estimates of both probabilities from the selection split (one-sided CP bounds at
    level ``selection_level / 2``, which guards against the winner's curse among many
    rare events) turned into expected counts over ``n_fresh`` releases and bounded at
    the audit's level ``alpha``. Events seen fewer than ``min_count`` times in the
    numerator are not eligible."""
    cands = candidate_events(out_d, out_dp)
    if not cands.events:
        raise ValueError("no candidate events for these outputs")
    n_d, n_dp = out_d.shape[0], out_dp.shape[0]
    target = n_fresh if n_fresh is not None else min(n_d, n_dp)
    a_sel = selection_level / 2.0
    lo_d, hi_d = cp_lower(cands.counts_d, n_d, a_sel), cp_upper(cands.counts_d, n_d, a_sel)
    lo_dp = cp_lower(cands.counts_dp, n_dp, a_sel)
    hi_dp = cp_upper(cands.counts_dp, n_dp, a_sel)
    fwd = epsilon_lower_bound(lo_d * target, target, np.minimum(hi_dp * target, target - 1.0),
                              target, alpha, delta)
    bwd = epsilon_lower_bound(lo_dp * target, target, np.minimum(hi_d * target, target - 1.0),
                              target, alpha, delta)
    fwd = np.where(cands.counts_d >= min_count, fwd, -np.inf)
    bwd = np.where(cands.counts_dp >= min_count, bwd, -np.inf)
    i_f = int(np.argmax(fwd))
    i_b = int(np.argmax(bwd))
    if fwd[i_f] >= bwd[i_b]:
        return cands.events[i_f], True, float(fwd[i_f])
    return cands.events[i_b], False, float(bwd[i_b])


def audit(
    name: str,
    sampler: Sampler,
    d: Any,
    d_prime: Any,
    *,
    declared_epsilon: float,
    declared_delta: float = 0.0,
    n_selection: int,
    n_fresh: int,
    alpha: float,
    seed: int,
    chunk: int = 1_000_000,
) -> EmpiricalResult:
    """Run one empirical audit (see the module docstring).

    ``n_selection`` / ``n_fresh`` releases are drawn from each dataset for the two
    splits; the fresh split is drawn in chunks of ``chunk`` so that 10^7 releases fit
    in memory. ``alpha`` is this audit's own level (already Bonferroni-corrected).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha!r} must be in (0, 1)")
    if n_selection < 1 or n_fresh < 1:
        raise ValueError("n_selection and n_fresh must be >= 1")
    ss = np.random.SeedSequence(seed)
    sel_seed, fresh_seed = ss.spawn(2)
    rng_sel = np.random.default_rng(sel_seed)
    sel_d = _draw(sampler, d, n_selection, rng_sel)
    sel_dp = _draw(sampler, d_prime, n_selection, rng_sel)
    event, forward, sel_lb = select_event(sel_d, sel_dp, alpha, declared_delta, n_fresh)
    del sel_d, sel_dp
    rng = np.random.default_rng(fresh_seed)
    k_d = 0
    k_dp = 0
    done = 0
    while done < n_fresh:
        m = min(chunk, n_fresh - done)
        k_d += int(np.count_nonzero(event.indicator(_draw(sampler, d, m, rng))))
        k_dp += int(np.count_nonzero(event.indicator(_draw(sampler, d_prime, m, rng))))
        done += m
    first, second = (k_d, k_dp) if forward else (k_dp, k_d)
    lb = float(epsilon_lower_bound(first, n_fresh, second, n_fresh, alpha, declared_delta))
    return EmpiricalResult(
        name=name,
        declared_epsilon=float(declared_epsilon),
        declared_delta=float(declared_delta),
        epsilon_lb=lb,
        alpha=alpha,
        event=event.describe(),
        direction="P_D(E) vs P_D'(E)" if forward else "P_D'(E) vs P_D(E)",
        count_first=first,
        count_second=second,
        n_fresh=n_fresh,
        n_selection=n_selection,
        selection_epsilon_lb=sel_lb,
    )


# ---------------------------------------------------------------------------------
# Exact (white-box) check for discrete outputs
# ---------------------------------------------------------------------------------


def exact_epsilon(p: Sequence[float] | FloatArray, q: Sequence[float] | FloatArray,
                  delta: float = 0.0) -> float:
    """Exact privacy loss between two pmfs over the same finite outcome set.

    With ``delta == 0``: ``max_x |ln(p_x / q_x)|`` (``inf`` if the supports differ),
    the pure-DP loss, since for pmfs the worst event is a single outcome.
    With ``delta > 0``: the smallest ``eps >= 0`` with
    ``sum_x max(p_x - e^eps q_x, 0) <= delta`` in both directions (hockey stick),
    found by bisection.
    """
    pa = np.asarray(p, dtype=np.float64)
    qa = np.asarray(q, dtype=np.float64)
    if pa.shape != qa.shape or pa.ndim != 1:
        raise ValueError("p and q must be 1-D pmfs of the same length")
    if delta == 0.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            both = (pa > 0) & (qa > 0)
            if np.any((pa > 0) != (qa > 0)):
                return math.inf
            return float(np.max(np.abs(np.log(pa[both]) - np.log(qa[both]))))

    def hockey(eps: float, a: FloatArray, b: FloatArray) -> float:
        return float(np.sum(np.maximum(a - math.exp(eps) * b, 0.0)))

    def solve(a: FloatArray, b: FloatArray) -> float:
        if hockey(0.0, a, b) <= delta:
            return 0.0
        hi = 1.0
        while hockey(hi, a, b) > delta:
            hi *= 2.0
            if hi > 1e4:
                return math.inf
        lo = 0.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if hockey(mid, a, b) > delta:
                lo = mid
            else:
                hi = mid
        return hi

    return max(solve(pa, qa), solve(qa, pa))
