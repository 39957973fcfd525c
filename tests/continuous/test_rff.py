"""The random-Fourier-feature ridge (``regression="rff"``) of PrivGCM / GCM / PrivCRT:
the feature map, its equivalence with KRR on the finite-rank kernel, the public
frequencies, the sensitivity bounds on adversarial neighbours (docs/privacy/privgcm.md,
"Finite-dimensional feature maps"), the testers and their options, bad input."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.continuous_pc import KernelOptions, PrivCRTOptions
from dpcg.citests.crt import PrivCRTTest, crt_sensitivity, crt_statistics
from dpcg.citests.gcm import GCMTest, PrivGCMTest, c_lambda, residual_products
from dpcg.datasets.sem import shah_peters, shah_peters_bounds, shah_peters_sampler
from dpcg.errors import CITestError, DpcgError
from dpcg.regression import (
    DEFAULT_FEATURES,
    KernelRidge,
    RandomFourierRidge,
    make_ridge,
    rff_frequencies,
    rff_map,
)
from tests.continuous.test_sensitivity import _dataset, _neighbour


def test_feature_map_has_unit_norm_and_is_public() -> None:
    g = np.random.default_rng(0)
    z = g.normal(0, 3, (40, 3))
    w = rff_frequencies(3, 64, 0.5, 7)
    phi = rff_map(z, w)
    assert phi.shape == (40, 64)
    np.testing.assert_allclose((phi * phi).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # the frequencies are a function of public inputs only
    np.testing.assert_array_equal(w, rff_frequencies(3, 64, 0.5, 7))
    assert not np.array_equal(w, rff_frequencies(3, 64, 0.5, 8))
    fac = RandomFourierRidge(0.5, 1.0, 64, 7).factor(z)
    fac2 = RandomFourierRidge(0.5, 1.0, 64, 7).factor(g.normal(size=(10, 3)))
    np.testing.assert_array_equal(fac.freqs, fac2.freqs)


def test_primal_equals_dual_on_the_finite_rank_kernel() -> None:
    """Push-through: the primal fit equals KRR with the kernel K = Phi Phi^T and the
    same objective (residuals n lam alpha, alpha = (K + n lam I)^-1 v)."""
    g = np.random.default_rng(1)
    for n, d, D, lam in [(30, 1, 8, 0.05), (25, 2, 100, 1.0), (40, 0, 4, 3.0)]:
        z = g.uniform(-1, 1, (n, d))
        v = g.uniform(-1, 1, (n, 2))
        fac = RandomFourierRidge(0.4, lam, D, 3).factor(z if d else None, n=n)
        K = fac.phi @ fac.phi.T
        alpha = np.linalg.solve(K + n * lam * np.eye(n), v)
        np.testing.assert_allclose(fac.residuals(v), n * lam * alpha, atol=1e-10)
        np.testing.assert_allclose(fac.fitted(v), K @ alpha, atol=1e-10)
        if d:
            znew = g.uniform(-1, 1, (5, d))
            np.testing.assert_allclose(fac.predict(v, znew),
                                       rff_map(znew, fac.freqs) @ (fac.phi.T @ alpha),
                                       atol=1e-10)


def test_rff_approximates_krr_and_matches_it_without_z() -> None:
    g = np.random.default_rng(2)
    n = 60
    z = g.uniform(-1, 1, (n, 1))
    v = np.sin(3 * z[:, 0]) + 0.1 * g.normal(size=n)
    exact = KernelRidge(0.5, 0.1).factor(z).residuals(v)
    approx = RandomFourierRidge(0.5, 0.1, 1500, 0).factor(z).residuals(v)
    assert np.max(np.abs(exact - approx)) < 0.03
    # no conditioning set: both fit the shrunken constant sum(v) / (n (1 + lam))
    np.testing.assert_allclose(RandomFourierRidge(0.5, 0.1).factor(None, n=n).residuals(v),
                               KernelRidge(0.5, 0.1).factor(None, n=n).residuals(v),
                               atol=1e-12)


@pytest.mark.parametrize("lam", [0.01, 0.3, 1.0, 20.0])
def test_rff_residual_product_l1_sensitivity(lam: float) -> None:
    """Theorem 1 and Lemmas A-D (feature-space form) for the RFF ridge on adversarial
    neighbours, few and many features."""
    g = np.random.default_rng(100 + int(lam * 100))
    a = 1.0 + 1.0 / math.sqrt(lam)
    for _ in range(80):
        n = int(g.integers(2, 30))
        d = int(g.integers(1, 3))
        h = float(g.choice([0.1, 0.5, 2.0]))
        D = int(g.choice([2, 4, 16, 64]))
        seed = int(g.integers(0, 1000))
        x, y, z = _dataset(g, n, d)
        x2, y2, z2 = _neighbour(g, x, y, z)
        ridge = RandomFourierRidge(h, lam, D, seed)
        f1, f2 = ridge.factor(z), ridge.factor(z2)
        r1 = f1.residuals(np.column_stack([x, y]))
        r2 = f2.residuals(np.column_stack([x2, y2]))
        l1 = float(np.abs(r1[:, 0] * r1[:, 1] - r2[:, 0] * r2[:, 1]).sum())
        assert l1 <= c_lambda(lam) * (1 + 1e-9)
        # Lemma A: |r_i| <= a; Lemma B: ||beta' - beta|| <= 2a / (n lam)
        assert np.all(np.abs(r1) <= a + 1e-12)
        b1, b2 = f1.coefficients(x), f2.coefficients(x2)
        delta = b2 - b1
        t = float(np.linalg.norm(delta))
        assert t <= 2 * a / (n * lam) * (1 + 1e-9)
        # Lemma C (exact identity) and D (U <= a^2 / (n lam)), Delta(z) = delta . phi(z)
        dz = f1.phi @ delta  # Delta at z_1..z_n
        dz_new = float(f2.phi[-1] @ delta)  # Delta at z'_n
        U = float(np.sum(dz[:-1] ** 2))
        rx1, rx2 = f1.residuals(x), f2.residuals(x2)
        assert U + n * lam * t * t == pytest.approx(
            dz_new * rx2[-1] - dz[-1] * rx1[-1], rel=1e-6, abs=1e-10)
        assert a * a / (n * lam) * (1 + 1e-9) >= U


def test_rff_residual_products_hill_climb() -> None:
    """Local search over the replaced row at lam = 1 with few features (the most
    'parametric' fit) stays below c_lambda(1)."""
    g = np.random.default_rng(9)
    n, lam = 10, 1.0
    kw = {"bounds_x": (-1.0, 1.0), "bounds_y": (-1.0, 1.0), "bounds_z": [(-1.0, 1.0)],
          "lam": lam, "bandwidth": 0.5, "regression": "rff", "features": 4,
          "feature_seed": 1}
    z = np.zeros((n, 1))
    x = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    y = x.copy()
    base = residual_products(x, y, z, **kw)  # type: ignore[arg-type]
    best = 0.0
    row = (-1.0, 1.0, 0.0)
    for _ in range(150):
        cand = (float(g.choice([-1.0, 1.0])), float(g.choice([-1.0, 1.0])),
                float(np.clip(row[2] + g.normal(0, 0.5), -1, 1)))
        x2, y2, z2 = x.copy(), y.copy(), z.copy()
        x2[0], y2[0], z2[0, 0] = cand
        gap = float(np.abs(residual_products(x2, y2, z2, **kw) - base).sum())  # type: ignore[arg-type]
        if gap >= best:
            best, row = gap, cand
    assert 0.0 < best <= c_lambda(lam)


def test_rff_crt_statistic_sensitivity() -> None:
    g = np.random.default_rng(12)
    for lam in (0.5, 10.0):
        for _ in range(60):
            n = int(g.integers(2, 30))
            m = int(g.integers(1, 5))
            B = float(g.choice([0.5, 1.0]))
            _, y, z = _dataset(g, n, 1)
            _, y2, z2 = _neighbour(g, y, y, z)
            rx = g.normal(0, 2.0, (m + 1, n))
            rx2 = rx.copy()
            rx2[:, -1] = g.choice([-10.0, 10.0, 0.0], size=m + 1)
            ridge = RandomFourierRidge(0.5, lam, int(g.choice([2, 32])), 5)
            T = crt_statistics(rx, ridge.factor(z).residuals(y), B)
            T2 = crt_statistics(rx2, ridge.factor(z2).residuals(y2), B)
            assert np.all(np.abs(T - T2) <= crt_sensitivity(B, lam, n) * (1 + 1e-9))


def _sp(n: int = 400, beta: float = 0.0) -> tuple[np.ndarray, list[tuple[float, float]]]:
    return shah_peters(n, 1, 2.0, beta, 0).values, shah_peters_bounds(1, beta)


def test_privgcm_rff_charges_and_names_the_regression() -> None:
    values, bounds = _sp()
    rec = InMemoryRecorder(Budget(10.0))
    session = Session(Budget(10.0), recorder=rec, seed=1)
    t = PrivGCMTest(values, bounds, session, 0.5, lam=1.0, bandwidth=0.2,
                    regression="rff", features=32, feature_seed=4, names=["X", "Y", "Z1"])
    assert t.sensitivity == c_lambda(1.0)
    res = t.test(0, 1, (2,))
    assert res.pvalue is not None
    assert 0.0 <= res.pvalue <= 1.0
    assert session.spent().epsilon == Fraction(1, 2)
    (entry,) = rec.entries
    assert "regression=rff, features=32, feature_seed=4" in entry.purpose
    assert entry.params["sensitivity"] == pytest.approx(c_lambda(1.0))
    # KRR purposes are unchanged (ledgers of existing runs stay byte-identical)
    t2 = PrivGCMTest(values, bounds, session, 0.5, lam=1.0, bandwidth=0.2)
    t2.test(0, 1, (2,))
    assert "regression" not in rec.entries[-1].purpose


def test_gcm_and_crt_rff_run() -> None:
    values, bounds = _sp(beta=1.0)
    gcm = GCMTest(values, bounds, lam=1e-4, lam_floor=1e-4, bandwidth=0.1,
                  regression="rff", features=100)
    assert not gcm.test(0, 1, (2,)).independent
    session = Session(Budget(10.0), seed=3)
    crt = PrivCRTTest(values, bounds, session, 1.0, shah_peters_sampler(2.0), lam=10.0,
                      regression="rff", features=DEFAULT_FEATURES)
    res = crt.test(0, 1, (2,))
    assert res.pvalue is not None
    assert session.releases == 1


@pytest.mark.parametrize("kwargs", [
    {"regression": "nystrom"},
    {"regression": 3},
    {"regression": "rff", "features": 7},
    {"regression": "rff", "features": 0},
    {"regression": "rff", "features": True},
    {"regression": "rff", "features": 2.0},
    {"regression": "rff", "features": 10**6},
    {"regression": "rff", "feature_seed": -1},
    {"regression": "rff", "feature_seed": "data"},
    {"regression": "krr", "features": 64},
    {"regression": "krr", "feature_seed": 1},
    {"regression": "rff", "lam": 1e-5},
    {"regression": "rff", "bandwidth": "median"},
])
def test_bad_rff_input_raises_and_spends_nothing(kwargs: dict[str, object]) -> None:
    values, bounds = _sp(100)
    session = Session(Budget(5.0), seed=0)
    opts: dict[str, object] = {"lam": 1.0, "bandwidth": 0.5, **kwargs}
    with pytest.raises(CITestError):
        PrivGCMTest(values, bounds, session, 1.0, **opts)  # type: ignore[arg-type]
    mk: dict[str, Any] = {"bandwidth": 0.5, "lam": 1.0, "regression": "krr", **kwargs}
    with pytest.raises(DpcgError):
        make_ridge(**mk)
    assert session.releases == 0
    assert session.spent().epsilon == 0


def test_typed_options() -> None:
    o = KernelOptions(regression="rff", features=64, feature_seed=2)
    assert o.regression_or_default == "rff"
    assert KernelOptions().regression_or_default == "krr"
    assert PrivCRTOptions(regression="rff").features is None
    bads: list[dict[str, Any]] = [
        {"regression": "exact"}, {"features": 64}, {"feature_seed": 1},
        {"regression": "rff", "features": 3}, {"regression": "rff", "feature_seed": -2}]
    for bad in bads:
        with pytest.raises(CITestError):
            KernelOptions(**bad)


def test_audit_search_covers_rff() -> None:
    """The audits' L1 hill climbing on the RFF residual products (small effort) finds
    no neighbour pair above c_lambda(lam)."""
    from audits.sensitivity import Effort, gcm_rff_audit

    r = gcm_rff_audit(Effort(restarts=1, steps=40), seed=3)
    assert r.evaluations > 0
    assert not r.violated
    assert 0.0 < r.max_ratio <= 1.0


def test_cli_discover_privgcm_rff(tmp_path: Path) -> None:
    from dpcg.cli import main
    from dpcg.datasets.sem import random_sem

    ds = random_sem(4, seed=7).sample(200, 0)
    data, schema, out = tmp_path / "d.csv", tmp_path / "s.json", tmp_path / "o.json"
    ds.to_csv(data)
    schema.write_text(ds.schema.to_json())
    base = ["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
            "private-ci-pc", "--test", "privgcm", "--epsilon", "3", "--plan-size", "6",
            "--noise-seed", "2", "--no-ledger", "--quiet"]
    assert main([*base, "--regression", "rff", "--features", "64", "--feature-seed", "5",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["spent"]["epsilon"] <= 3.0
    # bad options are refused before anything is spent (exit code 2)
    for extra in (["--regression", "nystrom"], ["--features", "64"],
                  ["--regression", "rff", "--features", "63"],
                  ["--regression", "rff", "--feature-seed", "-1"]):
        assert main([*base, *extra]) == 2
    # the non-private gcm takes the same options
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--test", "gcm",
                 "--regression", "rff", "--features", "32", "--quiet", "--out",
                 str(out)]) == 0
