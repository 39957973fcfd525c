"""PrivCRT with a privately released model-X law (``--model-x private``; issue 54):
the L1 sensitivity of the law's release (Lemma L1), the statistic's sensitivity with
Y residualised by the law (Lemma L2), the law's post-processing, the whole-run charge
(the ledger shows the law's release first, then the tests; the sum within the budget)
and bad input (refused before anything is charged). Proof note:
docs/privacy/privcrt-released-law.md."""

from __future__ import annotations

import json
import math
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.memory import InMemoryRecorder
from accounting.session import Session
from dpcg.citests.continuous_pc import PrivCRTOptions
from dpcg.citests.crt import (
    DEFAULT_LAW_SHARE,
    GaussianModelX,
    PrivateModelX,
    PrivCRTTest,
    crt_law_sensitivity,
)
from dpcg.citests.crt_law import (
    ReleasedGaussianLaw,
    law_floor,
    law_from_release,
    law_mechanism,
    law_sensitivity,
    release_model_x,
    split_law_budget,
)
from dpcg.citests.gcm import ContinuousData
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.errors import AlgorithmError, CITestError, DpcgError
from dpcg.stats.suffstat import moment_vector, upper_size
from tests.cli.refusals import refused_api, refused_cli, used_ledger
from tests.engine_room import private_run
from tests.hardening.helpers import cli, continuous_table

# ----------------------------------------------------------------- Lemma L1


@settings(max_examples=300, deadline=None)
@given(n=st.integers(2, 12), q=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       corner=st.booleans())
def test_law_release_l1_sensitivity_holds(n: int, q: int, seed: int, corner: bool) -> None:
    """Replacing one row moves the bounded moment vector by at most q (q + 2) / n in L1,
    on random and on corner rows (every entry at +-1, where the bound is attained
    coordinate by coordinate)."""
    g = np.random.default_rng(seed)
    u = g.uniform(-1, 1, (n, q))
    if corner:
        u = np.sign(u)
        u[u == 0] = 1.0
    v = u.copy()
    i = int(g.integers(n))
    v[i] = g.choice([-1.0, 1.0], q) if corner else g.uniform(-1, 1, q)
    diff = np.abs(moment_vector(u, True) - moment_vector(v, True)).sum()
    assert diff <= law_sensitivity(n, q) * (1 + 1e-12)


def test_law_sensitivity_values_and_refusals() -> None:
    assert law_sensitivity(100, 11) == pytest.approx(143 / 100)
    assert law_sensitivity(10, 1) == pytest.approx(0.3)
    for n, q in ((0, 2), (5, 0), (True, 2), (5, 1.5)):
        with pytest.raises(CITestError):
            law_sensitivity(n, q)  # type: ignore[arg-type]


# ----------------------------------------------------------------- Lemma L2


def _law3() -> GaussianModelX:
    cov = np.array([[1.0, 0.3, 0.6], [0.3, 1.0, 0.5], [0.6, 0.5, 1.0]])
    return GaussianModelX.from_arrays(np.array([0.1, -0.2, 0.0]), cov)


def _released3(aware: bool) -> ReleasedGaussianLaw:
    g = np.random.default_rng(5)
    x = g.multivariate_normal(np.zeros(3), np.eye(3) + 0.4, 300).T
    data = ContinuousData.build(np.clip(x, -3, 3), [(-3.0, 3.0)] * 3)
    vec = moment_vector(data.scaled.T, True) + g.laplace(0, 0.02, 9)
    return ReleasedGaussianLaw(vec, data.lower, data.upper, 0.03, 0.02, noise_aware=aware)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(3, 30), seed=st.integers(0, 2**32 - 1),
       bound=st.sampled_from([0.05, 0.3, 1.0]), empty=st.booleans(),
       kind=st.sampled_from(["gaussian", "released", "released-point"]))
def test_law_statistic_sensitivity_holds(n: int, seed: int, bound: float,
                                         empty: bool, kind: str) -> None:
    """With Y residualised by the public law (``y_fit="law"``) every ``T_j`` moves by at
    most ``2 B_r^2 / n`` when one row (and its resamples) is replaced: the other rows'
    resamples are the same draws (same generator state)."""
    g = np.random.default_rng(seed)
    bounds = [(-3.0, 3.0)] * 3
    a = g.uniform(-3, 3, (3, n))
    b = a.copy()
    i = int(g.integers(n))
    b[:, i] = g.uniform(-3, 3, 3)
    S: tuple[int, ...] = () if empty else (2,)
    law: object = _law3() if kind == "gaussian" else _released3(kind == "released")
    qa = PrivCRTTest(a, bounds, None, 1.0, law, residual_bound=bound,  # type: ignore[arg-type]
                     y_fit="law", generator=np.random.default_rng(7))
    qb = PrivCRTTest(b, bounds, None, 1.0, law, residual_bound=bound,  # type: ignore[arg-type]
                     y_fit="law", generator=np.random.default_rng(7))
    assert qa.sensitivity == pytest.approx(crt_law_sensitivity(bound, n))
    ta = qa.queries(0, 1, S)
    tb = qb.queries(0, 1, S)
    assert np.max(np.abs(ta - tb)) <= qa.sensitivity * (1 + 1e-9)


def test_law_y_fit_needs_a_gaussian_law() -> None:
    from dpcg.citests.crt import GaussianLinearSampler

    values = np.zeros((3, 20))
    with pytest.raises(CITestError, match="y_fit"):
        PrivCRTTest(values, [(-1.0, 1.0)] * 3, None, 1.0,
                    GaussianLinearSampler((0.5,), 0.0, 1.0), y_fit="law")
    with pytest.raises(CITestError, match="y_fit"):
        PrivCRTTest(values, [(-1.0, 1.0)] * 3, None, 1.0, _law3(), y_fit="kernel")


# ----------------------------------------------------------------- the law


@settings(max_examples=200, deadline=None)
@given(q=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1e-3, 0.1, 10.0, 1e6]))
def test_any_released_vector_gives_a_valid_law(q: int, seed: int, scale: float) -> None:
    """Post-processing never fails on a released vector, however noisy: the law is a
    valid GaussianModelX, its means inside the bounds, every eigenvalue of the scaled
    covariance at least the floor, and it passes the tester's column check."""
    g = np.random.default_rng(seed)
    lo = g.uniform(-100, 0, q)
    hi = lo + g.uniform(0.1, 100, q)
    vec = g.laplace(0, scale, upper_size(q, True))
    floor = 0.01
    law = law_from_release(vec, lo, hi, floor)
    law.check_columns(lo, hi)
    mu = np.asarray(law.mean)
    assert np.all(mu >= lo - 1e-9)
    assert np.all(mu <= hi + 1e-9)
    half = 0.5 * (hi - lo)
    scaled = np.asarray(law.cov) / np.outer(half, half)
    assert np.linalg.eigvalsh(scaled)[0] >= floor * (1 - 1e-6)
    for x in range(q):
        others = tuple(j for j in range(q) if j != x)
        assert law.sampler(x, others).sigma ** 2 >= floor * half[x] ** 2 * (1 - 1e-6)


def test_exact_moments_give_the_sample_gaussian() -> None:
    g = np.random.default_rng(3)
    x = g.multivariate_normal([1.0, -2.0, 0.5], [[1, 0.5, 0.2], [0.5, 2, 0.3], [0.2, 0.3, 1]],
                              4000).T
    lo, hi = np.full(3, -20.0), np.full(3, 20.0)
    data = ContinuousData.build(x, list(zip(lo, hi, strict=True)))
    law = law_from_release(moment_vector(data.scaled.T, True), lo, hi, 1e-12)
    assert np.allclose(law.mean, x.mean(axis=1), atol=1e-9)
    assert np.allclose(law.cov, np.cov(x, bias=True), atol=1e-8)


def test_release_charges_one_laplace_first() -> None:
    g = np.random.default_rng(4)
    x = g.uniform(-1, 1, (3, 200))
    data = ContinuousData.build(x, [(-1.0, 1.0)] * 3)
    rec = InMemoryRecorder(Budget(2.0))
    session = Session(Budget(2.0), recorder=rec, seed=1)
    mech = law_mechanism(200, 3, 0.5)
    law = release_model_x(session, data, mech)
    assert isinstance(law, ReleasedGaussianLaw)
    assert isinstance(law.point, GaussianModelX)
    assert law.scale == pytest.approx(mech.sensitivity / 0.5)
    assert session.spent().epsilon == Fraction(1, 2)
    (entry,) = rec.entries
    assert entry.mechanism == "laplace"
    assert entry.params["sensitivity"] == pytest.approx(15 / 200)
    assert "model-X law" in entry.purpose
    assert law_floor(mech) == pytest.approx(math.sqrt(2) * mech.sensitivity / 0.5)
    # a mechanism below the bound is refused before anything is charged
    with pytest.raises(CITestError, match="below"):
        release_model_x(session, data, law_mechanism(400, 3, 0.5))
    assert session.releases == 1


def test_split_law_budget_is_exact() -> None:
    for eps, share in ((1.0, 0.5), (0.3, 0.1), (5.0, 0.25), (1e-3, 0.999)):
        law, rest = split_law_budget(eps, share)
        assert law > 0
        assert rest > 0
        assert Fraction(law) + Fraction(rest) <= Fraction(eps)
        assert Fraction(law) <= Fraction(eps) * Fraction(share)


# ----------------------------------------------------------------- whole runs


def _entries(path: Path) -> list[tuple[str, str, str]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT mechanism, cost, purpose FROM entries WHERE kind = "
                           "'mechanism' ORDER BY seq").fetchall()
    finally:
        con.close()
    return [(str(m), str(c), str(p)) for m, c, p in rows]


def _eps(cost: str) -> Fraction:
    doc = json.loads(cost)
    return Fraction(doc["epsilon"])


@pytest.mark.parametrize("split", ["levels", "tests"])
def test_whole_run_charges_the_law_then_the_tests(split: str, tmp_path: Path) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    ds = Dataset.from_csv(data, Schema.from_json(schema))
    led = tmp_path / "l.sqlite"
    extra: dict[str, Any] = {} if split == "levels" else {"plan_size": 30}
    res = private_run(ds, "private-ci-pc", test="privcrt", epsilon=4.0, seed=3,
                      ledger=led, dataset_id="sem4", model_x="private",
                      model_x_share=0.25, **extra)
    plan = res.plan
    assert plan["model_x"] == "private"
    assert plan["model_x_share"] == 0.25
    assert plan["model_x_epsilon"] == 1.0
    assert plan["tests_epsilon"] == 3.0
    assert plan["y_fit"] == "law"
    entries = _entries(led)
    assert entries, "no release recorded"
    first = entries[0]
    assert first[0] == "laplace"
    assert "model-X law" in first[2]
    assert _eps(first[1]) == Fraction(1)
    tests = entries[1:]
    assert tests
    assert all("PrivCRT threshold" in p for _, _, p in tests)
    assert sum(_eps(c) for _, c, _ in entries) <= Fraction(4)
    assert Fraction(res.spent["exact"]["epsilon"]) == sum(_eps(c) for _, c, _ in entries)


def test_private_law_runs_are_reproducible() -> None:
    g = np.random.default_rng(11)
    n = 400
    z = g.standard_normal(n)
    vals = np.column_stack([z + g.standard_normal(n), z + g.standard_normal(n), z])
    from dpcg.data import Continuous

    ds = Dataset.from_numpy(np.clip(vals, -6, 6),
                            Schema([Continuous(c, -6.0, 6.0) for c in "xyz"]))
    a = private_run(ds, "private-ci-pc", test="privcrt", epsilon=20.0, seed=5,
                    model_x="private")
    b = private_run(ds, "private-ci-pc", test="privcrt", epsilon=20.0, seed=5,
                    model=PrivateModelX())
    assert a.cpdag == b.cpdag
    assert a.spent == b.spent
    assert a.plan["model_x_share"] == DEFAULT_LAW_SHARE


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(("options", "fragment"), [
    ({"model_x": "private", "model_x_share": 0.0}, "strictly between 0 and 1"),
    ({"model_x": "private", "model_x_share": 1.0}, "strictly between 0 and 1"),
    ({"model_x": "private", "model_x_share": -0.5}, "strictly between 0 and 1"),
    ({"model_x": "private", "model_x_share": math.nan}, "strictly between 0 and 1"),
    ({"model_x": "private", "model_x_share": True}, "strictly between 0 and 1"),
    ({"model_x_share": 0.5}, "--model-x private only"),
    ({"model_x": "private", "crt_y_fit": "kernel"}, "crt_y_fit"),
    ({"model_x": "private", "model": PrivateModelX()}, "once"),
])
def test_bad_options_are_refused_before_charging(options: dict[str, Any], fragment: str,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    ds = Dataset.from_csv(data, Schema.from_json(schema))
    led = used_ledger(tmp_path, capsys)
    refused_api(lambda: private_run(ds, "private-ci-pc", test="privcrt", epsilon=2.0,
                                    ledger=led, dataset_id="sem4", seed=1, **options),
                led, CITestError, fragment=fragment)


def test_budget_too_small_for_the_split_spends_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    ds = Dataset.from_csv(data, Schema.from_json(schema))
    led = used_ledger(tmp_path, capsys)
    for eps, error in ((1e-320, DpcgError), (-1.0, DpcgError), (math.nan, DpcgError)):
        before = led.read_bytes()
        with pytest.raises(error):
            private_run(ds, "private-ci-pc", test="privcrt", epsilon=eps, ledger=led,
                        dataset_id="sem4", seed=1, model_x="private")
        assert led.read_bytes() == before
    # test_epsilon above the tests' share (the total minus the law's share)
    refused_api(lambda: private_run(ds, "private-ci-pc", test="privcrt", epsilon=2.0,
                                    ledger=led, dataset_id="sem4", seed=1,
                                    model_x="private", test_epsilon=1.5),
                led, AlgorithmError, fragment="tests' share")


def test_nan_in_the_data_spends_nothing(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    ds = Dataset.from_csv(data, Schema.from_json(schema))
    led = used_ledger(tmp_path, capsys)
    vals = np.array(ds.values, dtype=np.float64)
    vals[1, 5] = np.nan
    refused_api(lambda: PrivCRTTest(vals, [(-1e6, 1e6)] * vals.shape[0], None, 1.0,
                                    PrivateModelX()), led, CITestError)


def test_cli_private_law_and_bad_share(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    led = used_ledger(tmp_path, capsys)
    base = ["discover", "--data", str(data), "--schema", str(schema), "--dataset-id", "sem4",
            "--algorithm", "private-ci-pc", "--test", "privcrt", "--epsilon", "2",
            "--noise-seed", "1", "--quiet", "--ledger", str(led)]
    refused_cli([*base, "--model-x", "private", "--model-x-share", "1.5"], led, CITestError,
                capsys, fragment="strictly between 0 and 1")
    refused_cli([*base, "--model-x-share", "0.3"], led, CITestError, capsys,
                fragment="--model-x private only")
    out = tmp_path / "res.json"
    got = cli([*base, "--model-x", "private", "--out", str(out)], capsys)
    assert got.code == 0, got.err
    doc = json.loads(out.read_text())
    assert doc["plan"]["model_x"] == "private"
    assert doc["plan"]["model_x_epsilon"] == 1.0


def test_options_validate_the_share() -> None:
    assert PrivCRTOptions(model_x=Path("private")).law() == PrivateModelX(DEFAULT_LAW_SHARE)
    assert PrivCRTOptions(model_x=Path("private"), model_x_share=0.2).law() == \
        PrivateModelX(0.2)
    with pytest.raises(CITestError):
        PrivCRTOptions(model_x=Path("private"), model_x_share=2.0)


def test_noise_aware_resamples_spread_with_the_release_noise() -> None:
    """The re-noised resamples are more dispersed around the point law's conditional mean
    than the point law's own (they carry the simulated error of the mean), and both
    samplers share the point law's conditional mean."""
    aware, point = _released3(True), _released3(False)
    z = np.linspace(-2, 2, 400)[:, None]
    sa, sp = aware(0, (2,)), point(0, (2,))
    assert np.allclose(sa.conditional_mean(z), sp.conditional_mean(z))
    da = sa.sample(z, 19, np.random.default_rng(1)) - sa.conditional_mean(z)
    dp = sp.sample(z, 19, np.random.default_rng(1)) - sp.conditional_mean(z)
    # the per-resample mean error across rows: zero-mean noise for the point law,
    # a slope in z for the re-noised laws
    slope_a = np.abs(np.polyfit(z[:, 0], da.T, 1)[0]).mean()
    slope_p = np.abs(np.polyfit(z[:, 0], dp.T, 1)[0]).mean()
    assert slope_a > 2 * slope_p
