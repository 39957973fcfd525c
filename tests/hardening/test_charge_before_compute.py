"""PrivCRT / PrivGCM compute on the data only after the charge is admitted and recorded
(issue 19, item 1; docs/privacy/threat-model.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from accounting.costs import Budget
from accounting.errors import AccountingError
from accounting.session import Session
from dpcg.citests.crt import GaussianModelX, PrivCRTTest
from dpcg.citests.gcm import PrivGCMTest
from dpcg.errors import CITestError


class Spy:
    """A model-X sampler recording the number of rows of every call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.rows: list[int] = []

    def conditional_mean(self, z: Any) -> Any:
        self.rows.append(len(z))
        return self.inner.conditional_mean(z)

    def sample(self, z: Any, m: int, rng: np.random.Generator) -> Any:
        self.rows.append(len(z))
        return self.inner.sample(z, m, rng)


def _data(n: int = 200) -> tuple[np.ndarray, list[tuple[float, float]]]:
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, n)
    x = np.clip(0.5 * z + 0.3 * rng.normal(size=n), -2, 2)
    y = np.clip(0.5 * z + 0.3 * rng.normal(size=n), -2, 2)
    return np.vstack([x, y, z]), [(-2.0, 2.0)] * 3


def test_privcrt_reads_no_data_when_the_charge_is_refused() -> None:
    values, bounds = _data()
    model = GaussianModelX.from_arrays(np.zeros(3), np.eye(3) + 0.2)
    spy = Spy(model.sampler(0, (2,)))
    session = Session(Budget(0.5, 0.0), rule="basic", seed=1)
    test = PrivCRTTest(values, bounds, session, 1.0, lambda x, S: spy, m=19)
    with pytest.raises(AccountingError):
        test.test(0, 1, (2,))
    assert spy.rows  # the sampler was checked ...
    assert set(spy.rows) == {2}  # ... on the two public rows only, never on the n rows
    assert session.releases == 0


def test_privcrt_reads_the_data_after_admission() -> None:
    values, bounds = _data()
    model = GaussianModelX.from_arrays(np.zeros(3), np.eye(3) + 0.2)
    spy = Spy(model.sampler(0, (2,)))
    session = Session(Budget(2.0, 0.0), rule="basic", seed=1)
    seen: list[int] = []
    orig = spy.conditional_mean

    def mean(z: Any) -> Any:
        if len(z) == values.shape[1]:
            seen.append(session.releases)  # admitted releases when the data is read
        return orig(z)

    spy.conditional_mean = mean  # type: ignore[method-assign]
    test = PrivCRTTest(values, bounds, session, 1.0, lambda x, S: spy, m=19)
    test.test(0, 1, (2,))
    assert seen == [1]


def test_privcrt_broken_sampler_fails_before_the_charge() -> None:
    values, bounds = _data()

    class Broken:
        def conditional_mean(self, z: Any) -> Any:
            return np.zeros(len(z) + 1)

        def sample(self, z: Any, m: int, rng: np.random.Generator) -> Any:
            return np.zeros((m, len(z)))

    session = Session(Budget(2.0, 0.0), rule="basic", seed=1)
    test = PrivCRTTest(values, bounds, session, 1.0, lambda x, S: Broken(), m=19)
    with pytest.raises(CITestError, match="sampler returned shapes"):
        test.test(0, 1, (2,))
    assert session.releases == 0


def test_privgcm_reads_no_data_when_the_charge_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dpcg.citests.gcm as gcm

    values, bounds = _data()
    calls: list[int] = []
    real = gcm.residual_products_scaled

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(gcm, "residual_products_scaled", spy)
    session = Session(Budget(0.5, 0.0), rule="basic", seed=1)
    test = PrivGCMTest(values, bounds, session, 1.0)
    with pytest.raises(AccountingError):
        test.test(0, 1, (2,))
    assert calls == []
