"""PrivGCM, PrivCRT, the Kendall baseline and the subsample-and-aggregate G-test on an
accounting Session: charging, ledger entries, bad input, null calibration."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.base import CIResult, CITest
from dpcg.citests.crt import (
    CRTTest,
    GaussianLinearSampler,
    GaussianModelX,
    PrivCRTTest,
    crt_sensitivity,
)
from dpcg.citests.gcm import GCMTest, PrivGCMTest, c_lambda
from dpcg.citests.kendall_kmeans import PrivateKendallDiscretisedZ
from dpcg.citests.subsample_aggregate import SubsampleAggregateGTest
from dpcg.data import Categorical, Dataset, Schema
from dpcg.data.readers import unsafe_debug_errors
from dpcg.datasets.sem import shah_peters, shah_peters_bounds, shah_peters_sampler
from dpcg.errors import CITestError, DpcgError


def _session(eps: float = 100.0, seed: int = 0, delta: float = 0.0) -> Session:
    return Session(Budget(eps, delta), seed=seed)


def _sp(n: int = 300, beta: float = 0.0, seed: int = 0, d: int = 1
        ) -> tuple[np.ndarray, list[tuple[float, float]]]:
    ds = shah_peters(n, d, 2.0, beta, seed)
    return ds.values, shah_peters_bounds(d, beta)


def test_privgcm_charges_and_records() -> None:
    values, bounds = _sp()
    rec = InMemoryRecorder(Budget(10.0))
    session = Session(Budget(10.0), recorder=rec, seed=1)
    t = PrivGCMTest(values, bounds, session, 0.5, lam=1.0, bandwidth=0.2,
                    names=["X", "Y", "Z1"])
    assert isinstance(t, CITest)
    res = t.test(0, 1, (2,))
    assert isinstance(res, CIResult)
    assert res.pvalue is not None
    assert 0.0 <= res.pvalue <= 1.0
    assert session.spent().epsilon == Fraction(1, 2)
    assert len(rec.entries) == 1
    entry = rec.entries[0]
    assert "PrivGCM" in entry.purpose
    assert entry.params["sensitivity"] == pytest.approx(c_lambda(1.0))


def test_privcrt_charges_one_rnm() -> None:
    values, bounds = _sp()
    rec = InMemoryRecorder(Budget(100.0))
    session = Session(Budget(100.0), recorder=rec, seed=2)
    t = PrivCRTTest(values, bounds, session, 1.0, shah_peters_sampler(2.0), lam=1.0,
                    release="rank")
    assert t.m == 19
    res = t.test(0, 1, (2,))
    assert res.statistic is None
    assert res.pvalue in {r / 20 for r in range(1, 21)}
    assert session.spent().epsilon == Fraction(1)
    assert t.sensitivity == pytest.approx(crt_sensitivity(1.0, 1.0, 300))
    assert rec.entries[-1].mechanism == "report-noisy-max"


def test_privcrt_threshold_charges_one_laplace() -> None:
    values, bounds = _sp()
    rec = InMemoryRecorder(Budget(100.0))
    session = Session(Budget(100.0), recorder=rec, seed=2)
    t = PrivCRTTest(values, bounds, session, 1.0, shah_peters_sampler(2.0), lam=1.0)
    assert (t.m, t.k, t.release) == (19, 1, "threshold")
    res = t.test(0, 1, (2,))
    assert isinstance(res.statistic, float)
    # the decision is the sign of the released margin; the p-value k/(m+1) or 1
    assert res.independent == (res.statistic <= 0.0)
    assert res.pvalue == (1.0 if res.independent else 1 / 20)
    assert session.spent().epsilon == Fraction(1)
    entry = rec.entries[-1]
    assert entry.mechanism == "laplace"
    assert entry.params["sensitivity"] == pytest.approx(2 * crt_sensitivity(1.0, 1.0, 300))
    assert "PrivCRT threshold" in entry.purpose
    with pytest.raises(CITestError):
        PrivCRTTest(values, bounds, session, 1.0, shah_peters_sampler(2.0), release="x")


def _assert_no_spend(session: Session, fn: object) -> None:
    before = session.spent()
    with pytest.raises(DpcgError):
        fn()  # type: ignore[operator]
    assert session.spent() == before
    assert session.releases == 0


def test_bad_input_spends_nothing() -> None:
    values, bounds = _sp()
    s = _session()
    bad = values.copy()
    bad[1, 5] = np.nan
    _assert_no_spend(s, lambda: PrivGCMTest(bad, bounds, s, 1.0))
    inf = values.copy()
    inf[0, 0] = np.inf
    _assert_no_spend(s, lambda: PrivCRTTest(inf, bounds, s, 1.0, shah_peters_sampler(2.0)))
    _assert_no_spend(s, lambda: PrivGCMTest(values, None, s, 1.0))
    _assert_no_spend(s, lambda: PrivGCMTest(values, bounds[:2], s, 1.0))
    _assert_no_spend(s, lambda: PrivGCMTest(values, [(1.0, 0.0)] * 3, s, 1.0))
    _assert_no_spend(s, lambda: PrivGCMTest(values, bounds, s, 1.0, lam=1e-4))
    _assert_no_spend(s, lambda: PrivGCMTest(values, bounds, s, 1.0, bandwidth="median"))  # type: ignore[arg-type]
    _assert_no_spend(s, lambda: PrivGCMTest(values, bounds, s, 1.0,
                                            bandwidth=lambda z: 1.0))  # type: ignore[arg-type]
    _assert_no_spend(s, lambda: PrivGCMTest(values, bounds, s, 0.0))
    _assert_no_spend(s, lambda: PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0),
                                            m=10))
    _assert_no_spend(s, lambda: PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0),
                                            m=99, alpha=0.001))
    _assert_no_spend(s, lambda: PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0),
                                            residual_bound=0.0))
    t = PrivGCMTest(values, bounds, s, 1.0)
    _assert_no_spend(s, lambda: t.test(0, 0, ()))
    _assert_no_spend(s, lambda: t.test(0, 1, (1,)))
    _assert_no_spend(s, lambda: t.test(0, 7, ()))
    # a sampler that returns the wrong shape fails before the release
    wrong = GaussianLinearSampler((1.0, 2.0), 0.0, 1.0)  # 2 coefficients for |S| = 1
    c = PrivCRTTest(values, bounds, s, 1.0, wrong)
    _assert_no_spend(s, lambda: c.test(0, 1, (2,)))
    _assert_no_spend(s, lambda: PrivateKendallDiscretisedZ(values, bounds, s, 1.0,
                                                           discretisation="kmeans"))


def test_non_finite_error_names_column_and_rule_only() -> None:
    values, bounds = _sp()
    bad = values.copy()
    bad[1, 17] = np.inf
    with pytest.raises(DpcgError) as err:
        PrivGCMTest(bad, bounds, _session(), 1.0)
    msg = str(err.value)
    assert "column 1" in msg
    assert "finite" in msg
    assert "17" not in msg  # the row
    assert "inf" not in msg  # the value
    with unsafe_debug_errors(), pytest.raises(DpcgError, match="row 17"):
        PrivGCMTest(bad, bounds, _session(), 1.0)


def test_default_m_and_too_small_m() -> None:
    values, bounds = _sp(50)
    s = _session()
    assert PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0), alpha=0.1).m == 9
    assert PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0), alpha=0.01).m == 99
    PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0), alpha=0.05, m=19)


def test_nonprivate_comparisons_detect_dependence() -> None:
    values, bounds = _sp(400, beta=1.0, seed=3)
    g = GCMTest(values, bounds, lam=1e-3, bandwidth=0.1)
    assert not g.test(0, 1, (2,)).independent
    c = CRTTest(values, bounds, shah_peters_sampler(2.0), generator=np.random.default_rng(0),
                lam=1e-3, bandwidth=0.1)
    r = c.test(0, 1, (2,))
    assert not r.independent
    assert r.pvalue == pytest.approx(1 / 20)


def test_privcrt_power_at_strong_dependence() -> None:
    values, bounds = _sp(2000, beta=2.0, seed=4)
    s = _session(1000.0, seed=4)
    t = PrivCRTTest(values, bounds, s, 4.0, shah_peters_sampler(2.0), lam=1.0,
                    residual_bound=0.5)
    rejections = sum(not t.test(0, 1, (2,)).independent for _ in range(20))
    assert rejections >= 10


def test_null_calibration_small_n() -> None:
    """200 repetitions at n = 300 under the null: rejection rates in a loose band."""
    reps, n = 200, 300
    rej = {"privgcm": 0, "privcrt": 0}
    for rep in range(reps):
        values, bounds = _sp(n, beta=0.0, seed=1000 + rep)
        s = _session(seed=rep)
        rej["privgcm"] += not PrivGCMTest(values, bounds, s, 1.0, lam=1.0,
                                          bandwidth=0.1).test(0, 1, (2,)).independent
        rej["privcrt"] += not PrivCRTTest(values, bounds, s, 1.0, shah_peters_sampler(2.0),
                                          lam=1.0, bandwidth=0.1).test(0, 1, (2,)).independent
    for name, k in rej.items():
        assert 0.01 <= k / reps <= 0.11, (name, k)


def test_gaussian_model_x_conditionals() -> None:
    C = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.3], [0.2, 0.3, 1.0]])
    mx = GaussianModelX.from_arrays(np.zeros(3), C)
    smp = mx.sampler(0, (1, 2))
    coef = np.linalg.solve(C[1:, 1:], C[1:, 0])
    np.testing.assert_allclose(smp.coef, coef)
    assert smp.sigma == pytest.approx(np.sqrt(C[0, 0] - C[0, 1:] @ coef))
    assert mx.sampler(1, ()).sigma == pytest.approx(1.0)
    with pytest.raises(DpcgError):
        GaussianModelX.from_arrays(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))


def test_kendall_grid_private_and_kmeans_opt_in() -> None:
    values, bounds = _sp(400, beta=1.0, seed=5)
    s = _session()
    t = PrivateKendallDiscretisedZ(values, bounds, s, 1.0, discretisation="grid", bins=4)
    assert t.private
    r = t.test(0, 1, (2,))
    assert r.statistic is not None
    assert s.spent().epsilon == Fraction(1)
    km = PrivateKendallDiscretisedZ(values, bounds, s, 1.0, discretisation="kmeans",
                                    allow_data_dependent_strata=True)
    assert not km.private
    km.test(0, 1, (2,))
    pub = PrivateKendallDiscretisedZ(values, bounds, s, 1.0, discretisation="kmeans",
                                     centres=np.array([[-0.5], [0.0], [0.5]]))
    assert pub.private
    pub.test(0, 1, (2,))


def test_subsample_aggregate_gtest() -> None:
    g = np.random.default_rng(0)
    n = 20_000
    a = g.integers(0, 2, n)
    b = np.where(g.uniform(size=n) < 0.9, a, 1 - a)
    c = g.integers(0, 2, n)
    schema = Schema([Categorical(nm, [0, 1]) for nm in "ABC"])
    ds = Dataset.from_codes(np.vstack([a, b, c]), schema)
    s = _session(10.0, delta=1e-3)
    t = SubsampleAggregateGTest(ds, s, 1.0, 1e-6, blocks=500)
    dep = t.test(0, 1, ())
    assert not dep.independent
    assert s.spent().epsilon == Fraction(1)
    assert s.spent().delta == Fraction(1e-6)
    ind = t.test(0, 2, ())
    assert ind.pvalue is not None
    assert 0.0 <= ind.pvalue <= 1.0
    before = s.spent()
    with pytest.raises(DpcgError):
        SubsampleAggregateGTest(ds, s, 1.0, 0.0)
    with pytest.raises(DpcgError):
        SubsampleAggregateGTest(ds, s, 1.0, 1e-6, blocks=0)
    with pytest.raises(DpcgError):
        t.test(0, 0, ())
    assert s.spent() == before
