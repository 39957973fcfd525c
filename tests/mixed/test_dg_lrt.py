"""The degenerate-Gaussian LRT (``--test dg-lrt``) for mixed discrete/continuous data:
against an independent regression computation, Fisher-z on continuous data, its level
on null data, its power, degenerate columns, and PC on a mixed schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom, chi2

from dpcg.api import discover
from dpcg.citests.mixed import DegenerateGaussianTest
from dpcg.citests.nonprivate import FisherZTest
from dpcg.citests.registry import get_test
from dpcg.cli import main
from dpcg.data import Categorical, Continuous, Dataset, Schema
from dpcg.datasets.mixed_network import MixedSpec, mixed_network
from dpcg.errors import CITestError

ALPHA = 0.05


def _mixed(n: int, seed: int, beta: float) -> Dataset:
    """Columns X (continuous), Y (3 states), Z (3 states), W (continuous), V (2 states).

    ``X = a[Z] + 0.6 W + beta 1{Y = 2} + e`` and ``Y ~ softmax(B[Z] + u W)``, V depends
    on Y only: ``X _||_ Y | {Z, W}`` iff ``beta = 0``, and ``E[X | Z, W]`` is linear in
    the embedding under the null (the DG test's assumption)."""
    g = np.random.default_rng(seed)
    z = g.integers(0, 3, n)
    w = np.clip(g.standard_normal(n), -4, 4)
    logits = np.array([[0.0, 1.0, -1.0], [1.0, 0.0, 0.5], [-0.5, 0.5, 1.0]])[z] \
        + np.outer(w, [0.0, 0.8, -0.8])
    prob = np.exp(logits)
    prob /= prob.sum(axis=1, keepdims=True)
    y = (g.random(n)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1)
    x = np.array([-0.7, 0.2, 0.5])[z] + 0.6 * w + beta * (y == 2) + g.standard_normal(n)
    v = (g.random(n) < np.where(y == 0, 0.3, 0.7)).astype(int)
    schema = Schema([Continuous("X", -20, 20), Categorical("Y", ["a", "b", "c"]),
                     Categorical("Z", ["0", "1", "2"]), Continuous("W", -4, 4),
                     Categorical("V", ["no", "yes"])])
    return Dataset.from_columns([np.clip(x, -20, 20), y, z, w, v], schema, encoded=True)


def _embed(ds: Dataset, j: int) -> np.ndarray:
    """An independent embedding: unit-variance column or indicators of states 1.."""
    col = ds.schema[j]
    v = ds.column(j)
    if col.is_discrete:
        out: np.ndarray = np.eye(int(col.cardinality))[v][:, 1:]  # type: ignore[arg-type]
        return out
    std: np.ndarray = ((v - v.mean()) / v.std())[:, None]
    return std


def _regression_lrt(ds: Dataset, x: int, y: int, S: tuple[int, ...]) -> float:
    """Bartlett's statistic from two least-squares fits on the rows (the reference)."""
    n = ds.n
    X, Y = _embed(ds, x), _embed(ds, y)
    Z = np.column_stack([np.ones(n)] + [_embed(ds, s) for s in S])

    def resid_cov(target: np.ndarray, design: np.ndarray) -> np.ndarray:
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        r = target - design @ coef
        out: np.ndarray = r.T @ r / n
        return out

    lam = np.linalg.det(resid_cov(X, np.column_stack([Z, Y]))) / np.linalg.det(resid_cov(X, Z))
    dz = Z.shape[1] - 1
    return float(-(n - 1 - dz - (X.shape[1] + Y.shape[1] + 1) / 2) * np.log(lam))


def test_registered_for_any_schema() -> None:
    spec = get_test("dg-lrt")
    assert spec.data == "any"
    assert not spec.private


@pytest.mark.parametrize("query", [(0, 1, ()), (0, 1, (2,)), (0, 1, (2, 3)), (1, 4, (0, 2)),
                                   (4, 3, (1,)), (2, 1, (3, 4, 0))])
def test_statistic_equals_regression_reference(query: tuple[int, int, tuple[int, ...]]) -> None:
    ds = _mixed(3000, 1, 0.3)
    t = DegenerateGaussianTest(ds)
    x, y, S = query
    res = t.test(x, y, S)
    ref = _regression_lrt(ds, x, y, S)
    assert res.statistic == pytest.approx(ref, rel=1e-7, abs=1e-8)
    df = _embed(ds, x).shape[1] * _embed(ds, y).shape[1]
    assert res.pvalue == pytest.approx(float(chi2.sf(ref, df)), rel=1e-6, abs=1e-12)
    # the eigenvalue route agrees with the batched Cholesky route
    w = t.wilks(x, y, S)
    assert w.statistic == pytest.approx(res.statistic, rel=1e-9, abs=1e-9)
    assert w.df == df


def test_continuous_agrees_with_fisher_z() -> None:
    g = np.random.default_rng(3)
    n = 4000
    a = g.standard_normal(n)
    b = 0.5 * a + g.standard_normal(n)
    c = 0.04 * b + 0.5 * a + g.standard_normal(n)
    d = g.standard_normal(n)
    schema = Schema([Continuous(k, -50, 50) for k in "abcd"])
    ds = Dataset.from_numpy(np.column_stack([a, b, c, d]), schema)
    dg, fz = DegenerateGaussianTest(ds), FisherZTest(ds)
    for q in [(0, 1, ()), (1, 2, (0,)), (0, 3, (1, 2)), (2, 3, ())]:
        p1, p2 = dg.test(*q).pvalue, fz.test(*q).pvalue
        assert p1 is not None
        assert p2 is not None
        assert abs(p1 - p2) < 0.01 + 0.05 * max(p1, p2)


def _rate(beta: float, reps: int, n: int) -> float:
    hits = 0
    for r in range(reps):
        res = DegenerateGaussianTest(_mixed(n, 1000 + r, beta), ALPHA).test(0, 1, (2, 3))
        hits += not res.independent
    return hits / reps


def test_type_one_error_in_band() -> None:
    reps = 300
    rate = _rate(0.0, reps, 400)
    lo, hi = binom.ppf(0.005, reps, ALPHA) / reps, binom.ppf(0.995, reps, ALPHA) / reps
    assert lo <= rate <= hi


def test_power_on_dependent_data() -> None:
    assert _rate(0.5, 60, 400) >= 0.9


def test_batch_equals_one_by_one() -> None:
    ds = _mixed(1500, 7, 0.2)
    queries = [(0, 1, ()), (0, 1, (2,)), (1, 0, (3, 2)), (4, 0, (1,)), (3, 4, (0, 1, 2)),
               (2, 3, (4,))]
    many = DegenerateGaussianTest(ds).test_many(queries)
    one = DegenerateGaussianTest(ds)
    for got, q in zip(many, queries, strict=True):
        ref = one.test(*q)
        assert got.independent == ref.independent
        assert got.statistic == pytest.approx(ref.statistic, rel=1e-9, abs=1e-9)
        assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-12)
    # a padded round equals the queries asked in rounds of one width each
    again = DegenerateGaussianTest(ds).test_many(queries)
    assert again == many


def test_degenerate_columns() -> None:
    n = 500
    g = np.random.default_rng(0)
    y = g.integers(1, 3, n)  # category "0" never occurs
    schema = Schema([Continuous("c", 0, 1), Categorical("y", ["0", "1", "2"]),
                     Categorical("ycopy", ["0", "1", "2"]), Continuous("x", -10, 10),
                     Categorical("const", ["k", "l"])])
    x = y + g.standard_normal(n)
    ds = Dataset.from_columns([np.full(n, 0.5), y, y.copy(), np.clip(x, -10, 10),
                               np.zeros(n, dtype=int)], schema, encoded=True)
    t = DegenerateGaussianTest(ds)
    assert t.test(0, 3, ()).pvalue == 1.0  # a constant continuous column
    assert t.test(4, 3, (1,)).pvalue == 1.0  # a constant discrete column
    dep = t.test(1, 3, ())
    assert not dep.independent
    assert dep.pvalue is not None
    assert dep.pvalue < 1e-10
    # y and its copy are collinear: conditioning on the copy explains y away
    r = t.test(1, 3, (2,))
    assert r.independent
    assert r.statistic is not None
    assert np.isfinite(r.statistic)
    assert t.wilks(1, 3, (2,)).df == 0


def test_bad_queries_and_alpha() -> None:
    ds = _mixed(200, 0, 0.0)
    t = DegenerateGaussianTest(ds)
    with pytest.raises(CITestError):
        t.test(0, 0, ())
    with pytest.raises(CITestError):
        t.test(0, 9, ())
    with pytest.raises(CITestError):
        t.test_many([(0, 1, (1,))])
    with pytest.raises(CITestError):
        DegenerateGaussianTest(ds, alpha=1.5)
    with pytest.raises(CITestError):
        DegenerateGaussianTest(ds.column(0))  # type: ignore[arg-type]
    tiny = _mixed(4, 0, 0.0)
    with pytest.raises(CITestError, match="too few"):
        DegenerateGaussianTest(tiny).test(0, 3, (1, 2))


def test_pc_on_mixed_network_python_and_cli(tmp_path: Path) -> None:
    net = mixed_network(MixedSpec(nodes=8, seed=4, max_parents=2))
    ds = net.sample(3000, 0)
    res = discover(ds, test="dg-lrt")
    assert set(res.cpdag.nodes) == set(net.names)
    from dpcg.metrics import skeleton_scores

    assert skeleton_scores(res.cpdag, net.cpdag).f1 >= 0.6
    csv_path, schema_path, out = tmp_path / "m.csv", tmp_path / "m.schema.json", tmp_path / "r.json"
    ds.to_csv(csv_path)
    ds.schema.to_json(schema_path)
    assert main(["discover", "--data", str(csv_path), "--schema", str(schema_path),
                 "--test", "dg-lrt", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["test"] == "dg-lrt"


def test_identifier_column_is_refused_by_declared_width() -> None:
    """A categorical column with one category per row (an identifier) would embed to
    ``n - 1`` columns: refused from the declared schema, naming the column."""
    n = 3000
    g = np.random.default_rng(1)
    ident = np.arange(n)
    schema = Schema([Categorical("id", [str(i) for i in range(n)]), Continuous("x", -9, 9)])
    ds = Dataset.from_columns([ident, np.clip(g.standard_normal(n), -9, 9)], schema,
                              encoded=True)
    with pytest.raises(CITestError, match="'id'") as info:
        DegenerateGaussianTest(ds)
    assert "rule" in str(info.value)
