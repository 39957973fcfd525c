"""Non-private CI tests: decisions, validation, and use with a real Dataset."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dpcg.citests import CIResult, CITest
from dpcg.citests.nonprivate import (
    Chi2Test,
    FisherZTest,
    G2Test,
    KendallTest,
    SpearmanTest,
)
from dpcg.errors import CITestError
from dpcg.stats.registry import get
from tests.stats.conftest import make_codes


@dataclass
class FakeDiscrete:
    codes: np.ndarray
    cardinalities: tuple[int | None, ...]


@dataclass
class FakeContinuous:
    values: np.ndarray


CARDS = (2, 3, 4, 2, 3)


@pytest.fixture
def data() -> FakeDiscrete:
    return FakeDiscrete(make_codes(0, 3000, list(CARDS)), CARDS)


@pytest.mark.parametrize("cls", [G2Test, Chi2Test, KendallTest, SpearmanTest])
def test_discrete_tests_decide(cls: type, data: FakeDiscrete) -> None:
    t = cls(data, alpha=0.01)
    assert isinstance(t, CITest)
    dep = t.test(0, 1, ())
    assert isinstance(dep, CIResult)
    assert dep.independent is False
    assert dep.pvalue is not None
    assert dep.pvalue < 1e-6
    ind = t.test(3, 4, (0,))
    assert ind.pvalue is not None
    assert ind.independent == (ind.pvalue > 0.01)
    # symmetric and cached
    assert t.test(1, 0, ()) == dep
    assert t.test(3, 4, (0,)) is t.test(4, 3, [0])  # type: ignore[arg-type]


def test_g2_matches_stats(data: FakeDiscrete) -> None:
    from dpcg.stats import contingency_table, g2_test

    r = G2Test(data).test(0, 1, (2, 3))
    ref = g2_test(contingency_table(data.codes, CARDS, 0, 1, (2, 3)))
    assert (r.statistic, r.pvalue) == (ref.statistic, ref.pvalue)


def test_kendall_variants(data: FakeDiscrete) -> None:
    pub = KendallTest(data).test(0, 2, (3,))
    unf = KendallTest(data, variant="unfloored").test(0, 2, (3,))
    tc = KendallTest(data, variant="tie-corrected").test(0, 2, (3,))
    assert pub.statistic is not None
    assert unf.statistic is not None
    assert tc.statistic is not None
    assert abs(pub.statistic) <= abs(unf.statistic)
    # the public variant releases exactly the registered statistic
    spec = get("conditional-kendall-z")
    n = data.codes.shape[1]
    v = spec.evaluate(data.codes[0], data.codes[2], data.codes[3], n=n, w0=9 * n / 4)
    assert pub.statistic == pytest.approx(v, abs=1e-12)


def test_bad_construction_and_queries(data: FakeDiscrete) -> None:
    for alpha in (0, 1, -0.1, float("nan"), "0.05", True):
        with pytest.raises(CITestError, match="alpha"):
            G2Test(data, alpha=alpha)  # type: ignore[arg-type]
    with pytest.raises(CITestError, match="not discrete"):
        G2Test(FakeDiscrete(data.codes, (2, 3, None, 2, 3)))
    with pytest.raises(CITestError, match="outside"):
        G2Test(FakeDiscrete(data.codes, (2, 2, 4, 2, 3)))
    with pytest.raises(CITestError, match="cardinalities"):
        G2Test(FakeDiscrete(data.codes, (2, 3)))
    with pytest.raises(CITestError, match="codes"):
        G2Test(FakeContinuous(np.zeros((2, 3))))  # type: ignore[arg-type]
    with pytest.raises(CITestError, match="variant"):
        KendallTest(data, variant="tau-b")  # type: ignore[arg-type]
    with pytest.raises(CITestError, match="w0"):
        KendallTest(data, w0=-1.0)
    t = G2Test(data)
    with pytest.raises(CITestError, match="differ"):
        t.test(1, 1, ())
    with pytest.raises(CITestError, match="column index"):
        t.test(0, 7, ())
    with pytest.raises(CITestError, match="must not contain"):
        t.test(0, 1, (1,))
    with pytest.raises(CITestError, match="repeated"):
        t.test(0, 1, (2, 2))
    with pytest.raises(CITestError, match="column index"):
        t.test(0, 1.0, ())  # type: ignore[arg-type]


def test_fisherz_test() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4, 800))
    v[1] += v[0]
    t = FisherZTest(FakeContinuous(v), alpha=0.05)
    assert t.test(0, 1, ()).independent is False
    r = t.test(2, 3, (0,))
    assert r.pvalue is not None
    assert r.independent == (r.pvalue > 0.05)
    bad = v.copy()
    bad[2, 5] = np.inf
    with pytest.raises(CITestError, match="column 2"):
        FisherZTest(FakeContinuous(bad))
    with pytest.raises(CITestError, match="values"):
        FisherZTest(FakeDiscrete(np.zeros((2, 2), dtype=np.uint8), (2, 2)))  # type: ignore[arg-type]


def test_with_real_dataset() -> None:
    datasets = pytest.importorskip("dpcg.datasets")
    net = datasets.load_network("asia")
    ds = net.sample(5000, seed=3)
    t = G2Test(ds, alpha=0.05)
    names = list(ds.names)
    # asia: either -> xray is a direct edge, dependent given anything small
    i, j = names.index("either"), names.index("xray")
    assert t.test(i, j, ()).independent is False
    # smoke -> lung -> either: smoke _||_ either | lung
    s, lung, e = names.index("smoke"), names.index("lung"), names.index("either")
    k = KendallTest(ds, variant="tie-corrected")
    assert k.test(s, e, (lung,)).pvalue is not None
