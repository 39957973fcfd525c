"""The statistic registry: completeness of every spec, parameter checking, lookups."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.relations import Relation
from dpcg.errors import StatisticInputError
from dpcg.stats import registry
from dpcg.stats.registry import StatisticSpec, all_specs, get, register
from dpcg.testing import check_statistic, statistic_specs

#: The source checkout (the proof notes are docs, not package data).
ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    ("n-cmi", Relation.REPLACE_ONE),
    ("n-cmi", Relation.ADD_REMOVE),
    ("kendall-tau-a", Relation.REPLACE_ONE),
    ("kendall-tau-a", Relation.ADD_REMOVE),
    ("conditional-kendall-z", Relation.REPLACE_ONE),
    ("conditional-kendall-z", Relation.ADD_REMOVE),
    ("spearman-rho-a", Relation.REPLACE_ONE),
    ("conditional-spearman-z", Relation.REPLACE_ONE),
    ("conditional-kendall-z-categorical", Relation.REPLACE_ONE),
    ("conditional-kendall-z-categorical", Relation.ADD_REMOVE),
    ("split-kendall-z", Relation.REPLACE_ONE),
    ("split-kendall-z", Relation.ADD_REMOVE),
}


def _pub(spec: StatisticSpec, n: int) -> dict[str, float]:
    values = {"n": n, "w0": 9 * n / 4, "cx": 4, "cy": 3}
    return {k: values[k] for k in spec.public_params}


def test_expected_specs_registered() -> None:
    assert {(s.name, s.relation) for s in all_specs()} >= EXPECTED


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: f"{s.name}/{s.relation.value}")
def test_spec_is_complete(spec: StatisticSpec) -> None:
    assert spec.assumptions.strip()
    assert spec.proof_note.startswith("docs/privacy/")
    note = (ROOT / spec.proof_note)
    assert note.is_file(), f"missing proof note {note}"
    text = note.read_text()
    for section in ("Claim", "Assumptions", "Proof", "Checked by"):
        assert f"## {section}" in text, (note, section)
    b = spec.bound(**_pub(spec, 1000))
    assert math.isfinite(b)
    assert b > 0


def test_known_values() -> None:
    n = 100_000
    assert get("n-cmi").bound(n=n) == pytest.approx(25.0258, abs=1e-3)
    assert get("kendall-tau-a").bound(n=n) == 4 / n
    assert get("kendall-tau-a", "add-remove").bound(n=n) == 4 / (n + 1)
    ckz = get("conditional-kendall-z")
    assert ckz.bound(n=n, w0=9 * n / 4) == pytest.approx(9 / math.sqrt(n))
    assert ckz.bound(n=n, w0=100.0) == pytest.approx(15.75 / 10)
    assert get("conditional-kendall-z", Relation.ADD_REMOVE).bound(w0=100.0) == pytest.approx(
        0.7875
    )
    assert get("conditional-spearman-z").bound(n=n) == pytest.approx(16 / math.sqrt(n))
    cat = get("conditional-kendall-z-categorical")
    assert cat.bound(n=n, w0=9 * n / 4, cx=2, cy=5) == pytest.approx(6 / math.sqrt(n))
    assert cat.bound(n=n, w0=9 * n / 4, cx=4, cy=4) == pytest.approx(8 / math.sqrt(n))
    assert cat.bound(n=n, w0=9 * n / 4, cx=1, cy=4) == 0.0
    # the categorical constant never exceeds the general one
    for c in range(2, 300):
        assert registry.kendall_u_constant(c, c) < registry.KENDALL_U_ADD_REMOVE
    assert get("conditional-kendall-z-categorical", "add-remove").bound(
        w0=100.0, cx=2, cy=2
    ) == pytest.approx((4.5 + 9 / 8) / 10)
    assert registry.g_increment(0) == 0.0
    assert registry.g_increment(7) == pytest.approx(8 * math.log(8) - 7 * math.log(7))


def test_parameter_checking() -> None:
    spec = get("kendall-tau-a")
    with pytest.raises(StatisticInputError, match="missing"):
        spec.bound()
    with pytest.raises(StatisticInputError, match="unexpected"):
        spec.bound(n=10, w0=3.0)
    with pytest.raises(StatisticInputError, match="integer"):
        spec.bound(n=10.5)
    with pytest.raises(StatisticInputError, match=">= 2"):
        spec.bound(n=1)
    with pytest.raises(StatisticInputError, match="w0"):
        get("conditional-kendall-z").bound(n=10, w0=0.0)
    with pytest.raises(StatisticInputError, match="w0"):
        get("conditional-kendall-z").bound(n=10, w0=float("inf"))
    with pytest.raises(StatisticInputError, match="no statistic"):
        get("kendall-tau-b")
    with pytest.raises(StatisticInputError, match="no statistic"):
        get("spearman-rho-a", Relation.ADD_REMOVE)


def test_duplicate_registration_rejected() -> None:
    spec = get("kendall-tau-a")
    with pytest.raises(StatisticInputError, match="already registered"):
        register(spec)


def test_evaluate_matches_library() -> None:
    from dpcg.stats import n_cmi, table_from_codes
    from dpcg.stats.kendall import conditional_kendall_z

    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, 200)
    y = (x + rng.integers(0, 2, 200)) % 3
    s = rng.integers(0, 4, 200)
    t = table_from_codes(x, y, s, 3, 3, 4)
    assert get("n-cmi").evaluate(x, y, s, n=200) == pytest.approx(n_cmi(t), abs=1e-12)
    assert get("conditional-kendall-z").evaluate(x, y, s, n=200, w0=450.0) == pytest.approx(
        conditional_kendall_z(t), abs=1e-12
    )


#: Registered statistics that are not symmetric in x and y by definition.
ASYMMETRIC = frozenset({"crt-statistic"})


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 40))
def test_registered_statistics_are_row_permutation_invariant(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    y = rng.integers(0, 3, n)
    s = rng.integers(0, 3, n)
    perm = rng.permutation(n)
    for spec in all_specs():
        pub = _pub(spec, n)
        a = spec.evaluate(x, y, s, **pub)
        b = spec.evaluate(x[perm], y[perm], s[perm], **pub)
        assert b == pytest.approx(a, abs=1e-9), spec.name
        # symmetric in x and y, except the CRT statistic (exact X residual, KRR Y residual)
        if spec.name in ASYMMETRIC:
            continue
        swapped = dict(pub)
        if "cx" in pub:
            swapped["cx"], swapped["cy"] = pub["cy"], pub["cx"]
        assert spec.evaluate(y, x, s, **swapped) == pytest.approx(a, abs=1e-9), spec.name


@pytest.mark.parametrize("spec", statistic_specs(),
                         ids=lambda s: f"{s.name}/{Relation(s.relation).value}")
def test_check_statistic(spec: StatisticSpec) -> None:
    """The exported check (:func:`dpcg.testing.check_statistic`) on every registered
    statistic: proof note, bound and parameter validation, determinism, and a random and
    a local adversarial search for neighbours that break the bound."""
    check_statistic(spec)
