"""Mechanism parameters, costs, relations, events and rebuilding from stored params."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting import (
    Budget,
    Cost,
    Exponential,
    Gaussian,
    InMemoryRecorder,
    InvalidParameterError,
    Laplace,
    Relation,
    ReportNoisyMax,
    Session,
    SmoothSensitivityMedian,
    SparseVector,
    SubsampledSparseVector,
    TopK,
    mechanism_from_params,
)
from accounting.errors import StatisticError
from accounting.mechanisms import MECHANISMS, SIGMA_BITS, dilation_defect, round_up_bits

GOOD: dict[str, dict[str, Any]] = {
    "laplace": {"sensitivity": 0.5, "epsilon": 0.3},
    "grouped-laplace": {"sensitivity": 0.5, "epsilon": 0.3, "groups": 4},
    "gaussian": {"l2_sensitivity": 0.5, "sigma": 2.0},
    "report-noisy-max": {"sensitivity": 1.0, "epsilon": 0.3, "noise": "exponential"},
    "exponential": {"sensitivity": 1.0, "epsilon": 0.3},
    "top-k": {"sensitivity": 1.0, "epsilon": 0.3, "k": 2},
    "group-top-k": {"sensitivity": 1.0, "epsilon": 0.3, "k": 2, "groups_sha256": "0" * 64,
                    "candidates": 3},
    "smooth-sensitivity-median": {"epsilon": 0.5, "delta": 1e-6, "lower": 0.0, "upper": 1.0},
    "sparse-vector": {"threshold": 1.0, "sensitivity": 0.1, "epsilon": 0.4, "cutoff": 2},
    "subsampled-sparse-vector": {
        "n": 1000, "m": 50, "threshold": 1.0, "sensitivity": 0.1, "epsilon": 0.4,
    },
}

NAN, INF = float("nan"), float("inf")
BAD: list[tuple[str, str, object]] = [
    ("grouped-laplace", "groups", 1),
    ("grouped-laplace", "groups", 2.5),
    *[(k, p, v) for k in ("laplace", "report-noisy-max", "exponential", "top-k",
                          "group-top-k", "sparse-vector", "subsampled-sparse-vector")
      for p in ("sensitivity", "epsilon") for v in (0.0, -1.0, NAN, INF, "1", True, None)],
    *[("gaussian", p, v) for p in ("l2_sensitivity", "sigma")
      for v in (0.0, -1.0, NAN, INF, "1", None)],
    *[("smooth-sensitivity-median", "epsilon", v) for v in (0.0, -1.0, NAN, INF, 50.0)],
    *[("smooth-sensitivity-median", "delta", v) for v in (0.0, -0.1, 1.0, 1.5, NAN, 0.9)],
    ("smooth-sensitivity-median", "lower", NAN),
    ("smooth-sensitivity-median", "upper", -1.0),
    ("smooth-sensitivity-median", "upper", INF),
    ("smooth-sensitivity-median", "relation", "add-remove"),
    ("report-noisy-max", "noise", "cauchy"),
    *[("top-k", "k", v) for v in (0, -1, 1.5, True, "2", None)],
    ("laplace", "sampler", "fast"),
    ("gaussian", "sampler", "exact"),
    ("sparse-vector", "sampler", "snapping"),
    ("sparse-vector", "cutoff", 0),
    ("sparse-vector", "cutoff", 1.5),
    ("sparse-vector", "threshold", NAN),
    ("sparse-vector", "monotone", "yes"),
    ("subsampled-sparse-vector", "m", 0),
    ("subsampled-sparse-vector", "m", 1001),
    ("subsampled-sparse-vector", "n", 0),
    ("subsampled-sparse-vector", "n", 10.5),
    ("laplace", "relation", "neighbours"),
]


@pytest.mark.parametrize(("kind", "param", "value"), BAD)
def test_bad_parameter_rejected_and_charges_nothing(kind: str, param: str, value: object) -> None:
    params = {**GOOD[kind], param: value}
    with pytest.raises(InvalidParameterError) as info:
        MECHANISMS[kind](**params)
    assert info.value.parameter in (param, "m")  # m > n is reported on m
    # a session that is asked to run the bad mechanism never gets one: nothing charged
    budget = Budget(1.0, 1e-5)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    with pytest.raises(InvalidParameterError):
        session.release(MECHANISMS[kind](**params), lambda: 0.0, purpose="bad")
    assert session.spent() == Cost.zero()
    assert rec.entries == []
    assert not session.halted


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_round_trip_from_public_params(kind: str) -> None:
    mech = MECHANISMS[kind](**GOOD[kind])
    again = mechanism_from_params(kind, mech.public_params())
    assert again == mech
    for rel in (Relation.REPLACE_ONE,):
        assert again.cost(rel) == mech.cost(rel)
    with pytest.raises(InvalidParameterError):
        mechanism_from_params(kind, {**mech.public_params(), "bogus": 1})
    with pytest.raises(InvalidParameterError):
        mechanism_from_params("no-such", mech.public_params())


def test_every_kind_has_good_parameters_and_a_proof_note() -> None:
    """Every registered mechanism is covered by the parameter tests above and has its
    proof note ``docs/privacy/<kind>.md`` (the HTML report links it by that name)."""
    assert set(GOOD) == set(MECHANISMS)
    docs = Path(__file__).resolve().parents[2] / "docs" / "privacy"
    for kind in MECHANISMS:
        assert (docs / f"{kind}.md").is_file(), f"no proof note for {kind}"


def test_stored_params_rejected_when_incomplete() -> None:
    with pytest.raises(InvalidParameterError, match="params"):
        mechanism_from_params("laplace", {"epsilon": 1.0})


def test_costs() -> None:
    r1 = Relation.REPLACE_ONE
    assert Laplace(1.0, 0.5).cost(r1) == Cost.pure(0.5)
    assert Laplace(1.0, 0.5).cost(r1).rho == Fraction(1, 8)
    g = Gaussian(2.0, 4.0)
    assert g.cost(r1) == Cost.zcdp(Fraction(4, 32))
    assert g.cost(r1).epsilon is None
    for noise, rho in (("exponential", Fraction(1, 8)), ("gumbel", Fraction(1, 32)),
                       ("laplace", Fraction(1, 8))):
        c = ReportNoisyMax(1.0, 0.5, noise).cost(r1)
        assert c.epsilon == Fraction(1, 2)
        assert c.rho == rho
    assert Exponential(1.0, 0.5).cost(r1).rho == Fraction(1, 32)
    assert TopK(1.0, 0.5, 3).cost(r1) == Cost(Fraction(3, 2), Fraction(0), Fraction(3, 32))
    assert SparseVector(0.0, 1.0, 0.5, cutoff=3).cost(r1) == Cost.pure(0.5)
    sm = SmoothSensitivityMedian(0.5, 1e-6, 0.0, 1.0).cost(r1)
    assert sm.rho is None
    assert sm.delta == Fraction(1e-6)
    sub = SubsampledSparseVector(1000, 50, 0.0, 1.0, 1.0)
    amp = math.log1p(0.05 * math.expm1(1.0))
    eps = sub.cost(r1).epsilon
    assert eps is not None
    assert amp <= float(eps) <= amp * (1 + 1e-9)
    assert eps >= Fraction(amp)
    assert SubsampledSparseVector(10, 10, 0.0, 1.0, 1.0).cost(r1).epsilon >= 1  # type: ignore[operator]


def test_relation_conversion() -> None:
    r1, ar = Relation.REPLACE_ONE, Relation.ADD_REMOVE
    lap = Laplace(1.0, 0.5, relation=ar)
    assert lap.cost(ar) == Cost.pure(0.5)
    assert lap.cost(r1) == Cost.pure(1.0)  # doubled sensitivity -> doubled epsilon
    g = Gaussian(1.0, 1.0, relation=ar)
    assert g.cost(r1).rho == 4 * g.cost(ar).rho  # type: ignore[operator]
    assert ReportNoisyMax(1.0, 0.5, relation=ar).cost(r1).epsilon == 1
    assert SparseVector(0.0, 1.0, 0.5, relation=ar).cost(r1).epsilon == 1
    assert TopK(1.0, 0.5, 3, relation=ar).cost(r1).epsilon == 3
    # replace-one never converts to add/remove
    for mech in (Laplace(1.0, 0.5), Gaussian(1.0, 1.0), Exponential(1.0, 1.0),
                 TopK(1.0, 1.0, 2), ReportNoisyMax(1.0, 1.0), SparseVector(0.0, 1.0, 1.0),
                 SubsampledSparseVector(10, 5, 0.0, 1.0, 1.0),
                 SmoothSensitivityMedian(0.5, 1e-6, 0.0, 1.0)):
        with pytest.raises(InvalidParameterError, match="relation"):
            mech.cost(ar)
    # subsampling without replacement: replace-one only, after explicit conversion
    sub = SubsampledSparseVector(100, 10, 0.0, 1.0, 0.5, relation=ar)
    assert sub.cost(r1) == SubsampledSparseVector(100, 10, 0.0, 1.0, 1.0).cost(r1)
    with pytest.raises(InvalidParameterError):
        sub.cost(ar)
    # a session under add/remove accepts add/remove declarations unchanged
    s = Session(Budget(1.0), relation=ar)
    s.release(lap, lambda: 0.0, purpose="x")
    assert s.spent() == Cost.pure(0.5)
    with pytest.raises(InvalidParameterError):
        s.release(Laplace(1.0, 0.1), lambda: 0.0, purpose="r1 declared")


def test_dp_events_normalised() -> None:
    import dp_accounting

    r1, ar = Relation.REPLACE_ONE, Relation.ADD_REMOVE
    ev = Laplace(0.2, 0.5).dp_event(r1)
    assert isinstance(ev, dp_accounting.LaplaceDpEvent)
    assert ev.noise_multiplier == pytest.approx(2.0)  # scale/Delta = (0.2/0.5)/0.2
    ev2 = Laplace(0.2, 0.5, relation=ar).dp_event(r1)
    assert ev2.noise_multiplier == pytest.approx(1.0)
    gv = Gaussian(0.5, 2.0).dp_event(r1)
    assert isinstance(gv, dp_accounting.GaussianDpEvent)
    assert gv.noise_multiplier == pytest.approx(4.0)
    assert Gaussian(0.5, 2.0, relation=ar).dp_event(r1).noise_multiplier == pytest.approx(2.0)
    for mech in (ReportNoisyMax(1.0, 1.0), Exponential(1.0, 1.0), TopK(1.0, 1.0, 2),
                 SparseVector(0.0, 1.0, 1.0), SubsampledSparseVector(10, 5, 0.0, 1.0, 1.0),
                 SmoothSensitivityMedian(0.5, 1e-6, 0.0, 1.0)):
        assert mech.dp_event(r1) is None


def test_gaussian_for_rho_fits() -> None:
    for d2 in (0.01, 0.3, 1.0, 7.0):
        for rho in (Fraction(1, 3), Fraction(1e-5), Fraction(2, 7) / 997):
            g = Gaussian.for_rho(d2, rho)
            assert g.rho_under(Relation.REPLACE_ONE) <= rho
            # sigma has SIGMA_BITS significant bits, rounded up: at most 2^-(b-1) larger
            assert g.rho_under(Relation.REPLACE_ONE) > rho / (1 + Fraction(2, 2**SIGMA_BITS)) ** 2
            assert round_up_bits(g.sigma) == g.sigma
    g = Gaussian.for_rho(1.0, 0.5, relation=Relation.ADD_REMOVE)
    assert g.rho_under(Relation.ADD_REMOVE) <= Fraction(0.5)
    with pytest.raises(InvalidParameterError, match="rho"):
        Gaussian.for_rho(1.0, 0.0)


def test_round_up_bits() -> None:
    for x in (1.0, 0.3, 7.123456789, 1e-9, 3e12, 255.0, 257.0):
        y = round_up_bits(x)
        mant, _exp = math.frexp(y)
        assert y >= x
        assert y <= x * (1 + 2.0 ** (1 - SIGMA_BITS))
        assert math.ldexp(mant, SIGMA_BITS).is_integer()
        assert round_up_bits(y) == y
    assert round_up_bits(256.0, 8) == 256.0
    assert round_up_bits(257.0, 8) == 258.0


def test_many_gaussian_scales_keep_the_exact_total_short() -> None:
    """Every for_rho sigma has SIGMA_BITS significant bits, so a total over thousands of
    different noise scales (as a per-round plan makes) keeps a short exact form; with
    53-bit sigmas each new scale added ~106 bits to the denominator."""
    rng = np.random.default_rng(3)
    total = Cost.zcdp(Fraction(0))
    for d2, rho in zip(rng.uniform(0.01, 0.1, 3000), rng.uniform(1e-8, 1e-4, 3000), strict=True):
        total = total + Gaussian.for_rho(float(d2), float(rho)).cost(Relation.REPLACE_ONE)
    assert total.rho is not None
    assert total.rho.denominator.bit_length() < 2000
    assert len(total.as_dict()["rho"] or "") < 1500


def test_outputs_types() -> None:
    rng = np.random.default_rng(0)
    assert isinstance(Laplace(1.0, 1.0).release(0.5, rng), float)
    v = Laplace(1.0, 1.0).release([0.5, 1.0], rng)
    assert isinstance(v, np.ndarray)
    assert v.shape == (2,)
    assert isinstance(Gaussian(1.0, 1.0).release(0.5, rng), float)
    for noise in ("exponential", "gumbel", "laplace"):
        for sampler in ("discrete", "float"):
            i = ReportNoisyMax(1.0, 1.0, noise, sampler=sampler).release([0.0, 3.0, 1.0], rng)
            assert type(i) is int
            assert 0 <= i < 3
    assert type(Exponential(1.0, 1.0).release([0.0, 3.0], rng)) is int
    top = TopK(1.0, 1.0, 2).release([0.0, 3.0, 1.0], rng)
    assert isinstance(top, np.ndarray)
    assert top.dtype == np.int64
    assert top.shape == (2,)
    assert isinstance(SmoothSensitivityMedian(1.0, 1e-6, 0.0, 1.0).release([0.2, 0.5], rng),
                      float)
    assert Laplace(1.0, 1.0).sample([1.0, 2.0, 3.0], rng, 5).shape == (5, 3)
    assert ReportNoisyMax(1.0, 1.0).sample([1.0, 2.0, 3.0], rng, 5).dtype == np.int64
    with pytest.raises(StatisticError):
        ReportNoisyMax(1.0, 1.0).release(1.0, rng)
    with pytest.raises(StatisticError):
        Laplace(1.0, 1.0).release(np.zeros((2, 2)), rng)
    with pytest.raises(StatisticError):
        Exponential(1.0, 1.0).release([], rng)
    with pytest.raises(StatisticError):
        TopK(1.0, 1.0, 1).release([], rng)
    with pytest.raises(StatisticError):
        Gaussian(1.0, 1.0).release("abc", rng)


def test_discrete_outputs_on_grid() -> None:
    rng = np.random.default_rng(5)
    mech = Laplace(0.37, 0.9)
    f = np.array([0.123456789, -5.5, 1e3])
    out = mech.sample(f, rng, 2000)
    g = mech.grid(3).step
    assert g == 2.0 ** mech.grid(3).exponent
    assert np.all(out / g == np.rint(out / g))
    # the grid step is tiny compared with the noise scale
    assert g < mech.scale * 2.0**-20
    assert mech.grid(3).scale >= mech.scale


def test_smooth_median_admissibility_guard() -> None:
    # beta = eps/(2 ln(2/delta)); the dilation condition holds for moderate eps
    assert dilation_defect(1.0, 1e-6) <= 0.5e-6
    assert dilation_defect(50.0, 0.01) > 0.005
    with pytest.raises(InvalidParameterError, match="epsilon"):
        SmoothSensitivityMedian(50.0, 0.01, 0.0, 1.0)


@settings(max_examples=80, deadline=None)
@given(
    sens=st.floats(1e-6, 1e3),
    eps=st.floats(1e-4, 20.0),
    cutoff=st.integers(1, 20),
    monotone=st.booleans(),
    ar=st.booleans(),
    n=st.integers(1, 10**6),
    frac=st.floats(0.0, 1.0),
)
def test_round_trip_property(
    sens: float, eps: float, cutoff: int, monotone: bool, ar: bool, n: int, frac: float
) -> None:
    rel = Relation.ADD_REMOVE if ar else Relation.REPLACE_ONE
    m = max(1, int(frac * n))
    mechs: list[Any] = [
        Laplace(sens, eps, relation=rel),
        # sigma / sensitivity below 2^26: the grid sampler's range (a larger ratio is
        # refused when built, tests/accounting/test_samplers.py)
        Gaussian(sens, min(1.0 / eps, sens * 2.0**25), relation=rel),
        ReportNoisyMax(sens, eps, "laplace", relation=rel),
        Exponential(sens, eps, relation=rel),
        TopK(sens, eps, 1, relation=rel),  # one selection: the exponential mechanism's cost
        SparseVector(0.5, sens, eps, cutoff, monotone, relation=rel),
        SubsampledSparseVector(n, m, 0.5, sens, eps, monotone, relation=rel),
    ]
    for mech in mechs:
        again = mechanism_from_params(mech.kind, mech.public_params())
        assert again == mech
        assert again.cost(Relation.REPLACE_ONE) == mech.cost(Relation.REPLACE_ONE)
        c = mech.cost(Relation.REPLACE_ONE)
        if c.epsilon is not None and not isinstance(mech, SubsampledSparseVector):
            assert c.epsilon == Fraction(eps) * (2 if ar else 1)
    sub = mechs[-1].cost(Relation.REPLACE_ONE).epsilon
    base = Fraction(eps) * (2 if ar else 1)
    assert sub is not None
    assert sub <= base * (1 + Fraction(1, 10**9)) + Fraction(1, 10**300)


_REALS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-10**6, 10**6).map(lambda k: k / 2.0),  # exact halves: round-half-even
    st.sampled_from([0.0, -0.0, 2.0**52, -(2.0**60), 5e-324, 1e300]),
)


@settings(max_examples=300, deadline=None)
@given(x=_REALS, seed=st.integers(0, 2**32), sens=st.sampled_from([0.01, 1.0, 3.7]),
       eps=st.sampled_from([1e-3, 0.5, 2.0]))
def test_scalar_release_paths_equal_the_array_paths(x: float, seed: int, sens: float,
                                                    eps: float) -> None:
    """The scalar fast paths (Laplace release of a real scalar, an SVT query answer and
    threshold) give bit for bit the value of the array paths (0-d / 1-element arrays) from the
    same generator state, and leave the generator in the same state."""
    with np.errstate(over="ignore"):  # the array path's ldexp overflows to inf (clipped)
        _check_scalar_paths(x, seed, sens, eps)


def _check_scalar_paths(x: float, seed: int, sens: float, eps: float) -> None:
    mech = Laplace(sens, eps)
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    fast = mech.release(x, a)
    slow = mech.release(np.array(x), b)  # a 0-d array takes the array path
    assert isinstance(fast, float)
    assert np.array_equal(np.float64(fast), np.float64(slow))
    assert a.integers(2**62) == b.integers(2**62)
    grid = SparseVector(0.0, sens, eps).noise_plan().grid_query
    assert grid is not None
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    assert grid.noisy_index(x, a) == float((grid.round(np.array([x]))
                                            + grid.noise(b, 1).astype(np.float64))[0])
    plan = SparseVector(x, sens, eps).noise_plan()  # the threshold's own grid
    assert plan.grid_threshold is not None
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    assert plan.grid_threshold.noisy_index(plan.threshold, a) == float(
        plan.draw_threshold(b, 1)[0])
    assert a.integers(2**62) == b.integers(2**62)
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    ra = Session(Budget(10.0), "basic", seed=seed).start(SparseVector(0.0, sens, eps),
                                                         purpose="fast")
    rb = Session(Budget(10.0), "basic", seed=seed).start(SparseVector(0.0, sens, eps),
                                                         purpose="array")
    for v in (x, -x, x / 3.0):
        if ra.halted:
            break
        assert ra.test(lambda v=v: v) == rb.test(lambda v=v: np.array(v))


def test_grouped_laplace_sums_over_a_secret_uniform_grouping() -> None:
    """GroupedLaplace draws its grouping inside the primitive: the group sums keep the
    total, the grouping changes from release to release (it is not the public ``i mod
    G``), and permuting the rows does not change the law of the output (seeded: the same
    generator state gives the same sums for a permuted input only in law, so compare
    the means of many releases)."""
    import numpy as np

    from accounting.mechanisms import GroupedLaplace

    mech = GroupedLaplace(sensitivity=1.0, epsilon=1e6, groups=4)  # noise ~1e-6
    v = np.arange(40, dtype=np.float64)
    rng = np.random.default_rng(0)
    a = np.asarray(mech.release(v, rng))
    b = np.asarray(mech.release(v, rng))
    assert a.shape == (4,)
    assert abs(a.sum() - v.sum()) < 1e-3
    assert abs(b.sum() - v.sum()) < 1e-3
    assert not np.allclose(a, b)  # a fresh secret grouping each time
    positional = np.bincount(np.arange(40) % 4, weights=v, minlength=4)
    draws = mech.sample(v, np.random.default_rng(1), 400)
    flipped = mech.sample(v[::-1].copy(), np.random.default_rng(2), 400)
    # every group's expected sum is v.sum()/4 whatever the row order
    assert np.allclose(draws.mean(axis=0), v.sum() / 4, rtol=0.08)
    assert np.allclose(flipped.mean(axis=0), v.sum() / 4, rtol=0.08)
    assert not np.allclose(draws.mean(axis=0), positional, rtol=0.01)
    with pytest.raises(InvalidParameterError):
        mech.release(np.ones(3), rng)  # fewer rows than groups
