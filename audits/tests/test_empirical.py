"""Unit tests of the Clopper-Pearson auditor and the exact pmfs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audits.empirical import (
    EmpiricalResult,
    Event,
    Sampler,
    audit,
    candidate_events,
    cp_lower,
    cp_upper,
    epsilon_lower_bound,
    exact_epsilon,
)
from audits.exact import (
    exponential_mechanism_pmf,
    rnm_pmf,
    svt_pmf,
    top_k_outcomes,
    top_k_pmf,
)
from audits.fixtures import laplace_pair, rnm_pair, svt_pair, top_k_pair
from audits.mutants import (
    laplace_sampler,
    rnm_sampler,
    svt_sampler,
    svt_variant,
    top_k_sampler,
)


def test_clopper_pearson_matches_beta_quantiles() -> None:
    k = np.array([0, 1, 50, 100])
    lo = cp_lower(k, 100, 0.025)
    hi = cp_upper(k, 100, 0.025)
    assert lo[0] == 0.0
    assert hi[-1] == 1.0
    assert lo[2] == pytest.approx(stats.beta.ppf(0.025, 50, 51))
    assert hi[2] == pytest.approx(stats.beta.ppf(0.975, 51, 50))
    assert np.all(lo <= k / 100)
    assert np.all(hi >= k / 100)


def test_clopper_pearson_coverage() -> None:
    """The one-sided bounds cover the true p at least 1 - a of the time."""
    rng = np.random.default_rng(0)
    p, n, a = 0.03, 400, 0.05
    k = rng.binomial(n, p, size=20_000)
    assert np.mean(cp_lower(k, n, a) <= p) >= 1 - a
    assert np.mean(cp_upper(k, n, a) >= p) >= 1 - a


def test_epsilon_bound_is_delta_aware_and_handles_zero() -> None:
    e0 = float(epsilon_lower_bound(500, 1000, 100, 1000, 0.05))
    e1 = float(epsilon_lower_bound(500, 1000, 100, 1000, 0.05, delta=0.1))
    assert 0 < e1 < e0 < math.log(5)
    assert epsilon_lower_bound(0, 1000, 10, 1000, 0.05) == -np.inf


def test_events_and_candidates() -> None:
    out = np.array([[0, 1], [1, 1], [0, 1]], dtype=np.int8)
    assert Event("eq", (0, 1)).indicator(out).tolist() == [True, False, True]
    assert Event("gt", 0.5, 0).indicator(out).tolist() == [False, True, False]
    c = candidate_events(out, out[::-1])
    assert len(c.events) == c.counts_d.size == c.counts_dp.size
    scalar = np.array([0.1, 0.5, 2.0])
    assert Event("lt", 1.0).indicator(scalar).tolist() == [True, True, False]


def test_exact_epsilon_pure_and_delta() -> None:
    p = np.array([0.5, 0.5])
    q = np.array([0.25, 0.75])
    assert exact_epsilon(p, q) == pytest.approx(math.log(2))
    assert exact_epsilon(p, np.array([1.0, 0.0])) == math.inf
    assert exact_epsilon(p, q, delta=0.25) == pytest.approx(0.0)
    assert 0 < exact_epsilon(p, q, delta=0.1) < math.log(2)


def test_exact_pmfs_are_tight_on_worst_case_fixtures() -> None:
    pair = svt_pair()
    a = svt_pmf(pair.d, 0.0, 2.0, 4.0)
    b = svt_pmf(pair.d_prime, 0.0, 2.0, 4.0)
    assert a.sum() == pytest.approx(1.0)
    assert b.sum() == pytest.approx(1.0)
    assert 0.95 < exact_epsilon(a, b) <= 1.0 + 1e-9
    r = rnm_pair()
    for noise in ("exponential", "laplace"):
        e = exact_epsilon(rnm_pmf(r.d, 2.0, noise), rnm_pmf(r.d_prime, 2.0, noise))
        assert 0.95 < e <= 1.0 + 1e-9
    em = exact_epsilon(exponential_mechanism_pmf(r.d, 1.0, 1.0),
                       exponential_mechanism_pmf(r.d_prime, 1.0, 1.0))
    assert 0.95 < em <= 1.0


def test_rnm_pmf_matches_monte_carlo() -> None:
    rng = np.random.default_rng(3)
    s = np.array([0.0, 1.0, 0.5])
    out = rnm_sampler(1.0, 1.0, "exponential")(s, 200_000, rng)
    freq = np.bincount(out, minlength=3) / out.size
    assert np.allclose(freq, rnm_pmf(s, 2.0, "exponential"), atol=5e-3)


def test_auditor_flags_half_scale_laplace_and_passes_correct() -> None:
    pair = laplace_pair()
    def run(s: Sampler) -> EmpiricalResult:
        return audit("laplace", s, pair.d, pair.d_prime, declared_epsilon=1.0,
                     n_selection=20_000, n_fresh=200_000, alpha=0.01, seed=7)

    good = run(laplace_sampler(1.0, 1.0))
    bad = run(laplace_sampler(1.0, 1.0, scale_factor=0.5))
    assert 0.8 < good.epsilon_lb <= 1.0
    assert bad.exceeds
    assert bad.epsilon_lb > 1.5


def test_auditor_on_svt_patterns() -> None:
    pair = svt_pair()
    def run(name: str) -> EmpiricalResult:
        return audit(name, svt_sampler(svt_variant(name, 1.0, 1.0), 0.0), pair.d, pair.d_prime,
                     declared_epsilon=1.0, n_selection=50_000, n_fresh=300_000, alpha=0.01,
                     seed=11)

    ok = run("alg1")
    bad = run("alg5")
    assert not ok.exceeds
    assert bad.exceeds


def test_top_k_pmf_is_peeling_and_matches_both_samplers() -> None:
    from accounting.mechanisms import Exponential, TopK

    u = np.array([0.0, 1.0, 0.5, -0.5])
    pmf = top_k_pmf(u, 1.0, 2.0, 2)
    outcomes = top_k_outcomes(4, 2)
    assert len(outcomes) == pmf.size == 12
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    em = Exponential(1.0, 2.0)
    for (i, j), p in zip(outcomes, pmf, strict=True):
        rest = [r for r in range(4) if r != i]
        assert p == pytest.approx(em.probabilities(u)[i]
                                  * em.probabilities(u[rest])[rest.index(j)], rel=1e-12)
    sets = top_k_pmf(u, 1.0, 2.0, 2, ordered=False)
    assert top_k_outcomes(4, 2, ordered=False)[0] == (0, 1)
    assert sets[0] == pytest.approx(pmf[outcomes.index((0, 1))] + pmf[outcomes.index((1, 0))])
    assert np.allclose(top_k_pmf(u, 1.0, 2.0, 1), exponential_mechanism_pmf(u, 1.0, 2.0))
    for sample in (top_k_sampler(1.0, 2.0, 2)(u, 200_000, np.random.default_rng(5)),
                   TopK(1.0, 2.0, 2).sample(u, np.random.default_rng(6), 200_000)):
        codes = np.array([outcomes.index((int(a), int(b))) for a, b in sample[:20_000]])
        freq = np.bincount(codes, minlength=12) / codes.size
        assert np.allclose(freq, pmf, atol=0.012)


def test_top_k_exact_loss_on_the_fixture() -> None:
    pair = top_k_pair(2)
    ok = exact_epsilon(top_k_pmf(pair.d, 1.0, 1.0, 2), top_k_pmf(pair.d_prime, 1.0, 1.0, 2))
    assert 0.9 * 2 < ok <= 2.0
    sets = exact_epsilon(top_k_pmf(pair.d, 1.0, 1.0, 2, ordered=False),
                         top_k_pmf(pair.d_prime, 1.0, 1.0, 2, ordered=False))
    assert sets <= ok + 1e-12  # post-processing
    bad = exact_epsilon(top_k_pmf(pair.d, 1.0, 2.0, 2), top_k_pmf(pair.d_prime, 1.0, 2.0, 2))
    assert bad > 1.8 * 2  # logits eps u / Delta: close to 2 k eps


def test_auditor_on_top_k() -> None:
    pair = top_k_pair(2)

    def run(s: Sampler, declared: float) -> EmpiricalResult:
        return audit("top-k", s, pair.d, pair.d_prime, declared_epsilon=declared,
                     n_selection=20_000, n_fresh=200_000, alpha=0.01, seed=13)

    good = run(top_k_sampler(1.0, 1.0, 2), 2.0)
    assert not good.exceeds
    assert good.epsilon_lb > 1.2
    assert run(top_k_sampler(1.0, 1.0, 2, logit_factor=2.0), 2.0).exceeds
    assert run(top_k_sampler(1.0, 1.0, 2), 1.0).exceeds  # charged for one selection
