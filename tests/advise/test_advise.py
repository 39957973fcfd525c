"""The budget advisor (dpcg.advise, ``dpcg advise``): public facts in, simulated F1 out;
no data read, nothing charged, deterministic under a seed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dpcg.advise import (
    BAND,
    FLOOR_NETWORKS,
    MIN_NETWORKS,
    advise,
    band,
    cardinality_range,
    default_networks,
    epsilon_for,
)
from dpcg.cli import main
from dpcg.datasets.prior_network import MAX_TABLE, prior_network
from dpcg.errors import AlgorithmError, DataValidationError

SMALL = dict(epsilons=(1.0, 5.0), algorithms=("laplace-pc",), networks=3, workers=1)


def test_advice_reports_quantile_bands_and_says_it_read_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    adv = advise([2, 3, 2, 2, 3, 2], 3_000, **SMALL)  # type: ignore[arg-type]
    assert "no data was read" in adv.note
    assert "no budget was charged" in adv.note
    assert adv.band == (0.05, 0.95)
    assert len(adv.rows_table) == 2
    for row in adv.rows_table:
        assert row.runs == 3
        assert 0.0 <= row.f1_low <= row.f1 <= row.f1_high <= 1.0
        assert 0.0 <= row.precision <= 1.0
        assert 0.0 <= row.recall <= 1.0
    assert len(adv.extra["draws"]) == 3
    assert set(adv.epsilon_for_target) == {"laplace-pc"}
    # charges nothing and writes nothing: no ledger or any other file appears
    assert os.listdir(tmp_path) == []


def test_advice_is_deterministic_under_its_seed_whatever_the_processes() -> None:
    one = advise([2, 3, 2, 4, 3, 2, 2], 2_000, **SMALL)  # type: ignore[arg-type]
    two = advise([2, 3, 2, 4, 3, 2, 2], 2_000,
                 **{**SMALL, "workers": 2})  # type: ignore[arg-type]
    assert one.rows_table == two.rows_table
    assert one.extra["draws"] == two.extra["draws"]
    other = advise([2, 3, 2, 4, 3, 2, 2], 2_000, **{**SMALL, "seed": 1})  # type: ignore[arg-type]
    assert other.extra["draws"] != one.extra["draws"]


def test_the_schema_is_the_only_input_about_the_network() -> None:
    """Two schemas with the same cardinalities (in any order) get the same advice: the
    advisor has no other channel to the network or its data."""
    a = advise([2, 3, 4, 2, 2], 2_000, **SMALL)  # type: ignore[arg-type]
    b = advise((4, 2, 2, 3, 2), 2_000, **SMALL)  # type: ignore[arg-type]
    assert a.rows_table == b.rows_table


def test_given_shape_and_density_are_used() -> None:
    adv = advise([2] * 8, 2_000, max_parents=1, shape="scale-free",
                 **SMALL)  # type: ignore[arg-type]
    assert {d["shape"] for d in adv.extra["draws"]} == {"scale-free"}
    assert {d["max_parents"] for d in adv.extra["draws"]} == {1}
    assert all(d["edges"] == 7 for d in adv.extra["draws"])  # a tree: 1 parent each


def test_prior_network_uses_the_schema_cardinalities_and_caps_tables() -> None:
    cards = [2, 3, 67, 67, 67, 5, 2, 4]
    for seed in range(6):
        net, draw = prior_network(cards, seed, max_parents=4)
        assert sorted(net.cardinalities) == sorted(cards)
        for v in net.nodes:
            assert net.cpts[v].size <= MAX_TABLE
        assert draw.tables in ("dirichlet", "log-linear")
        assert draw.strength > 0.0
    net1, _ = prior_network(cards, 3)
    net2, _ = prior_network(cards, 3)
    assert all(np.array_equal(net1.cpts[v], net2.cpts[v]) for v in net1.nodes)


def test_prior_network_refuses_bad_input() -> None:
    with pytest.raises(DataValidationError):
        prior_network([2], 0)
    with pytest.raises(DataValidationError):
        prior_network([2, 2], 0, shape="star")
    with pytest.raises(DataValidationError):
        prior_network([2, 2], 0, max_parents=0)


def test_default_networks_follows_the_public_sizes() -> None:
    assert default_networks([2] * 8, 10_000, 4) == 24
    assert 8 <= default_networks([4] * 37, 100_000, 4) < default_networks([2] * 37, 100_000, 4)
    assert default_networks([2] * 500, 1_000_000, 8) == 8


def test_epsilon_for_a_target_interpolates_in_log_epsilon() -> None:
    grid = [(1.0, 0.5), (4.0, 0.9)]
    assert epsilon_for(0.7, grid) == pytest.approx(2.0)
    assert epsilon_for(0.4, grid) == 1.0
    assert epsilon_for(0.95, grid) is None


@pytest.mark.parametrize(("args", "kwargs"), [
    (([2], 100), {}), (([2, 2], 1), {}), (([2, 2], 100), {"epsilons": (0.0,)}),
    (([2, 2], 100), {"epsilons": (float("nan"),)}), (([2, 2], 100), {"epsilons": ()}),
    (([2, 2], 100), {"max_parents": 0}), (([2, 2], 100), {"networks": 0}),
    (([2, 2], 100), {"target_f1": 1.5}), (([2, 0], 100), {}), (("ab", 100), {}),
    (([2, 2], 100), {"shape": "star"}), (([2, 2], 100), {"workers": 0}),
    (([2, 2], 100), {"seed": -1}), (([2, 2], 100), {"algorithms": ()}),
    (([2, True], 100), {}), (([2, 2], 100), {"seconds": 0.0}),
    (([2, 2], 100), {"seconds": float("inf")}), (([2, 2], 100), {"seconds": True})])
def test_bad_input_is_refused(args: tuple[list[int], int], kwargs: dict[str, object]) -> None:
    with pytest.raises(AlgorithmError):
        advise(*args, **kwargs)  # type: ignore[arg-type]


def test_cardinality_range() -> None:
    assert cardinality_range([1, 3, 5]) == (2, 5)


def test_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--like", "asia", "--rows", "2000", "--epsilon", "2",
                 "--networks", "2", "--workers", "1", "--algorithms", "laplace-pc",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 8
    assert doc["rows_table"][0]["algorithm"] == "laplace-pc"
    assert doc["band"] == [0.05, 0.95]
    assert "no data was read" in doc["note"]


def test_cli_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--like", "asia", "--rows", "2000", "--epsilon", "2",
                 "--networks", "2", "--workers", "1", "--algorithms", "laplace-pc",
                 "--shape", "uniform", "--max-parents", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("advice from public facts only")
    assert "laplace-pc" in out
    assert "quantiles" in out


@pytest.mark.parametrize("workers", [1, 2])
def test_a_time_budget_cuts_the_networks_to_a_reproducible_prefix(workers: int) -> None:
    """A budget too small for any network still simulates FLOOR_NETWORKS of them (the
    first ones, in order), and passing that count back reproduces the advice exactly."""
    kw = dict(epsilons=(1.0,), algorithms=("laplace-pc",), workers=workers)
    cut = advise([2, 3, 2, 2, 3], 2_000, seconds=1e-6, **kw)  # type: ignore[arg-type]
    assert cut.networks == FLOOR_NETWORKS
    assert cut.extra["seconds_budget"] == 1e-6
    assert len(cut.extra["network_cpu_seconds"]) == FLOOR_NETWORKS
    assert all(c > 0.0 for c in cut.extra["network_cpu_seconds"])
    same = advise([2, 3, 2, 2, 3], 2_000, networks=FLOOR_NETWORKS,
                  **kw)  # type: ignore[arg-type]
    assert same.extra["seconds_budget"] is None
    assert same.rows_table == cut.rows_table
    assert same.extra["draws"] == cut.extra["draws"]


def test_band_is_the_quantiles_from_enough_networks_and_wider_from_few() -> None:
    rng = np.random.default_rng(3)
    many = rng.uniform(0.4, 0.9, size=MIN_NETWORKS)
    assert band(many) == tuple(float(v) for v in np.quantile(many, BAND))
    few = many[:5]
    lo, hi = band(few)
    q_lo, q_hi = np.quantile(few, BAND)
    assert lo < q_lo
    assert hi > q_hi
    assert lo >= 0.0
    assert hi <= 1.0
    # the prediction interval: mean +- t(0.95, 4) * s * sqrt(1 + 1/5), t = 2.1318
    half = 2.131847 * float(np.std(few, ddof=1)) * np.sqrt(1.2)
    assert lo == pytest.approx(max(0.0, few.mean() - half), abs=1e-5)
    assert hi == pytest.approx(min(1.0, few.mean() + half), abs=1e-5)
    assert band(np.array([1.0, 1.0, 1.0])) == (1.0, 1.0)


def test_the_running_workers_cpu_is_read_where_proc_exists() -> None:
    from dpcg.advise import _children_cpu

    cpu = _children_cpu()
    if os.path.isdir("/proc/self"):
        assert cpu is not None
        assert cpu >= 0.0


def test_cli_reports_the_networks_a_time_budget_allowed(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--like", "asia", "--rows", "2000", "--epsilon", "2",
                 "--seconds", "0.000001", "--workers", "1", "--algorithms",
                 "laplace-pc"]) == 0
    out = capsys.readouterr().out
    assert f"{FLOOR_NETWORKS} networks simulated" in out
    assert f"--networks {FLOOR_NETWORKS} reproduces this advice" in out
