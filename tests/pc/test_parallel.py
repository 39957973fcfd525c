"""A non-private level on two forked processes: the serial records, removals and stops
(issue 59)."""

from __future__ import annotations

from typing import Any

import pytest

from dpcg.citests.nonprivate import FastG2Test, G2Test
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.pc.engine import PCResult, pc_stable
from dpcg.pc.limits import RunLimits
from dpcg.pc.oracle import DSeparationOracle

NAME = "random:nodes=16,max_parents=3,card=2-4,seed=6,conc=0.5,shape=scale-free,exponent=1.5"


@pytest.fixture(scope="module")
def data() -> Any:
    return load_network(NAME).sample(5_000, 3)


def _key(res: PCResult) -> list[tuple[Any, ...]]:
    return [(t.level, t.x, t.y, t.S, t.statistic, t.pvalue, t.independent)
            for t in res.tests]


@pytest.mark.parametrize("workers", [2, 3])
def test_two_workers_give_the_serial_run(data: Any, workers: int) -> None:
    names = tuple(data.schema.names)
    serial = pc_stable(FastG2Test(data), names)
    par = pc_stable(FastG2Test(data), names, workers=workers)
    assert serial.n_tests > 500
    assert _key(par) == _key(serial)  # same tests, same order, same statistics
    assert par.sepsets == serial.sepsets
    assert par.adjacency == serial.adjacency
    assert par.cpdag.to_json() == serial.cpdag.to_json()
    assert par.levels_completed == serial.levels_completed


@pytest.mark.parametrize("k", [1, 40, 333])
def test_a_test_limit_stops_at_the_serial_prefix(data: Any, k: int) -> None:
    names = tuple(data.schema.names)
    serial = pc_stable(G2Test(data), names, limits=RunLimits(max_tests=k))
    par = pc_stable(G2Test(data), names, limits=RunLimits(max_tests=k), workers=2)
    assert par.stop_reason == serial.stop_reason == "max_tests"
    assert _key(par) == _key(serial)
    assert par.adjacency == serial.adjacency


def test_a_worker_past_the_deadline_stops_the_run(data: Any) -> None:
    names = tuple(data.schema.names)
    serial = pc_stable(G2Test(data), names)
    # a deadline that passes during the run: whatever was merged is a serial prefix
    par = pc_stable(G2Test(data), names, limits=RunLimits(max_seconds=1e-3), workers=2)
    assert par.stop_reason == "max_seconds"
    assert _key(par) == _key(serial)[:par.n_tests]


def test_only_parallel_safe_edge_testers(data: Any) -> None:
    names = tuple(data.schema.names)
    oracle = DSeparationOracle(names, [])
    with pytest.raises(AlgorithmError, match="parallel_safe"):
        pc_stable(oracle, names, workers=2)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(AlgorithmError, match="workers"):
            pc_stable(G2Test(data), names, workers=bad)  # type: ignore[arg-type]


def test_only_levels_past_parallel_min_tests_fork(data: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``parallel_min_tests`` (the front door's default with every core): a level forks
    only when its pairs may ask that many tests (public: the frozen adjacency); the
    records are the serial run's either way."""
    import dpcg.pc.engine as engine_mod

    names = tuple(data.schema.names)
    serial = pc_stable(FastG2Test(data), names)
    forked: list[int] = []
    real = engine_mod.run_level  # type: ignore[attr-defined]

    def spy(*args: Any, **kwargs: Any) -> Any:
        forked.append(len(args[2]))  # the level's pairs
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_mod, "run_level", spy)
    never = pc_stable(FastG2Test(data), names, workers=2, parallel_min_tests=10**12)
    assert forked == []  # no level may ask that many: all serial
    assert _key(never) == _key(serial)
    some = pc_stable(FastG2Test(data), names, workers=2, parallel_min_tests=200)
    assert 0 < len(forked) < some.levels_completed + 1  # level 0 (120 pairs) stays serial
    assert _key(some) == _key(serial)
    assert some.adjacency == serial.adjacency
    with pytest.raises(AlgorithmError):
        pc_stable(FastG2Test(data), names, workers=2, parallel_min_tests=-1)


def test_the_front_door_uses_every_core_by_default() -> None:
    from dpcg.citests.private import source_for_dataset  # noqa: F401 - registry import
    from dpcg.pipeline.run import auto_workers

    data = load_network(NAME).sample(500, 0)
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    assert auto_workers(FastG2Test(data)) == max(1, cores)
    plain = FastG2Test(data)
    plain.parallel_safe = False
    assert auto_workers(plain) == 1


def test_auto_workers_keeps_batch_testers_in_one_process() -> None:
    """A batch tester (e.g. the mixed dg-lrt test) may declare ``parallel_safe`` but
    ``pc_stable`` forks only edge testers: the default must not ask it to (the mixed
    CLI runs failed with the auto default before this)."""
    from dpcg.pipeline.run import auto_workers

    class Batch:
        parallel_safe = True

        def test(self, x: int, y: int, s: tuple[int, ...]) -> object:
            raise AssertionError("not called")

        def test_many(self, queries: object) -> object:
            raise AssertionError("not called")

    assert auto_workers(Batch()) == 1


def test_mixed_run_from_the_front_door_by_default() -> None:
    import dpcg
    from dpcg.datasets.mixed_network import null_mixed_table

    data = null_mixed_table(300, 0)
    auto = dpcg.discover(data, test="dg-lrt")
    serial = dpcg.discover(data, test="dg-lrt", workers=1)
    assert auto.graph.edges == serial.graph.edges
