"""Pre-flight of what an algorithm decides before its first release (found by a review,
2026-12-02): an inconsistent ``--background`` and a budget too small for a mechanism's
sampler used to fail only after the run was reserved (an ``error`` run holding budget).
Now both fail before the ledger is touched: a registered dataset keeps its rows and
its remaining lifetime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounting.errors import AccountingError, InvalidParameterError
from dpcg.errors import AlgorithmError, DpcgError
from tests.engine_room import private_run
from tests.hardening.helpers import cli, continuous_table, raw, row_counts


def _registered(tmp_path: Path, capsys: pytest.CaptureFixture[str], dataset_id: str) -> Path:
    led = tmp_path / "l.sqlite"
    assert cli(["ledger", "init", str(led), "--dataset-id", dataset_id, "--epsilon", "10",
                "--delta", "1e-5"], capsys).code == 0
    return led


def _refused(argv: list[str], led: Path, error: type[Exception], fragment: str,
             capsys: pytest.CaptureFixture[str]) -> None:
    before = row_counts(led)
    shown = cli(["ledger", "show", str(led)], capsys).out
    got = cli(argv, capsys)
    assert got.code == 2, got.err
    assert fragment in got.err
    with pytest.raises(error):
        raw(argv)
    assert issubclass(error, DpcgError | AccountingError)
    assert row_counts(led) == before
    assert cli(["ledger", "show", str(led)], capsys).out == shown
    assert cli(["ledger", "verify", str(led)], capsys).code == 0


BACKGROUNDS = [
    ({"required_edges": [["asia", "NOSUCH"]]}, "unknown variable"),
    ({"required_edges": [["asia", "tub"]], "forbidden_edges": [["tub", "asia"]]},
     "both required and forbidden"),
    ({"required_orientations": [["asia", "tub"], ["tub", "asia"]]}, "asia"),
]


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc"])
@pytest.mark.parametrize(("knowledge", "fragment"), BACKGROUNDS)
def test_inconsistent_background_reserves_nothing(
        algorithm: str, knowledge: dict[str, list[list[str]]], fragment: str,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = _registered(tmp_path, capsys, "asia-bg")
    bg = tmp_path / "bg.json"
    bg.write_text(json.dumps(knowledge))
    _refused(["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", algorithm,
              "--epsilon", "0.5", "--noise-seed", "1", "--quiet", "--ledger", str(led),
              "--dataset-id", "asia-bg", "--background", str(bg)],
             led, AlgorithmError, fragment, capsys)


@pytest.mark.parametrize(("algorithm", "extra"), [
    ("priv-pc", ["--test-epsilon", "1e-300"]), ("priv-pc", ["--epsilon", "1e-200"]),
    ("svt-pc", ["--test-epsilon", "1e-300"]), ("svt-pc", ["--epsilon", "1e-200"]),
    ("laplace-pc", ["--epsilon", "1e-200"])])
def test_sieve_budget_below_its_samplers_reserves_nothing(
        algorithm: str, extra: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    led = _registered(tmp_path, capsys, "asia-tiny")
    argv = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", algorithm,
            "--noise-seed", "1", "--quiet", "--ledger", str(led), "--dataset-id",
            "asia-tiny", "--epsilon", "0.5", *extra]
    _refused(argv, led, InvalidParameterError, "too small", capsys)


@pytest.mark.parametrize("epsilon", ["1e-12", "1e-10"])
def test_private_ci_pc_budget_below_its_sampler_reserves_nothing(
        epsilon: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    # 1e-10: the per-test epsilon passes the one-dimensional check but not the grid of
    # the release's 300 residual products; such a run used to be reserved, charge its
    # first test and end in an error (found 2026-12-02). --groups 0: that release (the
    # default grouped release has dimension 20, whose grid 1e-10 can represent)
    led = _registered(tmp_path, capsys, "sem4-tiny")
    _refused(["discover", "--data", str(data), "--schema", str(schema), "--dataset-id",
              "sem4-tiny", "--algorithm", "private-ci-pc", "--epsilon", epsilon,
              "--groups", "0", "--noise-seed", "1", "--quiet", "--ledger", str(led)],
             led, InvalidParameterError, "too small", capsys)


@pytest.mark.parametrize(("algorithm", "budget"), [
    ("curate", ["--epsilon", "1e-200"]), ("curate", ["--epsilon", "5e-324"]),
    ("curate", ["--epsilon", "1e-13", "--delta", "1e-12"]),  # rho 9e-29: order 0 too small
    ("em-pc", ["--epsilon", "5e-324"])])
def test_curate_and_em_pc_budget_below_their_samplers_reserves_nothing(
        algorithm: str, budget: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """CURATE used to reserve such a run and fail after its selection (an ``error`` run),
    or, when its zCDP budget rounded to 0, return the complete graph; EM-PC failed after
    its first release when a level's share underflowed."""
    led = _registered(tmp_path, capsys, "asia-tiny")
    argv = ["discover", "--dataset", "asia", "--rows", "2000", "--algorithm", algorithm,
            "--noise-seed", "1", "--quiet", "--ledger", str(led), "--dataset-id",
            "asia-tiny", *budget]
    _refused(argv, led, InvalidParameterError, "too small for", capsys)


def test_curate_order_too_small_for_the_sampler_stops_like_an_exhausted_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An order whose planned per-test epsilon the Laplace sampler cannot draw ends the
    run with the graph so far and a budget-limited note (before: an ``error`` run after
    the earlier orders' releases)."""
    from dpcg.datasets import load_network
    from dpcg.private import curate, planning
    from dpcg.private.planning import CuratePlan

    real = planning.curate_plan

    def starved(**kw: object) -> CuratePlan:
        plan = real(**kw)  # type: ignore[arg-type]
        if plan.first_order == 0:
            return plan
        return CuratePlan(plan.first_order, tuple(e * 1e-16 for e in plan.epsilons),
                          plan.tests_bound)

    monkeypatch.setattr(curate, "curate_plan", starved)
    data = load_network("asia").sample(2000, seed=3)
    res = private_run(data, "curate", epsilon=2.0, delta=1e-6, seed=4)
    assert res.budget_exhausted
    assert res.pc.levels_completed == 1
    message = res.message or ""
    assert "order 1's per-test epsilon is too small for the Laplace sampler" in message
    assert "budget-limited" in message
    assert {len(t.S) for t in res.pc.tests} == {0}


TINY_BUDGETS = [(1e-13, 1e-6), (1e-13, 4e-11), (1e-13, 1e-12), (1e-30, 1e-9),
                (1e-200, 1e-6), (5e-324, 1e-6), (1e-11, 1e-6), (1e-9, 1e-6), (1e-6, 1e-6),
                (1e-3, 1e-6)]


def _refused_or_clean(data: object, algorithm: str, budgets: list[tuple[float, float]],
                      lifetime_delta: float, tmp_path: Path) -> None:
    """Run ``algorithm`` at each budget: it is either refused before the ledger file is
    even created (a project error) or it ends ``completed`` / ``budget-exhausted``, never
    ``error``, with a ledger that verifies; the grid must reach both outcomes."""
    from accounting.costs import Budget
    from accounting.ledger import Ledger

    outcomes = set()
    for i, (eps, delta) in enumerate(budgets):
        led = tmp_path / f"l{i}.sqlite"
        try:
            private_run(data, algorithm, epsilon=eps, delta=delta, seed=i, ledger=led,
                        dataset_id="tiny", lifetime=Budget(10.0, lifetime_delta))
        except (DpcgError, AccountingError):
            outcomes.add("refused")
            assert not led.exists()  # refused before the ledger file is even created
            continue
        with Ledger.open(led) as ledger:
            report = ledger.verify()
        assert report.ok, report.problems
        statuses = [run.status for run in report.runs]
        assert statuses in (["completed"], ["budget-exhausted"]), (eps, delta, statuses)
        outcomes.add(statuses[0])
    assert "refused" in outcomes  # the grid reaches below every sampler
    assert outcomes - {"refused"}  # and some of it runs


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc", "svt-pc", "curate", "em-pc"])
def test_a_tiny_budget_is_refused_before_the_ledger_or_the_run_ends_cleanly(
        algorithm: str, tmp_path: Path) -> None:
    """The invariant the scans of 2026-12-02 checked (CURATE and EM-PC broke it): for any
    valid budget, however small, a run is either refused before anything is written
    (a project error) or it ends ``completed`` / ``budget-exhausted``, never ``error``,
    and its ledger verifies."""
    from dpcg.datasets import load_network

    data = load_network("asia").sample(500, seed=5)
    _refused_or_clean(data, algorithm, TINY_BUDGETS, 1e-3, tmp_path)


def test_private_ci_pc_tiny_budgets_are_refused_or_end_cleanly(tmp_path: Path) -> None:
    """The same invariant for the continuous algorithm (PrivGCM broke it at 1e-10)."""
    from dpcg.data import Dataset, Schema

    data_csv, schema = continuous_table(tmp_path / "shared")
    data = Dataset.from_csv(data_csv, Schema.from_json(schema))
    budgets = [(eps, 0.0) for eps in (1e-13, 1e-11, 1e-10, 3e-10, 1e-9, 1e-6, 1.0)]
    _refused_or_clean(data, "private-ci-pc", budgets, 0.0, tmp_path)
