"""The exported conformance checks (:mod:`dpcg.testing`) on a toy algorithm, a toy
statistic and a toy engine, each one module of this package (what adding one takes),
and on a deliberately broken variant of each, which the same check must catch."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import dpcg
from accounting.session import Session
from dpcg.citests.base import CIResult
from dpcg.citests.private import PrivateCITest, StatisticSource
from dpcg.data.dataset import Dataset
from dpcg.engines.base import Query, engine_names, get_engine
from dpcg.errors import StatisticInputError
from dpcg.pc.engine import PCResult
from dpcg.private.registry import algorithms, get_algorithm
from dpcg.stats.contingency import StrataTable
from dpcg.stats.registry import get
from dpcg.testing import (
    check_algorithm,
    check_engine,
    check_statistic,
    data_kind,
    default_data,
    statistic_specs,
)
from tests.testing import toy_algorithm, toy_engine, toy_statistic

REPO = Path(__file__).resolve().parents[2]


def test_importable_without_pytest() -> None:
    code = ("import sys, dpcg.testing; "
            "print(sorted(m for m in ('pytest', 'hypothesis', '_pytest') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- algorithm


def test_toy_algorithm_passes() -> None:
    with toy_algorithm.registered():
        assert "toy-laplace-pc" in algorithms()  # the registry finds it ...
        # ... and the check runs it by name (5000 tests: enough for epsilon = 1e6 at
        # depth 2 to reproduce non-private PC)
        check_algorithm("toy-laplace-pc", params=toy_algorithm.ToyParams(tests=5000))
    assert "toy-laplace-pc" not in algorithms()


class _UnchargedTester:
    """BROKEN: decides every test on the exact score, never through the session."""

    def __init__(self, source: StatisticSource) -> None:
        self.source = source
        self.releases = 0

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        s = self.source.score(x, y, S)
        self.releases += 1
        return CIResult(s <= self.source.threshold(x, y, S), s, None)


class _UnchargedToy(toy_algorithm.ToyLaplacePC):
    name = "toy-uncharged-pc"

    def tester(self, plan: toy_algorithm.ToyPlan, source: StatisticSource,
               session: Session) -> PrivateCITest:
        return _UnchargedTester(source)  # type: ignore[return-value]


def test_uncharged_release_is_caught() -> None:
    with pytest.raises(AssertionError, match="charges before it releases: no statistic"):
        check_algorithm(_UnchargedToy())


def test_wrong_huge_epsilon_limit_is_caught() -> None:
    """The huge-epsilon check compares with the reference it is given: PC stopped at
    depth 0 is not the toy's limit at depth 2."""
    def shallow(data: Dataset, max_depth: int) -> PCResult:
        return dpcg.discover(data, test=toy_algorithm.TOY.default_test, max_depth=0).pc

    with pytest.raises(AssertionError, match="epsilon = 1e6 reproduces non-private PC"):
        check_algorithm(toy_algorithm.TOY, params=toy_algorithm.ToyParams(tests=5000),
                        reference=shallow)


def test_default_data_follows_the_kind() -> None:
    assert default_data("discrete").is_discrete
    assert default_data("continuous").is_continuous
    mixed = default_data("mixed")
    assert not mixed.is_discrete
    assert not mixed.is_continuous
    assert data_kind(get_algorithm("private-ci-pc")) == "continuous"
    assert data_kind(toy_algorithm.TOY) == "discrete"
    with pytest.raises(StatisticInputError, match="kind"):
        default_data("text")


# --------------------------------------------------------------------------- statistic


def test_toy_statistic_passes() -> None:
    with toy_statistic.registered():
        check_statistic("match-fraction")
        assert toy_statistic.SPEC in statistic_specs()
    assert toy_statistic.SPEC not in statistic_specs()


def test_understated_statistic_is_caught() -> None:
    # BROKEN: declares half the true sensitivity
    spec = dataclasses.replace(
        toy_statistic.SPEC, name="match-fraction-understated",
        sensitivity=lambda *, n: 0.5 * toy_statistic.match_fraction_sensitivity(n=n))
    with toy_statistic.registered(spec), pytest.raises(
            AssertionError, match=r"'match-fraction-understated'.*sensitivity bound"):
        check_statistic("match-fraction-understated")


def test_unvalidated_public_parameter_is_caught() -> None:
    # BROKEN: n=nan gives a nan bound instead of an error
    spec = dataclasses.replace(toy_statistic.SPEC, name="match-fraction-nan",
                               sensitivity=lambda *, n: 1.0 / float(n))
    with pytest.raises(AssertionError, match="input validation: bound\\(n=nan\\) was accepted"):
        check_statistic(spec)


def test_unknown_statistic_is_a_project_error() -> None:
    with pytest.raises(StatisticInputError, match="no statistic"):
        check_statistic("no-such-statistic")


# ------------------------------------------------------------------------------ engine


def test_toy_engine_passes() -> None:
    with toy_engine.registered():
        assert "toy" in engine_names()
        check_engine("toy")
    assert "toy" not in engine_names()


class _DroppingEngine(toy_engine.ToyEngine):
    """BROKEN: loses the last row when it counts (its public n is still right)."""

    def tables(self, queries: Sequence[Query]) -> list[StrataTable]:
        full = self._codes
        self._codes = full[:, :-1]
        try:
            return super().tables(queries)
        finally:
            self._codes = full

    def subset(self, rows: NDArray[np.int64]) -> _DroppingEngine:
        return _DroppingEngine(self._codes[:, rows], self._cards, self._names)


def test_dropped_row_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"bit for bit: cardinalities .*: the table of "
                                             r"query"):
        check_engine(_DroppingEngine)


def test_unvalidated_codes_are_caught() -> None:
    class Lenient(toy_engine.ToyEngine):  # BROKEN: float codes taken as they come
        def __init__(self, codes: NDArray[np.integer], cardinalities: Sequence[int],
                     names: Sequence[str]) -> None:
            super().__init__(np.asarray(codes).astype(np.int64), cardinalities, names)

    with pytest.raises(AssertionError, match="malformed codes are refused: float codes"):
        check_engine(Lenient)


# -------------------------------------------------------- the registries, by their names


def test_registered_objects_are_what_the_checks_take() -> None:
    # the parametrised conformance suites pass these (tests/private, tests/stats,
    # tests/engines): a name of each registry resolves
    assert get_algorithm(next(iter(algorithms()))).name in algorithms()
    assert get_engine(engine_names()[0]).name == engine_names()[0]
    spec = statistic_specs()[0]
    assert get(spec.name, spec.relation) is spec
