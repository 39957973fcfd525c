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
                "gcm-residual-product-sum"}


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
