"""Forward sampler: empirical conditionals and joints match the CPTs (chi-square, fixed seeds)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpcg.data import Dataset
from dpcg.datasets import BayesianNetwork, load_network
from dpcg.errors import DataValidationError, GraphError

#: Reject only when the (deterministic, fixed-seed) p-value is absurdly small.
P_FLOOR = 1e-4


def config_index(net: BayesianNetwork, data: Dataset, node: str) -> np.ndarray:
    index = np.zeros(data.n, dtype=np.int64)
    for p in net.parents[node]:
        index = index * len(net.states[p]) + data.column(p)
    return index


def conditional_chi_square(net: BayesianNetwork, data: Dataset) -> tuple[float, int]:
    """Pooled Pearson chi-square of every node's observed counts per parent configuration
    against its CPT row. Rows are used when every positive-probability cell expects >= 5.
    Zero-probability cells must be empty."""
    stat, dof = 0.0, 0
    for v in net.nodes:
        probs = net.conditional(v)
        configs, card = probs.shape
        cell = config_index(net, data, v) * card + data.column(v)
        counts = np.bincount(cell, minlength=configs * card).reshape(configs, card)
        assert np.all(counts[probs == 0] == 0), f"{v}: zero-probability state sampled"
        expected = counts.sum(axis=1, keepdims=True) * probs
        positive = probs > 0
        usable = np.all(~positive | (expected >= 5), axis=1) & (positive.sum(axis=1) > 1)
        for r in np.flatnonzero(usable):
            e = expected[r, positive[r]]
            o = counts[r, positive[r]]
            stat += float(np.sum((o - e) ** 2 / e))
            dof += int(positive[r].sum()) - 1
    return stat, dof


@pytest.mark.parametrize(
    ("name", "rows", "seed"),
    [("earthquake", 200_000, 11), ("survey", 200_000, 12), ("asia", 200_000, 13),
     ("sachs", 200_000, 14), ("child", 200_000, 15), ("alarm", 200_000, 16),
     ("insurance", 200_000, 17)],
)
def test_empirical_conditionals_match_cpts(name: str, rows: int, seed: int) -> None:
    net = load_network(name)
    data = net.sample(rows, seed)
    stat, dof = conditional_chi_square(net, data)
    assert dof > 0
    pvalue = stats.chi2.sf(stat, dof)
    assert pvalue > P_FLOOR, f"{name}: chi2={stat:.1f} on {dof} df, p={pvalue:.2e}"


def exact_joint(net: BayesianNetwork) -> np.ndarray:
    """P(x) for every joint configuration (axes in node order), by enumeration."""
    shape = net.cardinalities
    grid = np.indices(shape).reshape(len(shape), -1)
    prob = np.ones(grid.shape[1])
    for j, v in enumerate(net.nodes):
        idx = (*(grid[net.index(p)] for p in net.parents[v]), grid[j])
        prob *= net.cpts[v][idx]
    return prob.reshape(shape)


@pytest.mark.parametrize(("name", "seed"), [("asia", 21), ("survey", 22), ("cancer", 23)])
def test_empirical_joint_matches_enumeration(name: str, seed: int) -> None:
    net = load_network(name)
    joint = exact_joint(net).ravel()
    assert joint.sum() == pytest.approx(1.0)
    data = net.sample(300_000, seed)
    flat = np.ravel_multi_index(tuple(data.codes.astype(np.int64)), net.cardinalities)
    counts = np.bincount(flat, minlength=joint.size)
    expected = joint * data.n
    assert np.all(counts[joint == 0] == 0)
    keep = expected >= 5
    # pool the sparse cells into one so that the test covers all the mass
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        exp = exp * obs.sum() / exp.sum()
    result = stats.chisquare(obs, exp)
    assert result.pvalue > P_FLOOR, f"{name}: {result}"


def test_deterministic_given_seed() -> None:
    net = load_network("child")
    a = net.sample(5_000, 7)
    b = net.sample(5_000, 7)
    c = net.sample(5_000, 8)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert not np.array_equal(a.codes, c.codes)
    d = net.sample(5_000, np.random.default_rng(7))
    np.testing.assert_array_equal(a.codes, d.codes)


def test_sample_layout() -> None:
    net = load_network("alarm")
    data = net.sample(1_000, 1)
    assert data.names == net.nodes
    assert data.codes.shape == (37, 1_000)
    assert data.codes.dtype == np.uint8
    assert data.codes.flags["C_CONTIGUOUS"]
    assert data.schema == net.schema()
    assert data.cardinalities == net.cardinalities
    maxima = data.codes.max(axis=1)
    assert np.all(maxima < np.asarray(net.cardinalities))


def test_alarm_100k_sample_shape() -> None:
    """The sampler's speed is a benchmark (``dpcg bench process`` times sampling with the
    whole run), never a timed unit test; here only what it returns."""
    net = load_network("alarm")
    data = net.sample(100_000, 3)
    assert data.codes.shape == (37, 100_000)
    assert np.array_equal(data.codes, net.sample(100_000, 3).codes)  # seeded


def test_zero_probability_states_are_never_drawn() -> None:
    net = BayesianNetwork(
        "zeros",
        {"A": ("a0", "a1", "a2"), "B": ("b0", "b1", "b2", "b3")},
        {"A": (), "B": ("A",)},
        {
            "A": [0.3, 0.0, 0.7],
            "B": [[0.0, 0.1, 0.2, 0.7], [0.25, 0.25, 0.25, 0.25], [0.1, 0.0, 0.9, 0.0]],
        },
    )
    data = net.sample(100_000, 5)
    a, b = data.column("A"), data.column("B")
    assert not np.any(a == 1)
    assert not np.any((a == 0) & (b == 0))
    assert not np.any((a == 2) & ((b == 1) | (b == 3)))
    assert abs(np.mean(a == 2) - 0.7) < 0.01
    assert abs(np.mean(b[a == 2] == 2) - 0.9) < 0.01
    certain = BayesianNetwork("one", {"X": ("x",)}, {"X": ()}, {"X": [1.0]})
    np.testing.assert_array_equal(certain.sample(10, 0).codes, np.zeros((1, 10)))


@pytest.mark.parametrize(
    ("n", "seed", "fragment"),
    [(0, 1, "positive integer"), (-5, 1, "positive integer"), (2.5, 1, "positive integer"),
     (True, 1, "positive integer"), (10, "x", "seed"), (10, None, "seed")],
)
def test_sample_bad_arguments(n: object, seed: object, fragment: str) -> None:
    with pytest.raises(DataValidationError, match=fragment):
        load_network("asia").sample(n, seed)  # type: ignore[arg-type]


def test_network_validation() -> None:
    states = {"A": ("a0", "a1"), "B": ("b0", "b1")}
    good: dict[str, Any] = {"A": [0.5, 0.5], "B": [[0.5, 0.5], [0.1, 0.9]]}
    BayesianNetwork("ok", states, {"A": (), "B": ("A",)}, good)
    with pytest.raises(GraphError, match="shape"):
        BayesianNetwork("bad", states, {"A": (), "B": ()}, good)
    with pytest.raises(GraphError, match="do not sum to 1"):
        BayesianNetwork("bad", states, {"A": (), "B": ("A",)},
                        {"A": [0.5, 0.6], "B": good["B"]})
    with pytest.raises(GraphError, match="cycle"):
        BayesianNetwork("bad", states, {"A": ("B",), "B": ("A",)},
                        {"A": [[0.5, 0.5], [0.5, 0.5]], "B": good["B"]})
    with pytest.raises(GraphError, match="not a node"):
        BayesianNetwork("bad", states, {"A": ("Z",), "B": ()}, good)


def test_ground_truth_graphs() -> None:
    net = load_network("asia")
    graph = net.to_networkx()
    assert set(graph.edges) == set(net.dag_edges)
    cpdag = net.true_cpdag()
    assert len(cpdag.directed) + len(cpdag.undirected) == net.n_edges


def test_log_likelihood_prefers_the_true_network() -> None:
    net = load_network("earthquake")
    data = net.sample(2_000, 4)
    ll = net.log_likelihood(data)
    assert np.isfinite(ll)
    assert ll < 0
    flipped = BayesianNetwork(
        "flipped", net.states, net.parents,
        {**net.cpts, "Burglary": net.cpts["Burglary"][::-1]},
    )
    assert flipped.log_likelihood(data) < ll


def test_chi_square_check_has_power() -> None:
    """The conditional check rejects a sampler that is off by 0.02 in one CPT row."""
    net = load_network("asia")
    cpts = dict(net.cpts)
    smoke = np.array(cpts["smoke"])
    smoke += [0.02, -0.02]
    cpts["smoke"] = smoke
    wrong = BayesianNetwork("asia-wrong", net.states, net.parents, cpts)
    stat, dof = conditional_chi_square(net, wrong.sample(200_000, 13))
    assert stats.chi2.sf(stat, dof) < P_FLOOR
