"""The mutants implement the documented definitions (fast structural checks)."""

from __future__ import annotations

import numpy as np
import pytest

from audits.mutants import (
    NOT_ASKED,
    partial_charging_sampler,
    simulate_svt,
    svt_variant,
    top_k_sampler,
)
from audits.suite import algorithm_sampler


def test_svt_variant_scales() -> None:
    a1 = svt_variant("alg1", 1.0, 1.0, cutoff=2)
    assert (a1.threshold_scale, a1.query_scale, a1.cutoff) == (2.0, 8.0, 2)
    assert svt_variant("alg1", 1.0, 1.0, cutoff=2, monotone=True).query_scale == 4.0
    a4 = svt_variant("alg4", 1.0, 1.0, cutoff=3)
    assert a4.threshold_scale == pytest.approx(4.0)
    assert a4.query_scale == pytest.approx(4.0 / 3.0)  # not scaled by c
    assert svt_variant("alg5", 1.0, 1.0).query_scale == 0.0
    assert svt_variant("alg6", 1.0, 1.0).cutoff is None
    assert svt_variant("alg3", 1.0, 1.0).release_value
    assert svt_variant("gaussian-refresh", 1.0, 1.0).threshold_noise == "gaussian"
    with pytest.raises(ValueError, match="unknown"):
        svt_variant("alg7", 1.0, 1.0)


def test_svt_halts_after_cutoff() -> None:
    rng = np.random.default_rng(0)
    out = simulate_svt(svt_variant("alg1", 1.0, 1.0, cutoff=2), 0.0, np.full(6, 500.0), 100, rng)
    assert np.all(out[:, :2] == 1)
    assert np.all(out[:, 2:] == NOT_ASKED)
    vals = simulate_svt(svt_variant("alg3", 1.0, 1.0), 0.0, np.full(3, 500.0), 10, rng)
    assert np.all(np.isfinite(vals[:, 0]))
    assert np.all(np.isnan(vals[:, 1:]))


def test_partial_charging_releases_more_than_it_charges() -> None:
    rng = np.random.default_rng(1)
    q = np.full(20, -100.0)  # every test below the margin: nothing is charged
    bad = partial_charging_sampler(1.0, 0.25, 1.0, 3.0, 20)(q, 50, rng)
    good = partial_charging_sampler(1.0, 0.25, 1.0, 3.0, 20, charge_all=True)(q, 50, rng)
    assert np.all(bad == 0)  # 20 releases, none charged
    assert np.all(good[:, :4] == 0)
    assert np.all(good[:, 4:] == NOT_ASKED)  # budget 1.0 / 0.25 = 4 tests


def test_algorithm_sampler_codes_are_shared() -> None:
    def alg(data: object, seed: int) -> str:
        return f"{data}-{seed % 2}"

    s = algorithm_sampler(alg)
    rng = np.random.default_rng(2)
    a = s("A", 50, rng)
    b = s("B", 50, rng)
    a2 = s("A", 50, rng)
    assert set(a.tolist()) <= {0, 1}
    assert set(b.tolist()) <= {2, 3}
    assert set(a2.tolist()) <= {0, 1}


def test_top_k_sampler_rows() -> None:
    rng = np.random.default_rng(3)
    u = np.array([0.0, 500.0, 100.0, 300.0])
    out = top_k_sampler(1.0, 1.0, 3)(u, 20, rng)
    assert out.shape == (20, 3)
    assert out.dtype == np.int64
    assert (out == [1, 3, 2]).all()  # far-apart utilities: their order
    mixed = top_k_sampler(1.0, 1.0, 10, logit_factor=2.0)(np.zeros(4), 50, rng)
    assert mixed.shape == (50, 4)  # k >= len: a permutation per row
    assert (np.sort(mixed, axis=1) == np.arange(4)).all()
