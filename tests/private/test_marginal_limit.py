"""benchmarks/marginal_limit.py: the noisy G-test's noncentrality and power on a table."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.marginal_limit import noisy_power, render


def test_noncentrality_is_pearsons_at_zero_noise_and_shrinks_with_noise() -> None:
    t = np.array([[[30, 10], [10, 50]]], dtype=np.int64)
    e = np.array([[16.0, 24.0], [24.0, 36.0]])
    pearson = float(((t[0] - e) ** 2 / e).sum())
    lam0, pow0 = noisy_power(t, 0.0, 0.05)
    assert lam0 == pytest.approx(pearson)
    lam1, pow1 = noisy_power(t, 100.0, 0.05)
    assert lam1 == pytest.approx(float(((t[0] - e) ** 2 / (e + 100.0)).sum()))
    assert lam1 < lam0
    assert pow1 < pow0 <= 1.0


def test_an_independent_table_has_power_alpha() -> None:
    t = np.array([[[20, 20], [30, 30]], [[5, 10], [5, 10]]], dtype=np.int64)
    lam, power = noisy_power(t, 4.0, 0.05)
    assert lam == pytest.approx(0.0, abs=1e-12)
    assert power == pytest.approx(0.05)


def test_render_has_one_row_per_cell() -> None:
    from benchmarks.marginal_limit import LimitRow

    row = LimitRow("net", 5, 4, 1.0, 300.0, 120.0, None, 1.0, 0.8, 0.9, 0.95, None, 0.7,
                   0.9, 1e4, 50.0)
    text = render([row])
    assert text.count("\n") == 3
    assert "| net (5) | 1 | 4 | 300 (120) | - |" in text
