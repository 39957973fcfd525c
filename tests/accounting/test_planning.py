"""Planning helpers and dp-accounting metamorphic tests."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from accounting import (
    Budget,
    Exponential,
    Gaussian,
    InvalidParameterError,
    Laplace,
    PrivacyFilter,
    Relation,
    ReportNoisyMax,
    SmoothSensitivityMedian,
    SparseVector,
    TopK,
)
from accounting.costs import zcdp_to_epsilon
from accounting.planning import (
    choose_rule,
    compose_pld,
    gaussian_plan,
    gaussian_sigma_per_test,
    laplace_epsilon_per_test,
    laplace_plan,
    noise_sd,
    report_plan,
)

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402

from accounting.mechanisms import SIGMA_BITS  # noqa: E402

AOR = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
R1 = dp_accounting.NeighboringRelation.REPLACE_ONE
DELTA = 1e-6


@pytest.mark.parametrize("k", [1, 3, 10, 1000, 10_000])
def test_per_test_parameters_fit(k: int) -> None:
    budget = Budget(1.0, 1e-6)
    e = laplace_epsilon_per_test(budget, k)
    assert Fraction(e) * k <= 1
    assert laplace_plan(budget, k, 0.5).epsilon == e
    f = PrivacyFilter(budget, "zcdp")
    g = gaussian_plan(budget, k, 0.5)
    for _ in range(min(k, 1000)):
        f.admit(g.cost(Relation.REPLACE_ONE))
    assert g.rho_under(Relation.REPLACE_ONE) * k <= budget.rho()
    sigma = gaussian_sigma_per_test(budget, k, 0.5)
    exact = 0.5 / math.sqrt(2 * float(budget.rho()) / k)
    # for_rho rounds sigma up to SIGMA_BITS significant bits (short exact totals)
    assert exact * (1 - 1e-12) <= sigma <= exact * (1 + 2.0 ** (1 - SIGMA_BITS))
    with pytest.raises(InvalidParameterError, match="k"):
        laplace_epsilon_per_test(budget, 0)
    with pytest.raises(InvalidParameterError, match="delta"):
        gaussian_plan(Budget(1.0), k, 0.5)


def test_choose_rule() -> None:
    b = Budget(1.0, 1e-6)
    assert choose_rule(Budget(1.0), 10_000, 1.0) == "basic"  # no delta: pure only
    assert choose_rule(b, 1, 1.0) == "basic"
    assert choose_rule(b, 10_000, 1.0) == "zcdp"
    # the choice is the one with the smaller sd, and flips once as k grows
    ks = list(range(1, 400))
    rules = [choose_rule(b, k, 0.05) for k in ks]
    first = ks[rules.index("zcdp")]
    assert all(r == "basic" for k, r in zip(ks, rules, strict=True) if k < first)
    assert all(r == "zcdp" for k, r in zip(ks, rules, strict=True) if k >= first)
    assert noise_sd(b, first, 0.05, "zcdp") < noise_sd(b, first, 0.05, "basic")
    assert noise_sd(b, first - 1, 0.05, "zcdp") >= noise_sd(b, first - 1, 0.05, "basic")
    # tens of tests at delta 1e-6 (PRIVACY.md section 7: "more than ~30 tests")
    assert 5 < first < 100


def test_metamorphic_laplace_gaussian() -> None:
    for event, rel in ((dp_accounting.LaplaceDpEvent(2.0), AOR),
                       (dp_accounting.GaussianDpEvent(3.0), AOR)):
        k = 6
        once = PLDAccountant(rel)
        once.compose(event, k)
        each = PLDAccountant(rel)
        for _ in range(k):
            each.compose(event)
        assert once.get_epsilon(DELTA) == pytest.approx(each.get_epsilon(DELTA), rel=2e-3)
        r_once = RdpAccountant(neighboring_relation=rel)
        r_once.compose(event, k)
        r_each = RdpAccountant(neighboring_relation=rel)
        for _ in range(k):
            r_each.compose(event)
        assert r_once.get_epsilon(DELTA) == pytest.approx(r_each.get_epsilon(DELTA), rel=1e-9)
        helper = compose_pld([(event, k)], rel)
        assert helper.get_epsilon(DELTA) == pytest.approx(each.get_epsilon(DELTA), rel=2e-3)


def test_randomized_response_count_bug_and_workaround() -> None:
    rr = dp_accounting.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)
    k = 5
    single = PLDAccountant(R1)
    single.compose(rr)
    raw = PLDAccountant(R1)
    raw.compose(rr, k)
    each = PLDAccountant(R1)
    for _ in range(k):
        each.compose(rr)
    eps1, eps_raw, eps_each = (a.get_epsilon(DELTA) for a in (single, raw, each))
    # the bug in dp-accounting 0.6.0: count is ignored
    assert eps_raw == pytest.approx(eps1)
    assert eps_each > 3 * eps1
    # our helper composes RR one at a time, also inside composite events
    assert compose_pld([(rr, k)], R1).get_epsilon(DELTA) == pytest.approx(eps_each, rel=1e-9)
    nested = dp_accounting.SelfComposedDpEvent(
        dp_accounting.ComposedDpEvent([rr, dp_accounting.SelfComposedDpEvent(rr, 2)]), 2
    )
    six = PLDAccountant(R1)
    for _ in range(6):
        six.compose(rr)
    assert compose_pld([(nested, 1)], R1).get_epsilon(DELTA) == pytest.approx(
        six.get_epsilon(DELTA), rel=1e-9
    )
    # pure-eps RR: k-fold basic composition is an upper bound of the PLD composition
    eps_rr = math.log(3.0)  # noise 0.5, 2 buckets: p = 0.75 vs 0.25
    assert eps_each <= k * eps_rr * (1 + 1e-3)  # pessimistic discretisation


def test_replace_one_disagreement_documented() -> None:
    """Why report_plan uses ADD_OR_REMOVE_ONE: under REPLACE_ONE the PLD Gaussian
    doubles the sensitivity while RDP does not."""
    g = dp_accounting.GaussianDpEvent(2.0)
    pld = PLDAccountant(R1)
    pld.compose(g, 10)
    rdp = RdpAccountant(neighboring_relation=R1)
    rdp.compose(g, 10)
    assert pld.get_epsilon(DELTA) > 1.8 * rdp.get_epsilon(DELTA)
    pld_a = PLDAccountant(AOR)
    pld_a.compose(g, 10)
    rdp_a = RdpAccountant(neighboring_relation=AOR)
    rdp_a.compose(g, 10)
    assert pld_a.get_epsilon(DELTA) <= rdp_a.get_epsilon(DELTA)


def test_report_plan() -> None:
    lap = Laplace(0.1, 0.05)
    rep = report_plan([(lap, 40)], DELTA)
    assert rep.basic is not None
    assert rep.basic == pytest.approx(2.0)
    assert rep.basic_delta == 0.0
    zc = float(zcdp_to_epsilon(Fraction(40) * Fraction(0.05) ** 2 / 2, Fraction(DELTA)))
    assert rep.zcdp == pytest.approx(zc, rel=1e-9)
    # the PLD is the tightest, and below basic composition
    assert rep.pld < rep.basic
    assert rep.rdp is not None
    assert rep.pld <= rep.rdp + 1e-6
    assert rep.best() == pytest.approx(rep.pld)
    # the same with dp-accounting's own accountant
    acc = PLDAccountant(AOR)
    acc.compose(dp_accounting.LaplaceDpEvent(1 / 0.05), 40)
    assert rep.pld == pytest.approx(acc.get_epsilon(DELTA), rel=1e-6)
    # relation conversion: an add/remove declaration costs double under replace-one
    rep_ar = report_plan([(Laplace(0.1, 0.05, relation=Relation.ADD_REMOVE), 40)], DELTA)
    assert rep_ar.basic == pytest.approx(4.0)
    assert rep_ar.pld > rep.pld
    # Gaussian: no basic epsilon
    g = Gaussian(1.0, 10.0)
    rg = report_plan([(g, 30)], DELTA)
    assert rg.basic is None
    assert rg.pld <= rg.rdp + 1e-6  # type: ignore[operator]
    # pure-eps mechanisms without an event use their privacy parameters / zCDP bound
    mixed = report_plan(
        [(lap, 10), (ReportNoisyMax(1.0, 0.1), 3), (Exponential(1.0, 0.1), 2),
         (SparseVector(0.0, 1.0, 0.2), 4)], DELTA
    )
    assert mixed.basic is not None
    assert mixed.basic == pytest.approx(0.5 + 0.3 + 0.2 + 0.8)
    assert mixed.pld <= mixed.basic + 1e-9
    # top-k is planned as k exponential mechanisms (pure k eps, rho k eps^2/8)
    top = report_plan([(TopK(1.0, 0.1, 3), 2)], DELTA)
    em = report_plan([(Exponential(1.0, 0.1), 6)], DELTA)
    assert top.basic == em.basic == pytest.approx(0.6)
    assert top.zcdp == em.zcdp
    assert top.rdp == pytest.approx(em.rdp)
    # approximate DP: PLD finite when delta exceeds the mechanism's, RDP unavailable
    sm = report_plan([(SmoothSensitivityMedian(0.5, 1e-8, 0.0, 1.0), 2)], DELTA)
    assert sm.rdp is None
    assert sm.zcdp is None
    assert sm.basic_delta == pytest.approx(2e-8)
    assert sm.pld <= 1.0 + 1e-9
    with pytest.raises(InvalidParameterError, match="delta"):
        report_plan([(lap, 1)], 0.0)
    with pytest.raises(InvalidParameterError, match="plan"):
        report_plan([], DELTA)
