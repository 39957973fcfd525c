"""PrivCRT's threshold release (docs/privacy/privcrt.md, "The threshold release"):
the margin's sensitivity, the exact-level identity behind it (exactly ``k`` of the
``m + 1`` relabellings reject, whatever the queries, ties included) and the measured
level on null data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.mechanisms import Laplace
from accounting.session import Session
from dpcg.citests.crt import (
    GaussianLinearSampler,
    PrivCRTTest,
    rejection_count,
    threshold_margin,
)
from dpcg.errors import CITestError


def _decision(margin: float, y0: int, grid_exponent: int) -> bool:
    """What the Laplace grid release does with the margin: ``rint(f/g) + Y_0 >= 1``."""
    base = float(np.rint(np.ldexp(np.array([margin]), -grid_exponent))[0])
    return base + y0 >= 1


@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 40), data=st.data(),
       delta=st.sampled_from([1e-5, 3e-3, 0.02, 0.7]))
def test_margin_moves_by_at_most_twice_the_query_sensitivity(
        m: int, data: st.DataObject, delta: float) -> None:
    k = data.draw(st.integers(1, m))
    grid = Laplace(sensitivity=2 * delta, epsilon=1.0).grid(1)
    q = np.array(data.draw(st.lists(st.floats(0.0, 3.0), min_size=m + 1, max_size=m + 1)))
    shift = np.array(data.draw(st.lists(st.floats(-1.0, 1.0), min_size=m + 1,
                                        max_size=m + 1))) * delta
    noise = np.array(data.draw(st.lists(st.integers(-10**7, 10**7), min_size=m,
                                        max_size=m)), dtype=np.int64)
    ties = np.array(data.draw(st.lists(st.floats(0.0, 1.0, exclude_max=True),
                                       min_size=m + 1, max_size=m + 1)))
    f = threshold_margin(q, k, grid.step, noise, ties)
    f2 = threshold_margin(q + shift, k, grid.step, noise, ties)
    assert abs(f - f2) <= 2 * delta * (1 + 1e-9) + 1e-12


@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 30), data=st.data())
def test_exactly_k_relabellings_reject(m: int, data: st.DataObject) -> None:
    """For any realisation, putting each of the ``m + 1`` queries (with its own noise and
    tie-break) in the observed slot rejects exactly ``k`` times: the identity that makes
    the null level ``k / (m + 1)`` once the noisy queries are exchangeable. Queries on the
    grid and small noise make ties of ``a_j + Y_j`` frequent; the tie-breaks split them."""
    k = data.draw(st.integers(1, m))
    grid = Laplace(sensitivity=0.01, epsilon=1.0).grid(1)
    q = grid.step * np.array(data.draw(st.lists(st.integers(0, 4), min_size=m + 1,
                                                max_size=m + 1)), dtype=np.float64)
    y = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=m + 1, max_size=m + 1)),
                 dtype=np.int64)
    u = np.array(data.draw(st.lists(st.integers(0, 255), min_size=m + 1, max_size=m + 1,
                                    unique=True)), dtype=np.float64) / 256.0
    rejections = 0
    for j in range(m + 1):
        order = [j, *(i for i in range(m + 1) if i != j)]
        f = threshold_margin(q[order], k, grid.step, y[order][1:], u[order])
        rejections += _decision(f, int(y[j]), grid.exponent)
    assert rejections == k


def test_rejection_count_and_bad_k() -> None:
    assert rejection_count(0.05, 19) == 1
    assert rejection_count(0.05, 99) == 5
    assert rejection_count(0.1, 18) == 1
    with pytest.raises(CITestError):
        threshold_margin(np.zeros(4), 4, 1.0, np.zeros(3, dtype=np.int64), np.zeros(4))


def _null_rate(release: str, reps: int, n: int) -> float:
    bounds = [(-4.0, 4.0)] * 3
    model = GaussianLinearSampler((0.6,), 0.0, 0.8)
    rejected = 0
    for r in range(reps):
        rng = np.random.default_rng(1000 + r)
        z = rng.standard_normal(n)
        x = 0.6 * z + 0.8 * rng.standard_normal(n)
        y = np.sin(2 * z) + 0.3 * rng.standard_normal(n)
        values = np.clip(np.c_[x, y, z].T, -4.0, 4.0)
        test = PrivCRTTest(values, bounds, Session(Budget(1.0), seed=r), 1.0, model,
                           residual_bound=0.3, regression="rff", features=50,
                           feature_seed=0, release=release)
        rejected += not test.test(0, 1, (2,)).independent
    return rejected / reps


def _band(reps: int, p: float = 0.05) -> tuple[float, float]:
    half = 2.576 * math.sqrt(p * (1 - p) / reps)
    return p - half, p + half


def test_threshold_release_level_in_band() -> None:
    """Null data (X depends on Z through the public model-X law, Y on Z only): the
    threshold release's type-I error is in the 99 % band around alpha (both sides)."""
    reps = 300
    lo, hi = _band(reps)
    rate = _null_rate("threshold", reps, 400)
    assert lo <= rate <= hi


def test_benchmark_row_runs_both_releases() -> None:
    """Smoke test of ``dpcg bench continuous --crt-level``'s row: both releases and the
    non-private CRT on the same statistics, each private release through a session."""
    from benchmarks.continuous import CrtLevelConfig, crt_level_rep

    cc = CrtLevelConfig(features=40)
    for model in ("unit", "sd03"):
        out = crt_level_rep(model, 500, 0.0, 0, cc)
        assert set(out) == {"crt", "threshold@1", "threshold@2", "rank@1", "rank@2"}
        assert all(isinstance(v, bool) for v in out.values())


def test_crt_release_option_reaches_the_test() -> None:
    """``--crt-release`` (``PrivCRTOptions.crt_release``): the default is the threshold
    release, ``rank`` selects Kalemaj et al.'s, anything else is refused before a tester
    exists (nothing charged)."""
    from dpcg.citests.continuous_pc import PrivCRTOptions, private_test_for
    from dpcg.citests.crt import GaussianModelX
    from dpcg.datasets.sem import random_sem

    sem = random_sem(3, seed=5)
    ds = sem.sample(300, 0)
    law = GaussianModelX.from_arrays(np.zeros(3), sem.covariance())
    session = Session(Budget(1.0), seed=0)
    for choice, want in ((None, "threshold"), ("rank", "rank"), ("threshold", "threshold")):
        tester = private_test_for(ds, "privcrt", PrivCRTOptions(model=law, crt_release=choice),
                                  session, 0.5, 0.05)
        assert isinstance(tester, PrivCRTTest)
        assert tester.release == want
    with pytest.raises(CITestError, match="crt_release"):
        PrivCRTOptions(model=law, crt_release="exact")
    assert session.releases == 0
