"""TopK, one-shot Gumbel top-k selection: parameters, costs, rebuilding, outputs, and its
law (the peeling equivalence of docs/privacy/top-k.md), with fixed seeds."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting import (
    Budget,
    Cost,
    Exponential,
    InMemoryRecorder,
    InvalidParameterError,
    Relation,
    Session,
    TopK,
    mechanism_from_params,
)
from accounting.errors import StatisticError
from accounting.mechanisms import MECHANISMS
from tests.accounting.test_samplers import chi2_p

R1, AR = Relation.REPLACE_ONE, Relation.ADD_REMOVE
P_MIN = 1e-3  # fixed seeds make these deterministic; the bar only guards regressions
NAN, INF = float("nan"), float("inf")


def peeling_pmf(u: np.ndarray, sensitivity: float, epsilon: float,
                k: int) -> dict[tuple[int, ...], float]:
    """Exact law of ``k`` rounds of peeling: round ``j`` draws from
    ``Exponential(sensitivity, epsilon).probabilities`` over the indices not yet
    chosen. Keys: ordered tuples of distinct indices."""
    em = Exponential(sensitivity, epsilon)
    n = u.size
    out: dict[tuple[int, ...], float] = {}
    for seq in itertools.permutations(range(n), min(k, n)):
        p = 1.0
        rest = list(range(n))
        for i in seq:
            p *= float(em.probabilities(u[rest])[rest.index(i)])
            rest.remove(i)
        out[seq] = p
    return out


# -- parameters ----------------------------------------------------------------------
BAD: list[tuple[str, object]] = [
    *[(p, v) for p in ("sensitivity", "epsilon") for v in (0.0, -1.0, NAN, INF, "1", True, None)],
    *[("k", v) for v in (0, -1, 1.5, 2.0, np.float64(2.0), True, False, "2", None)],
    ("relation", "neighbours"),
    ("relation", 1),
]


@pytest.mark.parametrize(("param", "value"), BAD)
def test_bad_parameter_rejected_and_charges_nothing(param: str, value: object) -> None:
    params: dict[str, Any] = {"sensitivity": 1.0, "epsilon": 0.5, "k": 3, param: value}
    with pytest.raises(InvalidParameterError) as info:
        TopK(**params)
    assert info.value.parameter == param
    budget = Budget(10.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    with pytest.raises(InvalidParameterError):
        session.release(TopK(**params), lambda: np.zeros(5), purpose="bad")
    assert session.spent() == Cost.zero()
    assert rec.entries == []
    assert not session.halted


def test_parameters_are_normalised() -> None:
    mech = TopK(np.float32(2.0), 1, np.int64(3), relation="add-remove")  # type: ignore[arg-type]
    assert type(mech.k) is int
    assert mech.k == 3
    assert type(mech.sensitivity) is float
    assert type(mech.epsilon) is float
    assert mech.relation is AR
    assert mech.kind == "top-k"
    assert MECHANISMS["top-k"] is TopK


# -- costs and relations -------------------------------------------------------------
def test_cost_is_k_exponential_mechanisms() -> None:
    mech = TopK(1.0, 0.5, 3)
    c = mech.cost(R1)
    assert c.epsilon == Fraction(3, 2)
    assert c.delta == 0
    assert c.rho == 3 * Fraction(1, 4) / 8  # k eps^2/8, not (k eps)^2/8
    assert c == Exponential(1.0, 0.5).cost(R1).times(3)
    assert c.rho < Cost.pure(Fraction(3, 2), bounded_range=True).rho  # type: ignore[operator]
    assert TopK(1.0, 0.5, 1).cost(R1) == Exponential(1.0, 0.5).cost(R1)
    # k is charged in full even when it exceeds the number of candidates (public)
    assert TopK(1.0, 0.5, 50).cost(R1).epsilon == 25


def test_relation_conversion_as_exponential() -> None:
    ar = TopK(1.0, 0.5, 3, relation=AR)
    assert ar.cost(AR) == Exponential(1.0, 0.5, relation=AR).cost(AR).times(3)
    assert ar.cost(R1) == Exponential(1.0, 0.5, relation=AR).cost(R1).times(3)
    assert ar.cost(R1).epsilon == 3  # the sensitivity doubles: 2 eps per selection
    assert ar.cost(R1).rho == 4 * ar.cost(AR).rho  # type: ignore[operator]
    assert ar.epsilon_under(R1) == 1
    # replace-one never converts to add/remove, as for Exponential; neither has a
    # dp-accounting event
    mechs: list[Any] = [TopK(1.0, 0.5, 3), Exponential(1.0, 0.5)]
    for mech in mechs:
        with pytest.raises(InvalidParameterError, match="relation"):
            mech.cost(AR)
        with pytest.raises(InvalidParameterError, match="relation"):
            mech.dp_event(AR)
        assert mech.dp_event(R1) is None
    declared_ar: Any = ar
    assert declared_ar.dp_event(AR) is None
    # a session under add/remove takes the declaration unchanged
    s = Session(Budget(2.0), relation=AR)
    s.release(ar, lambda: np.arange(5.0), purpose="x")
    assert s.spent() == ar.cost(AR)
    assert s.spent().epsilon == Fraction(3, 2)


# -- rebuilding from stored parameters ------------------------------------------------
def test_round_trip_from_public_params() -> None:
    mech = TopK(0.25, 0.3, 4, relation=AR)
    params = mech.public_params()
    assert params == {"sensitivity": 0.25, "epsilon": 0.3, "k": 4, "relation": "add-remove"}
    again = mechanism_from_params("top-k", params)
    assert again == mech
    assert again.cost(R1) == mech.cost(R1)
    with pytest.raises(InvalidParameterError):
        mechanism_from_params("top-k", {**params, "bogus": 1})
    with pytest.raises(InvalidParameterError, match="params"):
        mechanism_from_params("top-k", {"sensitivity": 1.0, "epsilon": 0.3})
    with pytest.raises(InvalidParameterError) as info:
        mechanism_from_params("top-k", {**params, "k": 0})
    assert info.value.parameter == "k"


@settings(max_examples=80, deadline=None)
@given(sens=st.floats(1e-6, 1e3), eps=st.floats(1e-4, 20.0), k=st.integers(1, 200),
       ar=st.booleans())
def test_round_trip_and_cost_property(sens: float, eps: float, k: int, ar: bool) -> None:
    rel = AR if ar else R1
    mech = TopK(sens, eps, k, relation=rel)
    again = mechanism_from_params(mech.kind, mech.public_params())
    assert again == mech
    c = mech.cost(R1)
    assert again.cost(R1) == c
    assert c == Exponential(sens, eps, relation=rel).cost(R1).times(k)
    assert c.epsilon == Fraction(eps) * (2 if ar else 1) * k
    assert c.rho == (Fraction(eps) * (2 if ar else 1)) ** 2 / 8 * k


# -- outputs ---------------------------------------------------------------------------
def test_output_shape_dtype_and_errors() -> None:
    rng = np.random.default_rng(0)
    u = np.array([0.0, 3.0, 1.0, -2.0, 0.5])
    out = TopK(1.0, 1.0, 3).release(u, rng)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.int64
    assert out.shape == (3,)
    assert len(set(out.tolist())) == 3
    assert all(0 <= i < 5 for i in out.tolist())
    rows = TopK(1.0, 1.0, 3).sample(u, rng, 1000)
    assert rows.shape == (1000, 3)
    assert rows.dtype == np.int64
    assert all(len(set(r)) == 3 for r in rows.tolist())
    assert rows.min() >= 0
    assert rows.max() < 5
    for bad in ([], 1.0, np.zeros((2, 2)), [0.0, NAN], [INF, 0.0], "abc"):
        with pytest.raises(StatisticError):
            TopK(1.0, 1.0, 2).release(bad, rng)
    with pytest.raises(InvalidParameterError, match="size"):
        TopK(1.0, 1.0, 2).sample(u, rng, 0)


def test_order_is_decreasing_in_the_noisy_utilities() -> None:
    # utilities far apart relative to the noise: the order is that of the utilities
    rng = np.random.default_rng(1)
    u = np.array([0.0, 400.0, 100.0, 300.0, 200.0])
    assert TopK(1.0, 1.0, 3).release(u, rng).tolist() == [1, 3, 4]
    assert (TopK(1.0, 1.0, 4).sample(u, rng, 50) == [1, 3, 4, 2]).all()
    # the release is the argsort of the Gumbel keys eps u/(2 Delta) + G (same generator)
    u = np.array([0.3, -1.0, 2.0, 0.0, 1.5, 0.7])
    for seed in range(20):
        out = TopK(0.5, 0.8, 4).release(u, np.random.default_rng(seed))
        keys = 0.8 * u / 1.0 + np.random.default_rng(seed).gumbel(0.0, 1.0, size=u.shape)
        assert out.tolist() == np.argsort(-keys)[:4].tolist()
        assert np.all(np.diff(keys[out]) < 0)


def test_k_at_least_len_returns_a_permutation() -> None:
    rng = np.random.default_rng(2)
    u = np.array([1.0, 0.0, 2.0])
    for k in (3, 4, 100):
        out = TopK(1.0, 1.0, k).release(u, rng)
        assert out.dtype == np.int64
        assert sorted(out.tolist()) == [0, 1, 2]
        rows = TopK(1.0, 1.0, k).sample(u, rng, 500)
        assert rows.shape == (500, 3)
        assert (np.sort(rows, axis=1) == [0, 1, 2]).all()
    # one candidate
    assert TopK(1.0, 1.0, 2).release([5.0], rng).tolist() == [0]


@settings(max_examples=100, deadline=None)
@given(
    u=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12),
    k=st.integers(1, 15),
    seed=st.integers(0, 2**32 - 1),
    sens=st.sampled_from([0.1, 1.0, 7.5]),
    eps=st.sampled_from([0.05, 1.0, 4.0]),
)
def test_release_structure_and_coupling_property(u: list[float], k: int, seed: int,
                                                 sens: float, eps: float) -> None:
    """Distinct in-range int64 indices, ``min(k, len)`` of them; from the same generator
    state the first index is the exponential mechanism's release (the same keys), and
    top-``j`` is the first ``j`` entries of top-``k`` (``j < k``)."""
    arr = np.asarray(u)
    out = TopK(sens, eps, k).release(arr, np.random.default_rng(seed))
    assert out.dtype == np.int64
    assert out.shape == (min(k, arr.size),)
    assert len(set(out.tolist())) == out.size
    assert ((out >= 0) & (out < arr.size)).all()
    assert out[0] == Exponential(sens, eps).release(arr, np.random.default_rng(seed))
    for j in range(1, min(k, arr.size)):
        prefix = TopK(sens, eps, j).release(arr, np.random.default_rng(seed))
        assert prefix.tolist() == out[:j].tolist()
    rows = TopK(sens, eps, k).sample(arr, np.random.default_rng(seed), 3)
    assert rows.shape == (3, min(k, arr.size))
    assert all(len(set(r)) == rows.shape[1] for r in rows.tolist())


# -- the law -------------------------------------------------------------------------
def test_first_index_is_the_exponential_mechanism() -> None:
    rng = np.random.default_rng(4)
    u = np.array([0.0, 1.0, 2.5, -3.0, 2.0])
    mech = TopK(1.5, 2.0, 3)
    first = mech.sample(u, rng, 40000)[:, 0]
    probs = Exponential(1.5, 2.0).probabilities(u)
    assert chi2_p(np.bincount(first, minlength=5).astype(float), probs) > P_MIN
    # huge utilities stay stable (no exponentiation)
    assert mech.release(u * 1e6, rng).tolist() == [2, 4, 1]


def test_peeling_equivalence() -> None:
    """P(i1, i2) = P_EM(i1 | all) * P_EM(i2 | all but i1) for every ordered pair,
    exactly (peeling), against 200,000 releases with a fixed seed."""
    u = np.array([0.0, 1.0, 2.0, 0.5])
    sens, eps, k = 1.0, 1.5, 2
    exact = peeling_pmf(u, sens, eps, k)
    assert len(exact) == 12
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-12)
    # a worked entry by hand: w = exp(0.75 u)
    w = np.exp(0.75 * u)
    assert exact[(2, 1)] == pytest.approx(w[2] / w.sum() * w[1] / (w.sum() - w[2]), rel=1e-12)
    n = 200_000
    rows = TopK(sens, eps, k).sample(u, np.random.default_rng(9), n)
    codes = rows[:, 0] * u.size + rows[:, 1]
    counts = np.bincount(codes, minlength=u.size**2).astype(float)
    probs = np.zeros(u.size**2)
    for (i, j), p in exact.items():
        probs[i * u.size + j] = p
    assert counts[probs == 0].sum() == 0  # never a repeated index
    keep = probs > 0
    assert chi2_p(counts[keep], probs[keep]) > P_MIN
    assert np.max(np.abs(counts[keep] / n - probs[keep])) < 0.005
    # the selected set's law is the sum over its orders
    sets = TopK(sens, eps, 3).sample(u, np.random.default_rng(10), 100_000)
    exact3 = peeling_pmf(u, sens, eps, 3)
    left_out = 6 - np.sort(sets, axis=1).sum(axis=1)  # the one index not selected
    set_probs = np.array([sum(p for s, p in exact3.items() if r not in s) for r in range(4)])
    assert set_probs.sum() == pytest.approx(1.0)
    assert chi2_p(np.bincount(left_out, minlength=4).astype(float), set_probs) > P_MIN


@settings(max_examples=60, deadline=None)
@given(
    u=st.lists(st.floats(-5.0, 5.0), min_size=2, max_size=5),
    moves=st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=5),
    k=st.integers(1, 3),
    eps=st.sampled_from([0.1, 1.0, 3.0]),
    sens=st.sampled_from([0.5, 2.0]),
)
def test_exact_loss_within_the_charge(u: list[float], moves: list[float], k: int, eps: float,
                                      sens: float) -> None:
    """On neighbours whose utilities each move by at most Delta (any directions), the
    exact privacy loss of every ordered output is at most the charged ``k eps``."""
    a = np.asarray(u)
    b = a + sens * np.asarray(moves[: a.size])
    p = peeling_pmf(a, sens, eps, k)
    q = peeling_pmf(b, sens, eps, k)
    charged = float(TopK(sens, eps, k).cost(R1).epsilon)  # type: ignore[arg-type]
    loss = max(abs(math.log(p[s]) - math.log(q[s])) for s in p)
    assert loss <= charged * (1 + 1e-9)


def test_charged_loss_is_nearly_attained() -> None:
    """k = 2 selections from 2 gainers among 42 candidates (40 others lose Delta): the
    exact loss of the output (0, 1) is 0.96 of the charged 2 eps, so the charge of one
    selection (eps) would be refuted by exact probabilities."""
    m = 40
    d = np.r_[np.zeros(2), np.ones(m)]
    dp = np.r_[np.ones(2), np.zeros(m)]
    em = Exponential(1.0, 1.0)
    p0 = em.probabilities(d)[0] * em.probabilities(d[1:])[0]
    q0 = em.probabilities(dp)[0] * em.probabilities(dp[1:])[0]
    loss = math.log(q0 / p0)
    assert 1.9 < loss <= float(TopK(1.0, 1.0, 2).cost(R1).epsilon)  # type: ignore[arg-type]


# -- through a session ---------------------------------------------------------------
def test_session_charges_k_eps_and_records_the_indices() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec, seed=3, store_outputs=True)
    out = session.release(TopK(1.0, 0.25, 3), lambda: np.array([0.0, 5.0, 1.0, 4.0]),
                          purpose="top-3")
    assert out.shape == (3,)
    assert session.spent().epsilon == Fraction(3, 4)
    (entry,) = rec.entries
    assert entry.mechanism == "top-k"
    assert entry.params["k"] == 3
    assert entry.cost == TopK(1.0, 0.25, 3).cost(R1)
    assert rec.outputs[0] == out.tolist()
    assert all(type(i) is int for i in rec.outputs[0])  # type: ignore[union-attr]
    # what is left (1/4) pays for one more selection, not two
    assert not session.can_afford(TopK(1.0, 0.25, 2))
    assert session.can_afford(TopK(1.0, 0.25, 1))
