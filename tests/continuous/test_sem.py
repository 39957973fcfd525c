"""Synthetic continuous SEMs: declared bounds, clipping, DAG, exact covariance."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpcg.data import Continuous
from dpcg.datasets.sem import (
    f_a,
    random_sem,
    shah_peters,
    shah_peters_bounds,
    shah_peters_sampler,
)
from dpcg.errors import DpcgError


@pytest.mark.parametrize("kind", ["linear", "nonlinear"])
def test_random_sem_dataset(kind: str) -> None:
    sem = random_sem(8, kind=kind, seed=3)
    ds = sem.sample(5000, seed=1)
    assert ds.is_continuous
    assert ds.names == sem.names
    assert ds.values.shape == (8, 5000)
    assert np.all(np.abs(ds.values) <= sem.bound)
    for col in ds.schema.columns:
        assert isinstance(col, Continuous)
        assert (col.lower, col.upper) == (-sem.bound, sem.bound)
    g = nx.DiGraph(sem.dag_edges)
    assert nx.is_directed_acyclic_graph(g)
    np.testing.assert_allclose(np.var(ds.values, axis=1), 1.0, atol=0.12)
    # same seeds, same data; different sample seed, different data
    np.testing.assert_array_equal(sem.sample(50, 4).values, sem.sample(50, 4).values)
    assert not np.array_equal(sem.sample(50, 4).values, sem.sample(50, 5).values)
    assert random_sem(8, kind=kind, seed=3).dag_edges == sem.dag_edges


def test_linear_covariance_exact() -> None:
    sem = random_sem(6, seed=11, expected_degree=3)
    C = sem.covariance()
    np.testing.assert_allclose(np.diag(C), 1.0, atol=1e-12)
    emp = np.cov(sem.sample(40_000, 0).values)
    assert np.abs(emp - C).max() < 0.05


def test_bad_parameters() -> None:
    with pytest.raises(DpcgError):
        random_sem(1)
    with pytest.raises(DpcgError):
        random_sem(4, kind="quadratic")
    with pytest.raises(DpcgError):
        random_sem(4).sample(0, 1)
    with pytest.raises(DpcgError):
        random_sem(4, kind="nonlinear").covariance()


def test_shah_peters() -> None:
    ds = shah_peters(3000, 2, 4.0, 0.5, seed=0)
    assert ds.names == ("X", "Y", "Z1", "Z2")
    b = shah_peters_bounds(2, 0.5)
    for col, (lo, hi) in zip(ds.schema.columns, b, strict=True):
        assert isinstance(col, Continuous)
        assert (col.lower, col.upper) == (lo, hi)
    x, _y, z1 = ds.values[0], ds.values[1], ds.values[2]
    resid = x - f_a(z1, 4.0)
    assert abs(resid.std() - 0.3) < 0.02
    s = shah_peters_sampler(4.0)
    np.testing.assert_allclose(s.conditional_mean(ds.values[2:].T), f_a(z1, 4.0))
    draws = s.sample(ds.values[2:].T, 3, np.random.default_rng(0))
    assert draws.shape == (3, 3000)
