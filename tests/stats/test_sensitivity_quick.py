"""Quick random search: no registered statistic moves by more than its declared bound.

The full adversarial audit lives in ``audits.sensitivity``; this is a fast smoke check
at small ``n`` plus the constructions that attain (or nearly attain) each bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from accounting.relations import Relation
from dpcg.stats.registry import StatisticSpec, all_specs, get

TOL = 1e-9


def _public(
    spec: StatisticSpec, n: int, rng: np.random.Generator, cx: int = 0, cy: int = 0
) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in spec.public_params:
        if k == "n":
            out[k] = n
        elif k == "cx":
            out[k] = cx
        elif k == "cy":
            out[k] = cy
        elif k == "w0":
            # mix of the default public floor and small floors
            out[k] = float(rng.choice([9 * n / 4, 9 * n / 4 + 3, 1.0, 0.5 + 3 * rng.random()]))
        else:  # pragma: no cover - new params must be added here
            raise AssertionError(f"unknown public parameter {k}")
    return out


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: f"{s.name}/{s.relation.value}")
def test_random_neighbours_respect_bound(spec: StatisticSpec) -> None:
    rng = np.random.default_rng(12345)
    worst = 0.0
    for _ in range(1500):
        n = int(rng.integers(2, 14))
        c = int(rng.integers(2, 6))
        cy = c if rng.random() < 0.5 else int(rng.integers(2, 6))
        k = int(rng.integers(1, 4))
        x = rng.integers(0, c, n)
        y = rng.integers(0, cy, n)
        s = rng.integers(0, k, n)
        if rng.random() < 0.5 and cy == c:  # monotone-ish data push tau to extremes
            y = x.copy() if rng.random() < 0.5 else (c - 1 - x)
        if spec.relation is Relation.REPLACE_ONE:
            i = int(rng.integers(n))
            x2, y2, s2 = x.copy(), y.copy(), s.copy()
            x2[i], y2[i], s2[i] = rng.integers(0, c), rng.integers(0, cy), rng.integers(0, k)
            pub = _public(spec, n, rng, c, cy)
            d = abs(spec.evaluate(x, y, s, **pub) - spec.evaluate(x2, y2, s2, **pub))
        else:
            i = int(rng.integers(n))
            keep = np.arange(n) != i  # the smaller neighbour has n - 1 rows
            pub = _public(spec, n - 1, rng, c, cy)
            small = spec.evaluate(x[keep], y[keep], s[keep], **pub)
            d = abs(spec.evaluate(x, y, s, **pub) - small)
        b = spec.bound(**pub)
        assert d <= b + TOL, (spec.name, d, b, x, y, s, pub)
        worst = max(worst, d / b)
    assert worst > 0.0


def test_tau_a_bounds_attained() -> None:
    n = 9
    # n-1 monotone rows (i+1, i+1) plus (n, n): concordant with all others ...
    x = np.arange(1, n + 1)
    y = np.arange(1, n + 1)
    # ... replaced by (n, 0): discordant with all others. |d tau| = 2(n-1)/(n(n-1)/2) = 4/n
    y2 = y.copy()
    y2[-1] = 0
    spec = get("kendall-tau-a")
    d = abs(spec.evaluate(x, y, n=n) - spec.evaluate(x, y2, n=n))
    assert d == pytest.approx(4 / n, rel=1e-12)
    # add/remove: n anti-monotone rows, add a row concordant with all of them
    ar = get("kendall-tau-a", Relation.ADD_REMOVE)
    xa, ya = np.arange(n), np.arange(n)[::-1].copy()
    big = ar.evaluate(np.r_[xa, n], np.r_[ya, n], n=n)
    small = ar.evaluate(xa, ya, n=n)
    assert abs(big - small) == pytest.approx(4 / (n + 1), rel=1e-12)


def test_conditional_kendall_public_normaliser_near_tight() -> None:
    """Remove a discordant-with-all row from a concordant block and add a
    concordant-with-all row to an anti-monotone block: |dz| approaches 13.5/sqrt(w0)."""
    m = 60
    xs = np.r_[np.arange(m), np.arange(m), 0]
    ys = np.r_[np.arange(m), np.arange(m)[::-1], 0]
    ss = np.r_[np.zeros(m, int), np.ones(m, int), 0]
    # block 0: m concordant rows + one row (m, 0) discordant with all of them
    x1 = np.r_[xs[:-1], m]
    y1 = np.r_[ys[:-1], 0]
    s1 = np.r_[ss[:-1], 0]
    # neighbour: that row moves to block 1 as (m, m), concordant with the anti-monotone block
    x2, y2, s2 = x1.copy(), y1.copy(), s1.copy()
    y2[-1], s2[-1] = m, 1
    n = x1.size
    spec = get("conditional-kendall-z")
    w0 = 9 * n / 4
    d = abs(spec.evaluate(x1, y1, s1, n=n, w0=w0) - spec.evaluate(x2, y2, s2, n=n, w0=w0))
    b = spec.bound(n=n, w0=w0)
    assert d <= b
    assert d / b > 0.9


def test_spearman_block_add_remove_constant() -> None:
    """One row added to one block changes U = sum_b (n_b - 1) rho_a,b by < 8."""
    from dpcg.stats import table_from_codes
    from dpcg.stats.spearman import conditional_spearman_numerator

    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(3000):
        m = int(rng.integers(1, 25))
        c = int(rng.integers(2, 30))
        x = rng.integers(0, c, m)
        y = x.copy() if rng.random() < 0.3 else rng.integers(0, c, m)
        if rng.random() < 0.3:
            y = c - 1 - x
        xr, yr = int(rng.integers(0, c)), int(rng.integers(0, c))
        u0 = conditional_spearman_numerator(table_from_codes(x, y, None, c, c))
        u1 = conditional_spearman_numerator(
            table_from_codes(np.r_[x, xr], np.r_[y, yr], None, c, c)
        )
        worst = max(worst, abs(u1 - u0))
    assert worst < 8.0
    assert worst > 2.0


def test_categorical_kendall_near_tight() -> None:
    """Binary x (Lemma 2 with c = 2): a row concordant with all m rows of block 0 is
    replaced by a row discordant with all m rows of block 1; each step changes U by
    9m/(2m+7) -> 9/2, so |dz| approaches 2 (9/2) / sqrt(9n/4) = 6/sqrt(n)."""
    m = 60
    # block 0: m rows (0, 1) plus row (1, 2): concordant with all -> removal changes U by ~4.5
    # block 1: m rows (0, 1); the moved row becomes (1, 0): discordant with all
    x1 = np.r_[np.zeros(m, int), np.zeros(m, int), 1]
    y1 = np.r_[np.ones(m, int), np.ones(m, int), 2]
    s1 = np.r_[np.zeros(m, int), np.ones(m, int), 0]
    x2, y2, s2 = x1.copy(), y1.copy(), s1.copy()
    y2[-1], s2[-1] = 0, 1
    n = x1.size
    spec = get("conditional-kendall-z-categorical")
    pub = {"n": n, "w0": 9 * n / 4, "cx": 2, "cy": 3}
    d = abs(spec.evaluate(x1, y1, s1, **pub) - spec.evaluate(x2, y2, s2, **pub))
    b = spec.bound(**pub)
    assert b == pytest.approx(6 / np.sqrt(n))
    assert d <= b
    assert d / b > 0.9
    # codes outside the declared categories violate the spec's assumptions
    from dpcg.errors import StatisticInputError

    with pytest.raises(StatisticInputError, match="declared"):
        spec.evaluate(x1, y1 + 5, s1, **pub)


def test_categorical_kendall_three_categories_is_tight() -> None:
    """Both x and y with three categories (sachs): c_U(3) = 45/8 cannot be improved for
    this statistic, even using both cardinalities. Block 0: m rows (0, 1), m rows (1, 2)
    (concordant with each other, S = m^2) and the row (2, 0), discordant with all 2m;
    block 1: m rows (0, 1), m rows (1, 0) (S = -m^2). Moving the row to (2, 2) in block 1
    (concordant with all 2m) raises U by about 45/8 at each step, so |dz| approaches
    2 (45/8) / sqrt(9n/4) = 7.5/sqrt(n), the registered bound."""
    m = 400
    x1 = np.r_[np.zeros(m, int), np.ones(m, int), 2, np.zeros(m, int), np.ones(m, int)]
    y1 = np.r_[np.ones(m, int), np.full(m, 2), 0, np.ones(m, int), np.zeros(m, int)]
    s1 = np.r_[np.zeros(2 * m + 1, int), np.ones(2 * m, int)]
    x2, y2, s2 = x1.copy(), y1.copy(), s1.copy()
    y2[2 * m], s2[2 * m] = 2, 1
    n = x1.size
    spec = get("conditional-kendall-z-categorical")
    pub = {"n": n, "w0": 9 * n / 4, "cx": 3, "cy": 3}
    d = abs(spec.evaluate(x1, y1, s1, **pub) - spec.evaluate(x2, y2, s2, **pub))
    b = spec.bound(**pub)
    assert b == pytest.approx(7.5 / np.sqrt(n))
    assert d <= b
    assert d / b > 0.98
