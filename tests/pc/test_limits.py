"""Run limits (issue 59): a run past its time, memory or test budget stops with its
reason and the graph so far; a private run decides from public facts only and its
spend stands."""

from __future__ import annotations

from typing import Any

import pytest

from dpcg.citests.nonprivate import G2Test
from dpcg.citests.private import source_for_dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.pc import limits as limits_mod
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.pc.limits import (
    BASE_BYTES,
    BYTES_PER_TEST,
    PUBLIC_ROW_TESTS_PER_SECOND,
    RunLimits,
    default_limits,
    resident_bytes,
)
from dpcg.private.contract import RunSettings


@pytest.fixture(scope="module")
def data() -> Any:
    return load_network("random:nodes=12,max_parents=3,card=2-3,seed=2,conc=0.5").sample(
        3_000, 1)


def _g2(data: Any) -> tuple[G2Test, tuple[str, ...]]:
    return G2Test(data), tuple(data.schema.names)


def _key(res: PCResult) -> list[tuple[int, int, int, tuple[int, ...], bool]]:
    return [(t.level, t.x, t.y, t.S, t.independent) for t in res.tests]


def test_no_limits_and_loose_limits_change_nothing(data: Any) -> None:
    tester, names = _g2(data)
    full = pc_stable(tester, names)
    loose = pc_stable(_g2(data)[0], names, limits=RunLimits(
        max_seconds=3600.0, max_memory=1 << 40, max_tests=10**9))
    assert full.stop_reason is None
    assert loose.stop_reason is None
    assert _key(full) == _key(loose)
    assert full.adjacency == loose.adjacency
    assert full.sepsets == loose.sepsets
    assert "stopped" not in full.to_json()


@pytest.mark.parametrize("k", [1, 17, 60])
def test_a_test_limit_stops_after_exactly_that_many_tests(data: Any, k: int) -> None:
    tester, names = _g2(data)
    full = pc_stable(tester, names)
    assert full.n_tests > 60
    res = pc_stable(_g2(data)[0], names, limits=RunLimits(max_tests=k))
    assert res.stop_reason == "max_tests"
    assert _key(res) == _key(full)[:k]  # the serial order's prefix
    # the graph so far: every pair the full run kept is still there
    for a in range(len(names)):
        assert full.adjacency[a] <= res.adjacency[a]
    doc = res.to_json()
    assert doc["stopped"]["limit"] == "max_tests"
    assert "max_tests=" in doc["stopped"]["message"]
    assert res.cpdag.n_edges >= full.cpdag.n_edges


def test_time_and_memory_limits_of_a_non_private_run(data: Any) -> None:
    tester, names = _g2(data)
    res = pc_stable(tester, names, limits=RunLimits(max_seconds=1e-9))
    assert res.stop_reason == "max_seconds"
    assert res.n_tests == 0
    assert res.cpdag.n_edges == len(names) * (len(names) - 1) // 2
    res = pc_stable(_g2(data)[0], names, limits=RunLimits(max_memory=1))
    assert res.stop_reason == "max_memory"
    assert res.n_tests == 0
    assert "memory limit" in res.info["stopped"]["message"]
    assert resident_bytes() > 0


def test_public_only_never_reads_the_clock_or_the_memory(
        data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden() -> int:
        raise AssertionError("a public-only limit read the process's memory")

    monkeypatch.setattr(limits_mod, "resident_bytes", forbidden)
    tester, names = _g2(data)
    n, p = 3_000, len(names)
    # 10 tests' worth of seconds by the public model; memory generous
    seconds = 10.5 * n / PUBLIC_ROW_TESTS_PER_SECOND
    lim = RunLimits(max_seconds=seconds, max_memory=1 << 40, public_only=True, rows=n,
                    columns=p)
    assert lim.test_budgets()["max_seconds"] == 10
    res = pc_stable(tester, names, limits=lim)
    assert res.stop_reason == "max_seconds"
    assert res.n_tests == 10
    assert "public cost model" in res.info["stopped"]["message"]
    mem = BASE_BYTES + p * n + 25 * BYTES_PER_TEST
    lim = RunLimits(max_memory=mem, public_only=True, rows=n, columns=p)
    res = pc_stable(_g2(data)[0], names, limits=lim)
    assert res.stop_reason == "max_memory"
    assert res.n_tests == 25


@pytest.mark.parametrize("bad", [
    {"max_seconds": 0}, {"max_seconds": -1.0}, {"max_seconds": float("nan")},
    {"max_seconds": float("inf")}, {"max_memory": 1.5}, {"max_memory": 0},
    {"max_tests": True}, {"max_tests": "10"}, {"max_tests": 0}, {"public_only": 1},
    {"max_seconds": 5.0, "public_only": True},
])
def test_bad_limits_are_project_errors(bad: dict[str, Any]) -> None:
    with pytest.raises(AlgorithmError):
        RunLimits(**bad)


def test_limits_of_the_wrong_type(data: Any) -> None:
    tester, names = _g2(data)
    with pytest.raises(AlgorithmError):
        pc_stable(tester, names, limits={"max_tests": 3})  # type: ignore[arg-type]


def test_default_limits_are_documented_values() -> None:
    d = default_limits(public_only=False)
    assert d.max_seconds == limits_mod.DEFAULT_MAX_SECONDS
    assert d.max_memory is not None
    assert 0 < d.max_memory <= limits_mod.DEFAULT_MAX_MEMORY
    assert default_limits(public_only=True, rows=10, columns=2).public_only


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc", "svt-pc", "curate"])
def test_a_private_run_past_its_limit_keeps_its_spend(data: Any, algorithm: str) -> None:
    """A private run stopped by a public test limit: a valid partial result whose
    releases stay spent, and the tests before the stop are the unlimited run's."""
    from accounting.session import Session
    from dpcg.private.registry import get_algorithm

    algo: Any = get_algorithm(algorithm)
    names = tuple(data.schema.names)

    def run(lim: RunLimits | None) -> tuple[PCResult, Any]:
        src = source_for_dataset(data)
        settings = RunSettings(epsilon=2.0, delta=1e-6, test="kendall-split")
        plan = algo.plan(algo.params(), settings, src)
        session = Session(settings.budget(), rule=plan.rule, seed=3)
        tester = algo.tester(plan, src, session)
        return pc_stable(tester, names, max_depth=plan.max_depth, limits=lim), session

    full, s_full = run(None)
    # a budget of tests reached after level 0 (every algorithm answers level 0 first)
    k = max(1, sum(1 for t in full.tests if t.level == 0))
    lim = RunLimits(max_tests=k, public_only=True, rows=3_000, columns=len(names))
    part, s_part = run(lim)
    assert part.stop_reason == "max_tests"
    assert not part.budget_exhausted
    assert _key(part) == _key(full)[:part.n_tests]
    spent = s_part.spent()
    assert (spent.epsilon or 0) > 0 or (spent.rho or 0) > 0
    full_spent = s_full.spent()
    assert (spent.epsilon or 0) <= (full_spent.epsilon or 0) + 1e-12


def test_em_pc_does_not_start_a_level_past_its_work_budget(data: Any) -> None:
    """EM-PC scores every candidate test of a level but records only its removals: its
    declared level work (public) counts against the budget, and a level that would pass
    it is not started (nothing of it is released)."""
    from accounting.session import Session
    from dpcg.private.registry import get_algorithm

    algo: Any = get_algorithm("em-pc")
    names = tuple(data.schema.names)

    def run(lim: RunLimits | None) -> tuple[PCResult, Any, Any]:
        src = source_for_dataset(data)
        settings = RunSettings(epsilon=2.0, delta=1e-6, test="kendall-split")
        plan = algo.plan(algo.params(), settings, src)
        session = Session(settings.budget(), rule=plan.rule, seed=3)
        tester = algo.tester(plan, src, session)
        return pc_stable(tester, names, max_depth=plan.max_depth, limits=lim), session, tester

    full, _, _ = run(None)
    p = len(names)
    level0 = p * (p - 1) // 2  # level 0's work: one test per pair
    part, session, _tester = run(RunLimits(max_tests=level0 + 1, public_only=True))
    assert part.stop_reason == "max_tests"
    assert part.levels_completed == 1  # level 1 asks more than one more score
    assert {t.level for t in part.tests} <= {0}
    assert [(t.x, t.y, t.S) for t in part.tests] == \
        [(t.x, t.y, t.S) for t in full.tests if t.level == 0]
    spent = session.spent()
    assert (spent.epsilon or 0) > 0


def test_marginal_pc_post_processing_stops_at_the_time_budget(data: Any) -> None:
    """Marginal-PC's noisy G-tests run after a level's releases (post-processing) and
    were not bounded by ``max_seconds`` (docs/benchmarks/scale.md: hub-150/300 past the
    900 s backstop). A private run's time limit is a public test budget; the strategy now
    stops a level at it, between pairs: the run stops with the time limit's message, the
    releases stand (spent), and the records are the unlimited run's, up to the cut."""
    from accounting.session import Session
    from dpcg.citests.registry import NoOptions
    from dpcg.pc.limits import PUBLIC_ROW_TESTS_PER_SECOND
    from dpcg.private.registry import get_algorithm

    algo: Any = get_algorithm("marginal-pc")
    names = tuple(data.schema.names)
    n = int(data.n)

    def run(lim: RunLimits | None) -> tuple[PCResult, Any, Any]:
        settings = RunSettings(epsilon=4.0, delta=1e-6, test="g2")
        src = algo.source(data, settings, NoOptions())
        plan = algo.plan(algo.params(), settings, src)
        session = Session(settings.budget(), rule=plan.rule, seed=3)
        tester = algo.tester(plan, src, session)
        return pc_stable(tester, names, max_depth=plan.depth, limits=lim), session, tester

    full, s_full, _ = run(None)
    level0 = sum(1 for t in full.tests if t.level == 0)
    level1 = sum(1 for t in full.tests if t.level == 1)
    assert level1 > 6  # a level to cut
    k = level0 + level1 // 2  # the budget ends inside level 1's post-processing
    seconds = (k + 0.5) * n / PUBLIC_ROW_TESTS_PER_SECOND
    lim = RunLimits(max_seconds=seconds, public_only=True, rows=n, columns=len(names))
    assert lim.test_budgets()["max_seconds"] == k
    part, s_part, tester = run(lim)
    assert part.stop_reason == "max_seconds"
    assert "time limit" in part.info["stopped"]["message"]
    assert not part.budget_exhausted
    assert part.levels_completed == 1
    cut = [t for t in part.tests if t.level == 1]
    assert k - level0 <= len(cut) < level1  # stopped between pairs, past the budget
    assert _key(part) == _key(full)[:part.n_tests]
    assert tester.levels[1].get("cut") is True
    assert not any(t.level >= 2 for t in part.tests)
    # level 1's releases stand: the partial run spent what the full run spent by then
    spent = s_part.spent().rho or 0
    assert 0 < spent <= (s_full.spent().rho or 0) + 1e-12
    assert tester.releases > 0
    # the graph is a valid partial result: every removed pair has its separating set
    removed = {(x, y) for x in range(len(names)) for y in range(x + 1, len(names))
               if y not in part.adjacency[x]}
    assert removed == set(part.sepsets)
