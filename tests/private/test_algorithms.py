"""Integration tests of the private PC family over the one engine.

* every algorithm except EM-PC reproduces non-private PC (same score, same threshold) at
  eps = 1e6;
* each algorithm charges exactly the mechanisms it declares (ledger entries counted
  against the tests it ran), within the budget;
* a budget smaller than one test's cost spends nothing and says so;
* the run is recorded in a ledger that verifies, with totals equal to the guarantee.
"""

from __future__ import annotations

import os
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpcg
from accounting.costs import Budget
from dpcg.errors import AlgorithmError
from dpcg.private.common import DiscreteAlgorithm
from dpcg.private.contract import RunSettings
from dpcg.private.laplace_pc import LaplacePCParams
from dpcg.private.registry import algorithms
from dpcg.private.run import run_private
from tests.engine_room import private_run

#: The registered algorithms of the discrete family (a new one is covered).
ALL = tuple(name for name, algo in algorithms().items() if isinstance(algo, DiscreteAlgorithm))


def _graph(res: Any) -> tuple[Any, ...]:
    j = res.cpdag.to_json()
    return (sorted(map(tuple, j["edges"]["directed"])),
            sorted(tuple(sorted(e)) for e in j["edges"]["undirected"]))


def _kinds(res: Any) -> Counter[str]:
    return Counter(res.mechanisms)


@pytest.mark.parametrize(
    ("algorithm", "kwargs"),
    [
        ("laplace-pc", {"plan_size": 1000}),  # the default plan may stop before PC does
        ("laplace-pc", {"rule": "zcdp", "plan_size": 1000}),
        ("svt-pc", {}),
        ("priv-pc", {"plan_size": 2000}),  # keeps the per-round sieve budget finite
        ("curate", {"beta1": 0.0, "beta2": 0.0}),  # no coin band: the rule is |z| <= T
    ],
)
@pytest.mark.parametrize(("data", "test"), [
    ("asia", "kendall-z"), ("asia", "cmi"), ("asia", "g2-distance"),
    ("survey", "kendall-split"),  # three-category variables: the splits differ from z
])
def test_high_epsilon_matches_nonprivate_pc(request: pytest.FixtureRequest, algorithm: str,
                                            kwargs: dict[str, Any], data: str,
                                            test: str) -> None:
    dataset = request.getfixturevalue(data)
    ref = dpcg.discover(dataset, test=test).pc
    res = private_run(dataset, algorithm, test, epsilon=1e6, delta=1e-6, seed=11, **kwargs)
    assert not res.budget_exhausted
    assert _graph(res) == _graph(type("R", (), {"cpdag": ref.cpdag})())
    assert res.pc.sepsets.keys() == ref.sepsets.keys()


def test_laplace_pc_charges_one_release_per_test(asia: Any) -> None:
    res = private_run(asia, "laplace-pc", epsilon=1.0, delta=0.0, seed=1, plan_size=500)
    assert res.guarantee["rule"] == "basic"
    assert _kinds(res) == Counter({"laplace": res.n_tests})
    assert Fraction(res.spent["exact"]["epsilon"]) <= Fraction(1.0)
    assert res.plan["plan_size"] == 500


def test_laplace_pc_records_each_round_in_one_transaction(
        asia: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Laplace-PC hands the engine's rounds to ``Session.release_many``: one ledger
    transaction per round, every test still its own entry."""
    from accounting.ledger import Ledger, LedgerRun

    batches: list[list[str]] = []
    original = LedgerRun.record_many

    def spy(self: LedgerRun, entries: Any) -> list[int]:
        batches.append([e.purpose for e in entries])
        return original(self, entries)

    monkeypatch.setattr(LedgerRun, "record_many", spy)
    ledger = tmp_path / "l.sqlite"
    res = private_run(asia, "laplace-pc", epsilon=1.0, delta=0.0, seed=7, ledger=ledger,
                      dataset_id="asia")
    assert sum(map(len, batches)) == res.n_tests == res.mechanisms["laplace"]
    assert len(batches) < res.n_tests / 2
    assert batches[0] == [f"test {x} _||_ {y} | []" for x in range(8) for y in range(x + 1, 8)]
    for batch in batches:  # one test per pair and round
        pairs = [b.split(" | ")[0] for b in batch]
        assert len(set(pairs)) == len(pairs)
    with Ledger.open(ledger) as led:
        assert led.verify().ok


def test_laplace_pc_zcdp_charges_gaussians(asia: Any) -> None:
    res = private_run(asia, "laplace-pc", epsilon=1.0, delta=1e-6, seed=1, rule="zcdp",
                      plan_size=300)
    assert res.guarantee["rule"] == "zcdp"
    assert _kinds(res) == Counter({"gaussian": res.n_tests})
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(1.0, 1e-6).rho()


def test_laplace_pc_plan_exhaustion_returns_graph_so_far(asia: Any) -> None:
    res = private_run(asia, "laplace-pc", epsilon=0.5, delta=0.0, seed=2, plan_size=5)
    assert res.budget_exhausted
    assert res.n_tests == 5
    assert _kinds(res) == Counter({"laplace": 5})
    assert Fraction(res.spent["exact"]["epsilon"]) <= Fraction(0.5)
    assert res.message is not None
    assert "graph so far" in res.message


def test_svt_pc_charges_one_instance_per_positive(asia: Any) -> None:
    res = private_run(asia, "svt-pc", epsilon=5.0, delta=0.0, seed=3)
    positives = sum(1 for t in res.pc.tests if t.independent)
    instances = res.mechanisms.get("sparse-vector", 0)
    assert set(res.mechanisms) == {"sparse-vector"}
    # one instance per positive, plus the last one if it never fired
    assert instances in (positives, positives + 1)
    assert res.plan["used_instances"] == instances


def test_priv_pc_charges_sieve_per_round_and_examine_per_positive(asia: Any) -> None:
    res = private_run(asia, "priv-pc", epsilon=20.0, delta=0.0, seed=4, release="test")
    k = res.mechanisms
    examined = sum(1 for t in res.pc.tests if t.statistic is not None)
    assert k.get("laplace", 0) == examined == res.plan["used_examines"]
    rounds = res.plan["used_rounds"]
    # every round's sieve is charged, plus the next one when it was started together
    # with the last examine and no test came after it
    assert k.get("subsampled-sparse-vector", 0) == rounds + res.plan["used_unused_sieves"]
    assert rounds in (examined, examined + 1)
    assert Fraction(res.spent["exact"]["epsilon"]) <= Fraction(20.0)
    assert res.plan["m"] < res.plan["n"]  # subsampled at this per-round budget


def test_curate_charges_every_test_and_every_coin(survey: Any) -> None:
    res = private_run(survey, "curate", epsilon=2.0, delta=1e-6, seed=5)
    assert res.guarantee["rule"] == "zcdp"
    assert res.mechanisms.get("laplace", 0) == res.n_tests
    assert res.mechanisms.get("exponential", 0) == res.plan["used_coins"]
    assert Fraction(res.spent["exact"]["rho"]) <= Budget(2.0, 1e-6).rho()
    assert res.plan["orders"][0]["order"] == 0


def test_curate_coin_is_not_reseeded(survey: Any) -> None:
    # A huge coin band: every test lands between the margins, so decisions are coins.
    res = private_run(survey, "curate", epsilon=1e6, delta=1e-6, seed=6, beta1=0.99,
                      beta2=1e6)
    decisions = {t.independent for t in res.pc.tests}
    assert res.plan["used_coins"] >= res.n_tests - 2  # (scores of exactly 0 fall below)
    assert decisions == {True, False}


def test_em_pc_charges_exponential_draws(asia: Any) -> None:
    """One count per level run and one top-k release of the picks per level that
    removes something, covering removals at level 0 and later: level 0 (one set per
    pair, most pairs deleted) picks the pairs to keep, later levels the pairs to delete."""
    res = private_run(asia, "em-pc", epsilon=5.0, delta=0.0, seed=7)
    by_level = {len(S) for S in res.pc.sepsets.values()}
    levels = res.pc.levels_completed
    assert 0 in by_level
    assert max(by_level) > 0
    assert set(res.mechanisms) == {"exponential", "top-k", "group-top-k"}
    assert res.mechanisms["exponential"] == levels
    assert res.mechanisms["top-k"] + res.mechanisms["group-top-k"] == len(by_level)
    assert Fraction(res.spent["exact"]["epsilon"]) <= Fraction(5.0)


@pytest.mark.parametrize("algorithm", ["laplace-pc", "svt-pc", "priv-pc"])
def test_budget_below_one_test_spends_nothing(asia: Any, algorithm: str) -> None:
    res = private_run(asia, algorithm, epsilon=0.5, delta=0.0, seed=8, test_epsilon=1.0)
    assert res.budget_exhausted
    assert res.n_tests == 0
    assert res.mechanisms == {}
    assert Fraction(res.spent["exact"]["epsilon"]) == 0
    assert res.message is not None
    assert "nothing was spent" in res.message
    p = len(asia.names)
    assert len(res.cpdag.to_json()["edges"]["undirected"]) == p * (p - 1) // 2


@pytest.mark.parametrize(
    "kwargs",
    [{"epsilon": 0.0}, {"epsilon": -1.0}, {"epsilon": float("nan")}, {"delta": 1.0},
     {"plan_size": 0}, {"test": "nope"}, {"rule": "zcdp", "delta": 0.0},
     {"algorithm": "nope"}, {"bogus_option": 1}],
)
def test_bad_input_raises_before_anything_is_charged(asia: Any, kwargs: dict[str, Any]
                                                     ) -> None:
    args: dict[str, Any] = {"algorithm": "laplace-pc", "epsilon": 1.0, "delta": 1e-6}
    args.update(kwargs)
    with pytest.raises(AlgorithmError):
        private_run(asia, **args)


def test_ledger_run_verifies_with_totals_equal_to_guarantee(asia: Any, tmp_path: Path
                                                            ) -> None:
    from accounting.ledger import Ledger
    from accounting.ledger.store import _OPEN_FILES

    path = tmp_path / "runs.db"
    res = private_run(asia, "laplace-pc", epsilon=1.0, delta=1e-6, ledger=path,
                      dataset_id="asia-4k", seed=9)
    assert res.ledger is not None
    assert res.ledger["run_id"]
    # the run closed its ledger connection (not left to the garbage collector)
    st = path.stat()
    assert (os.getpid(), st.st_dev, st.st_ino) not in _OPEN_FILES
    led = Ledger.open(path)
    report = led.verify()
    assert report.ok, report.problems
    run = led.run(res.ledger["run_id"])
    assert run.budget_epsilon == Fraction(res.guarantee["epsilon"])
    assert run.budget_delta == Fraction(res.guarantee["delta"])
    assert run.n_entries == sum(res.mechanisms.values())
    assert run.status == ("budget-exhausted" if res.budget_exhausted else "completed")
    # The counts in the result are the entries the ledger holds for this run.
    in_ledger = Counter(e["mechanism"] for e in led.entries()
                        if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism")
    assert in_ledger == Counter(res.mechanisms)
    # every level-0 test, every removal, one release per pair at later levels, picks
    assert res.n_tests <= run.n_entries


def test_run_private_reuses_a_cache_without_changing_accounting(asia: Any) -> None:
    from dpcg.citests.private import source_for_dataset

    cache: dict[tuple[int, int, tuple[int, ...]], float] = {}
    src = source_for_dataset(asia, "kendall-z", cache=cache)
    s = RunSettings(epsilon=1.0, delta=0.0, test="kendall-z", noise_seed=10)
    params = LaplacePCParams(plan_size=200)
    a = run_private("laplace-pc", src, tuple(asia.names), s, params)
    b = run_private("laplace-pc", src, tuple(asia.names), s, params)
    assert cache
    assert _graph(a) == _graph(b)  # same seed, same noise, same cached statistics
    assert a.mechanisms == b.mechanisms


@pytest.mark.parametrize("algorithm", ["em-pc", "curate"])
def test_plan_size_is_refused_where_it_does_not_apply(asia: Any, algorithm: str) -> None:
    with pytest.raises(AlgorithmError, match="plan_size"):
        private_run(asia, algorithm, epsilon=1.0, delta=1e-6, plan_size=10)


def test_priv_pc_round_costs_fit_and_rate_is_the_closed_form(asia: Any) -> None:
    import math

    from accounting.mechanisms import Laplace, SubsampledSparseVector
    from accounting.relations import Relation
    from dpcg.citests.private import source_for_dataset
    from dpcg.private import priv_pc
    from dpcg.private.planning import subsample_rate

    src = source_for_dataset(asia, "kendall-z")
    for eps in (0.5, 5.0, 50.0):
        plan = priv_pc.make_plan(priv_pc.PrivPCParams(),
                                 RunSettings(epsilon=eps, delta=0.0, test="kendall-z"), src)
        sieve = SubsampledSparseVector(plan.n, plan.m, 0.0, plan.sensitivity_sub,
                                       plan.epsilon_base)
        exam = Laplace(plan.sensitivity_full, plan.epsilon_half)
        rel = Relation.REPLACE_ONE
        total = sieve.cost(rel) + exam.cost(rel)
        assert total.epsilon is not None
        assert total.epsilon * plan.rounds <= Fraction(eps)
        assert plan.m == max(2, min(plan.n, math.floor(subsample_rate(plan.epsilon_round)
                                                        * plan.n)))
        assert plan.sensitivity_sub == pytest.approx(
            plan.sensitivity_full * math.sqrt(plan.n / plan.m))


@pytest.mark.parametrize("algorithm", ALL)
def test_source_under_another_relation_is_refused_before_the_ledger(
        asia: Any, algorithm: str, tmp_path: Path) -> None:
    """A source whose bounds are declared under add/remove would be charged as if they
    were replace-one bounds (half the cost); the run refuses it and reserves nothing."""
    from dpcg.citests.private import StatisticSource
    from dpcg.private.ledger import LedgerTarget

    src = StatisticSource(asia.codes, asia.cardinalities, "kendall-split",
                          relation="add-remove")
    led = tmp_path / "l.sqlite"
    target = LedgerTarget(led, "asia-ar", Budget(10.0, 1e-5), True)
    with pytest.raises(AlgorithmError, match="add-remove"):
        run_private(algorithm, src, tuple(asia.names),
                    RunSettings(epsilon=1.0, delta=1e-6, test="kendall-split"),
                    ledger=target)
    assert not led.exists()
