"""GroupTopK (``docs/privacy/group-top-k.md``): top-``k`` with at most one candidate per
public group. Its law is ``k`` rounds of peeling where a chosen candidate's whole group
leaves the pool (checked exactly against enumerated sequences, fixed seeds); its cost
is TopK's; the labels are public parameters stored as a count and a digest; bad input
is refused before anything is charged."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from scipy.stats import chisquare

from accounting.costs import Budget
from accounting.errors import InvalidParameterError, MechanismStateError, StatisticError
from accounting.mechanisms import (
    MECHANISMS,
    Exponential,
    GroupTopK,
    TopK,
    group_digest,
    mechanism_from_params,
)
from accounting.memory import InMemoryRecorder
from accounting.relations import Relation
from accounting.session import Session

R1 = Relation.REPLACE_ONE
P_MIN = 1e-3  # fixed seeds make these deterministic; the bar only guards regressions


def group_peeling_pmf(u: np.ndarray, groups: np.ndarray, sensitivity: float,
                      epsilon: float, k: int) -> dict[tuple[int, ...], float]:
    """Exact law of ``k`` rounds of peeling where round ``j`` draws from
    ``Exponential(sensitivity, epsilon).probabilities`` over the candidates whose group
    has not been chosen yet (stopping early when every group is chosen)."""
    em = Exponential(sensitivity, epsilon)
    n_groups = len(set(groups.tolist()))
    rounds = min(k, n_groups)
    out: dict[tuple[int, ...], float] = {}
    for seq in itertools.permutations(range(u.size), rounds):
        if len({int(groups[i]) for i in seq}) < rounds:
            continue  # two candidates of one group: impossible
        p = 1.0
        taken: set[int] = set()
        for i in seq:
            rest = [j for j in range(u.size) if int(groups[j]) not in taken]
            p *= float(em.probabilities(u[rest])[rest.index(i)])
            taken.add(int(groups[i]))
        out[seq] = p
    return out


def test_law_is_peeling_with_whole_groups_removed() -> None:
    u = np.array([0.0, 1.5, 2.0, -0.5, 1.0, 0.3])
    groups = np.array([0, 0, 1, 1, 1, 2])
    sens, eps, k = 1.0, 1.5, 2
    exact = group_peeling_pmf(u, groups, sens, eps, k)
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-12)
    # a worked entry by hand: w = exp(0.75 u); 2 then 1 (group 1, then group 0 with
    # group 1's candidates gone)
    w = np.exp(0.75 * u)
    assert exact[(2, 1)] == pytest.approx(
        w[2] / w.sum() * w[1] / (w[0] + w[1] + w[5]), rel=1e-12)
    n = 200_000
    rows = GroupTopK.over(groups, sens, eps, k).sample(u, np.random.default_rng(3), n)
    assert rows.shape == (n, 2)
    assert np.all(groups[rows[:, 0]] != groups[rows[:, 1]])  # never one group twice
    codes = rows[:, 0] * u.size + rows[:, 1]
    counts = np.bincount(codes, minlength=u.size**2).astype(float)
    probs = np.zeros(u.size**2)
    for (i, j), p in exact.items():
        probs[i * u.size + j] = p
    assert counts[probs == 0].sum() == 0
    keep = probs > 0
    assert chisquare(counts[keep], probs[keep] * n).pvalue > P_MIN
    assert np.max(np.abs(counts[keep] / n - probs[keep])) < 0.005


def test_one_candidate_per_group_is_top_k() -> None:
    """With singleton groups the law is TopK's (both are peeling over single indices)."""
    u = np.array([0.0, 1.0, 2.0, 0.5])
    exact = group_peeling_pmf(u, np.arange(4), 1.0, 1.5, 2)
    rows = GroupTopK.over(np.arange(4), 1.0, 1.5, 2).sample(u, np.random.default_rng(4),
                                                            100_000)
    codes = rows[:, 0] * 4 + rows[:, 1]
    counts = np.bincount(codes, minlength=16).astype(float)
    probs = np.zeros(16)
    for (i, j), p in exact.items():
        probs[i * 4 + j] = p
    keep = probs > 0
    assert counts[~keep].sum() == 0
    assert chisquare(counts[keep], probs[keep] * 100_000).pvalue > P_MIN


def test_k_beyond_the_groups_returns_one_per_group_in_noisy_order() -> None:
    u = np.array([5.0, 4.0, -3.0, 1.0])
    mech = GroupTopK.over([2, 2, 0, 1], 1.0, 50.0, 10)
    out = mech.release(u, np.random.default_rng(0))
    assert out.tolist() == [0, 3, 2]  # huge eps: the best of each group, best first
    assert out.dtype == np.int64


def test_cost_digest_and_round_trip() -> None:
    groups = np.array([3, 1, 1, 0])
    mech = GroupTopK.over(groups, 2.0, 0.25, 3)
    assert mech.cost(R1) == TopK(2.0, 0.25, 3).cost(R1)
    ar = GroupTopK.over(groups, 2.0, 0.25, 3, relation=Relation.ADD_REMOVE)
    assert ar.cost(R1) == TopK(2.0, 0.25, 3, relation=Relation.ADD_REMOVE).cost(R1)
    params = mech.public_params()
    assert params["groups_sha256"] == group_digest(groups)
    assert params["candidates"] == 4
    assert MECHANISMS["group-top-k"] is GroupTopK
    again = mechanism_from_params("group-top-k", params)
    assert again == mech
    assert again.cost(R1) == mech.cost(R1)
    with pytest.raises(MechanismStateError, match="labels"):
        again.release(np.zeros(4), np.random.default_rng(0))
    assert group_digest(np.array([3, 1, 1, 0])) != group_digest(np.array([3, 1, 0, 1]))
    groups[0] = 7  # the caller's array is copied: the mechanism's labels stay as digested
    assert mech.labels is not None
    assert group_digest(mech.labels) == params["groups_sha256"]
    with pytest.raises(ValueError, match="read-only"):
        mech.labels[0] = 7


def test_a_session_charges_k_releases_and_records_the_digest() -> None:
    budget = Budget(10.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    mech = GroupTopK.over([0, 0, 1, 2], 1.0, 0.5, 2)
    out = session.release(mech, lambda: np.array([1.0, 0.0, 2.0, -1.0]), purpose="picks")
    assert len(np.asarray(out)) == 2
    assert session.spent() == TopK(1.0, 0.5, 2).cost(R1)
    entry = next(e for e in rec.entries if e.mechanism == "group-top-k")
    assert entry.params["groups_sha256"] == group_digest(np.array([0, 0, 1, 2]))


BAD_GROUPS: list[Any] = [[], [[0, 1]], [0.5, 1.0], [-1, 0], "abc", [True, False]]


@pytest.mark.parametrize("groups", BAD_GROUPS)
def test_bad_groups_are_refused(groups: Any) -> None:
    with pytest.raises(InvalidParameterError) as info:
        GroupTopK.over(groups, 1.0, 0.5, 1)
    assert info.value.parameter == "groups"


@pytest.mark.parametrize(("param", "value"), [("groups_sha256", "xyz"),
                                              ("groups_sha256", "A" * 64),
                                              ("candidates", 0), ("candidates", 1.5),
                                              ("k", 0), ("epsilon", -1.0)])
def test_bad_stored_parameters_are_refused(param: str, value: object) -> None:
    params: dict[str, Any] = {**GroupTopK.over([0, 1], 1.0, 0.5, 1).public_params(),
                              param: value}
    with pytest.raises(InvalidParameterError) as info:
        mechanism_from_params("group-top-k", params)
    assert info.value.parameter == param


def test_wrong_length_utilities_release_nothing() -> None:
    """Utilities that do not match the labels are a caller's error found after
    admission (as for every mechanism, the charge stands: the data was read); nothing is
    released. A mechanism that is refused at construction charges nothing."""
    budget = Budget(10.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec, store_outputs=True)
    mech = GroupTopK.over([0, 1, 1], 1.0, 0.5, 1)
    with pytest.raises(StatisticError, match="expected 3"):
        session.release(mech, lambda: np.zeros(4), purpose="bad")
    assert session.spent() == mech.cost(R1)
    assert rec.outputs == {}
    with pytest.raises(InvalidParameterError):
        session.release(GroupTopK.over([], 1.0, 0.5, 1), lambda: np.zeros(0), purpose="x")
    assert session.spent() == mech.cost(R1)
