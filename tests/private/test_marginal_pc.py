"""Marginal-PC (dpcg.private.marginal_pc): tests share releases, every release is a
charged Gaussian table, and bad input is refused before anything is charged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from accounting.relations import Relation
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Ordinal, Schema
from dpcg.errors import AlgorithmError
from dpcg.private.marginal_pc import MarginalPCParams
from dpcg.private.run import discover_private
from tests.hardening.helpers import cli, row_counts


def _hub(n: int = 20_000, seed: int = 0) -> Dataset:
    """A hub ``h`` with three children: every pair is dependent given the empty set, and
    the children are independent given ``h`` (level 1 asks all of one triple's tests)."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 3, n)
    kids = [np.where(rng.random(n) < 0.7, h, rng.integers(0, 3, n)) for _ in range(3)]
    arr = np.c_[(h, *kids)]
    schema = Schema([Ordinal(name, ("0", "1", "2")) for name in ("h", "a", "b", "c")])
    return Dataset.from_numpy(arr, schema, encoded=True)


def test_a_run_shares_its_tables_and_charges_each_one() -> None:
    res = discover_private(_hub(), "marginal-pc", epsilon=5.0, delta=1e-6, noise_seed=3)
    skeleton = {frozenset(e) for e in res.cpdag.skeleton()}
    assert skeleton == {frozenset(("h", k)) for k in "abc"}
    plan = res.plan
    assert set(res.mechanisms) == {"gaussian"}
    assert res.mechanisms["gaussian"] == plan["used_releases"]
    level1 = plan["used_levels"][1]
    # 4 triples {h, x, y} serve the 6 pairs' level-1 tests (each table up to 3)
    assert 0 < level1["tables"] < level1["tests"]
    assert plan["used_tests"] > plan["used_releases"]
    assert plan["used_tests_per_release"] == pytest.approx(
        plan["used_tests"] / plan["used_releases"])
    assert res.spent["exact"]["rho"] is not None
    assert float(plan["used_unspent"]["rho"]) >= 0.0
    assert res.guarantee["rule"] == "zcdp"


def test_each_level_is_one_joint_release_charged_at_sqrt_2t(tmp_path: Path) -> None:
    """One Gaussian mechanism per level over all its tables: the ledger holds one entry per
    level that released tables, with L2 sensitivity joint_table_l2(T) (>= sqrt(2 T)) and
    sigma^2 = 1 / rho_table (the per-table noise of T separate releases at rho / T)."""
    from fractions import Fraction

    from accounting.ledger import Ledger
    from dpcg.private.ledger import LedgerTarget
    from dpcg.stats.marginals import joint_table_l2

    path = tmp_path / "runs.db"
    res = discover_private(_hub(), "marginal-pc", epsilon=5.0, delta=1e-6, noise_seed=3,
                           ledger=LedgerTarget(path, "hub-20k"))
    led = Ledger.open(path)
    assert led.verify().ok
    assert res.ledger is not None
    entries = [e for e in led.entries()
               if e.get("run_id") == res.ledger["run_id"] and e["kind"] == "mechanism"]
    levels = [lv for lv in res.plan["used_levels"] if lv.get("tables")]
    assert len(entries) == len(levels) == res.plan["used_releases"] >= 2
    assert res.plan["used_tables"] == sum(lv["tables"] for lv in levels)
    for entry, lv in zip(entries, levels, strict=True):
        assert entry["mechanism"] == "gaussian"
        assert f"{lv['tables']} tables" in entry["purpose"]
        assert entry["sensitivity"] == joint_table_l2(lv["tables"])
        assert Fraction(entry["sensitivity"]) ** 2 >= 2 * lv["tables"]
        # sigma rounded up to a few significant bits: never below, within 1 %
        assert 1.0 / lv["table_rho"] <= lv["sigma"] ** 2 <= 1.01 / lv["table_rho"]
    assert res.plan["used_tests"] > res.plan["used_tables"] > res.plan["used_releases"]


def test_same_seed_same_graph_and_level0_tables_are_public_in_number() -> None:
    data = _hub(seed=1)
    a = discover_private(data, "marginal-pc", epsilon=1.0, noise_seed=5)
    b = discover_private(data, "marginal-pc", epsilon=1.0, noise_seed=5)
    assert a.cpdag.to_json() == b.cpdag.to_json()
    assert a.plan["level0_tables"] == 6 == a.plan["used_levels"][0]["tables"]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"delta": 0.0}, "delta"),
    ({"epsilon": 1e-200}, "too small"),
    ({"test": "kendall-split"}, "--test"),
    ({"params": MarginalPCParams(max_cells=4)}, "max_cells"),
])
def test_bad_runs_are_refused_before_anything_is_charged(kwargs: dict[str, object],
                                                         fragment: str) -> None:
    args: dict[str, object] = {"epsilon": 1.0, "noise_seed": 1, **kwargs}
    with pytest.raises(AlgorithmError, match=fragment):
        discover_private(_hub(2_000), "marginal-pc", **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("field", "value"), [
    ("sets_per_pair", 0), ("sets_per_pair", True), ("max_cells", 2), ("draws", 5),
    ("max_noise", 0.0), ("max_noise", float("nan")), ("level0_share", 1.0),
    ("level0_share", "half")])
def test_bad_params_are_algorithm_errors(field: str, value: object) -> None:
    with pytest.raises(AlgorithmError, match=field):
        MarginalPCParams(**{field: value})  # type: ignore[arg-type]


def test_add_remove_is_refused() -> None:
    from dpcg.private.contract import RunSettings
    from dpcg.private.marginal_pc import ALGORITHM, make_plan

    settings = RunSettings(epsilon=1.0, delta=1e-6, test="g2",
                           relation=Relation.ADD_REMOVE)
    source = ALGORITHM.source(_hub(500), RunSettings(1.0, 1e-6, "g2"), _no_options())
    with pytest.raises(AlgorithmError, match="replace-one"):
        make_plan(MarginalPCParams(), settings, source)


def _no_options() -> object:
    from dpcg.citests.registry import NoOptions

    return NoOptions()


@pytest.mark.parametrize("extra", [
    ["--delta", "0"], ["--epsilon", "1e-200"], ["--sets-per-pair", "0"],
    # the level-0 selection's options (tests/private/test_marginal_pc_select.py)
    ["--level0", "bogus"], ["--select-by", "edges"], ["--kept-tables", "2"],
    ["--level0", "select", "--select-share", "1.5"],
    ["--level0", "select", "--select-share", "0.6", "--level0-share", "0.6"]])
def test_cli_refusals_leave_the_ledger_intact(extra: list[str], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "l.sqlite"
    assert cli(["ledger", "init", str(led), "--dataset-id", "asia-m", "--epsilon", "10",
                "--delta", "1e-5"], capsys).code == 0
    before = row_counts(led)
    shown = cli(["ledger", "show", str(led)], capsys).out
    got = cli(["discover", "--dataset", "asia", "--rows", "2000", "--algorithm",
               "marginal-pc", "--epsilon", "0.5", "--noise-seed", "1", "--quiet",
               "--ledger", str(led), "--dataset-id", "asia-m", *extra], capsys)
    assert got.code == 2, got.err
    assert row_counts(led) == before
    assert cli(["ledger", "show", str(led)], capsys).out == shown
    assert cli(["ledger", "verify", str(led)], capsys).code == 0
