"""Kendall-with-discretised-Z baseline and subsample-and-aggregate block p-values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpcg.citests.kendall_kmeans import (
    concordance_by_stratum,
    floored_kendall_z,
    grid_strata,
    kendall_sensitivity,
    kmeans_strata,
)
from dpcg.citests.subsample_aggregate import block_bounds, block_pvalues
from dpcg.data import Categorical, Dataset, Schema
from dpcg.stats.contingency import table_from_codes
from dpcg.stats.discrete import g2_test


def test_concordance_matches_brute_force() -> None:
    g = np.random.default_rng(0)
    n, k = 57, 4
    x = np.round(g.normal(size=n), 1)  # some ties
    y = np.round(g.normal(size=n), 1)
    s = g.integers(0, k, n)
    got = concordance_by_stratum(x, y, s, k, chunk=10)
    want = np.zeros(k, dtype=np.int64)
    for i, j in itertools.combinations(range(n), 2):
        if s[i] == s[j]:
            want[s[i]] += int(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]))
    np.testing.assert_array_equal(got, want)


def test_floored_kendall_sensitivity_on_neighbours() -> None:
    """Replace-one: |dz| <= 9/sqrt(n), including a row moving between strata."""
    g = np.random.default_rng(1)
    worst = 0.0
    for _ in range(300):
        n = int(g.integers(3, 40))
        k = int(g.integers(1, 4))
        x, y = g.normal(size=n), g.normal(size=n)
        s = g.integers(0, k, n)
        z = floored_kendall_z(x, y, s, k)
        x2, y2, s2 = x.copy(), y.copy(), s.copy()
        x2[-1], y2[-1], s2[-1] = g.normal() * 5, g.normal() * 5, g.integers(0, k)
        worst = max(worst, abs(floored_kendall_z(x2, y2, s2, k) - z) / kendall_sensitivity(n))
    assert worst <= 1.0
    assert kendall_sensitivity(100) == pytest.approx(0.9)


def test_grid_strata_public_cells() -> None:
    zs = np.array([[-1.0, -1.0], [0.99, -0.2], [1.0, 1.0], [0.0, 0.5]])
    lab, k = grid_strata(zs, 3)
    assert k == 9
    # a row's cell depends only on that row
    np.testing.assert_array_equal(lab[:2], grid_strata(zs[:2], 3)[0])
    assert lab[0] == 0
    assert lab[2] == 8


def test_kmeans_is_deterministic_and_data_dependent() -> None:
    g = np.random.default_rng(2)
    zs = np.vstack([g.normal(-0.5, 0.1, (50, 1)), g.normal(0.5, 0.1, (50, 1))])
    lab, _k = kmeans_strata(zs, 2)
    np.testing.assert_array_equal(lab, kmeans_strata(zs, 2)[0])
    assert len(set(lab[:50].tolist())) == 1
    assert lab[0] != lab[-1]


def test_block_pvalues_match_per_block_gtest() -> None:
    g = np.random.default_rng(3)
    n = 1003
    codes = np.vstack([g.integers(0, 3, n), g.integers(0, 2, n), g.integers(0, 2, n)])
    codes[1] = np.where(g.uniform(size=n) < 0.3, codes[0] % 2, codes[1])
    schema = Schema([Categorical(f"V{j}", [0, 1, 2][: c]) for j, c in enumerate((3, 2, 2))])
    ds = Dataset.from_codes(codes, schema)
    k = 7
    p = block_pvalues(ds.codes, ds.cardinalities, 0, 1, (2,), k)
    cuts = block_bounds(n, k)
    assert cuts[0] == 0
    assert cuts[-1] == n
    for b in range(k):
        sl = slice(int(cuts[b]), int(cuts[b + 1]))
        t = table_from_codes(codes[0, sl], codes[1, sl], codes[2, sl], 3, 2, 2)
        assert p[b] == pytest.approx(g2_test(t).pvalue, rel=1e-9, abs=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    assert math.isfinite(float(p.sum()))
