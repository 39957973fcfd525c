"""Sensitivity audits: registry coverage, no violation, Priv-PC counterexample."""

from __future__ import annotations

import math

import pytest

import dpcg.citests.private
import dpcg.stats  # noqa: F401
from audits.sensitivity import (
    CASES,
    QUICK,
    Effort,
    Pair,
    UnauditedSpecError,
    audit_all,
    audit_spec,
    gap,
    privpc_conditional_tau_spec,
    privpc_counterexample,
    public_params,
    unaudited,
)
from dpcg.stats.registry import all_specs, get


def test_every_registered_spec_has_an_audit() -> None:
    assert unaudited(all_specs()) == []


def test_missing_generator_fails_the_suite() -> None:
    specs = all_specs()
    assert unaudited(specs, {}) == sorted({s.name for s in specs})
    with pytest.raises(UnauditedSpecError):
        public_params(privpc_conditional_tau_spec().__class__(
            name="x", relation=specs[0].relation, sensitivity=lambda **_: 1.0,
            assumptions="", proof_note="", statistic=lambda *a, **k: 0.0,
            public_params=("mystery",)), *privpc_counterexample(20), 1.0)


@pytest.mark.slow
def test_registered_bounds_hold() -> None:
    light = Effort(random_trials=60, restarts=2, steps=60, hypothesis_examples=30)
    for r in audit_all(light, seed=1):
        assert not r.violated, (r.name, r.relation, r.max_ratio, r.witness)


def test_privpc_counterexample_regression() -> None:
    d, dp = privpc_counterexample()
    spec = privpc_conditional_tau_spec()
    g, b = gap(spec, Pair(d, dp, {"n": 10_000}))
    assert g == pytest.approx(0.47, abs=0.01)
    assert b == pytest.approx(4.5 / math.sqrt(10_000))
    # the project's floored statistic stays within its bound on the same pair
    real = get("conditional-kendall-z")
    pair = Pair(d, dp, public_params(real, d, dp, 2.25))
    g2, b2 = gap(real, pair)
    assert g2 <= b2


def test_mutant_spec_is_flagged_by_search_alone() -> None:
    r = audit_spec(privpc_conditional_tau_spec(), CASES["conditional-kendall-z"], QUICK, 5)
    assert r.violated
    assert r.by_method["local-search"] > 1.0


#: Statistics whose declared bound the audit does not reach to 0.8 (docs/audits.md,
#: "Where 0.8 is not reached, and why"); every other one must.
BELOW_TARGET = {"spearman-rho-a", "conditional-spearman-z", "crt-statistic",
                "gcm-residual-product-sum", "rank-moment-entry"}


def test_constructions_reach_the_tightness_target() -> None:
    """The proof notes' constructions reach >= 0.8 of every declared bound outside
    BELOW_TARGET (so a bound 1.25x too small is refuted), and never exceed it."""
    from audits.sensitivity import constructions, gap

    for spec in all_specs():
        ratios = [g / b for g, b in (gap(spec, p) for p in constructions(spec))]
        assert all(r <= 1.0 + 1e-9 for r in ratios), (spec.name, spec.relation, ratios)
        # n-cmi add-remove: attained by the random search (no construction needed)
        no_construction = spec.name == "n-cmi" and spec.relation.value == "add-remove"
        if spec.name not in BELOW_TARGET and not no_construction:
            assert ratios, (spec.name, spec.relation)
            assert max(ratios) >= 0.8, (spec.name, spec.relation, ratios)


def test_spearman_step_maximum_is_exact_and_below_five() -> None:
    """docs/privacy/statistics-conditional-spearman-z.md, "Audit": the exact maximum of
    one addition's change of a block's G is (5m - 2)/(m + 2) < 5 (the construction's
    value), checked against every block of <= 3 rows with ties and every new row."""
    import itertools

    import numpy as np

    from audits.sensitivity import spearman_step_maximum

    spec = get("conditional-spearman-z")

    def block_u(x: list[int], y: list[int]) -> float:
        n = len(x)
        z = spec.evaluate(np.asarray(x), np.asarray(y), np.zeros(n, np.int64), n=n)
        return float(z) * math.sqrt(n)

    for m, values in ((2, 3), (3, 3)):
        brute = max(
            block_u([*xs, p], [*ys, q]) - block_u(list(xs), list(ys))
            for xs in itertools.product(range(values), repeat=m)
            for ys in itertools.product(range(values), repeat=m)
            for p in range(values + 1) for q in range(values + 1))
        step, _, _ = spearman_step_maximum(m)
        assert brute <= step + 1e-9
        if values > m:  # every placement of the new row is reachable: equal
            assert brute == pytest.approx(step)
    for m in range(1, 26):
        step, p, q = spearman_step_maximum(m)
        assert step == pytest.approx((5 * m - 2) / (m + 2))
        assert (p, q) in ((0, 0), (m, m))


def test_krr_fit_is_at_most_half_the_lemma_a_range() -> None:
    """docs/privacy/privgcm.md, Lemma A': |f_D(z)| <= 1/(2 sqrt(lam)) for targets in
    [-1, 1] (half of Lemma A's lam^-1/2), nearly attained by one cluster of rows."""
    import numpy as np

    from dpcg.regression import KernelRidge

    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(400):
        n = int(rng.integers(2, 30))
        lam = float(rng.choice([0.01, 0.1, 1.0, 4.0]))
        z = rng.normal(size=(n, 1)) * float(rng.choice([0.01, 1.0, 5.0]))
        v = rng.choice([-1.0, 1.0], size=n) if rng.random() < 0.5 else rng.uniform(-1, 1, n)
        fit = v - KernelRidge(float(rng.choice([0.1, 0.5, 2.0])), lam).factor(z).residuals(v)
        worst = max(worst, float(np.abs(fit).max()) * 2.0 * math.sqrt(lam))
    assert worst <= 1.0 + 1e-9
    # attained: n rows at one z, all targets 1, lam = 1 (K = 11^T: f = 1/(1 + lam) = 1/2)
    one = KernelRidge(0.5, 1.0).factor(np.zeros((20, 1)))
    assert np.allclose(1.0 - one.residuals(np.ones(20)), 0.5)
