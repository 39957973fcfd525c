"""PC-stable with PrivGCM / PrivCRT: Python API and `dpcg discover` registration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpcg.citests.continuous_pc import build_private_test
from dpcg.citests.crt import GaussianModelX
from dpcg.citests.registry import get_test
from dpcg.cli import main
from dpcg.datasets.sem import random_sem
from dpcg.errors import DpcgError
from dpcg.private.registry import get_algorithm
from tests.engine_room import private_run


def test_registered() -> None:
    assert get_algorithm("private-ci-pc").default_delta == 0.0
    for name in ("privgcm", "privcrt"):
        spec = get_test(name)
        assert spec.private
        assert spec.data == "continuous"
    assert not get_test("gcm").private


def test_api_privgcm_spends_at_most_budget() -> None:
    sem = random_sem(4, seed=2)
    ds = sem.sample(300, 0)
    res = private_run(ds, "private-ci-pc", test="privgcm", epsilon=5.0, plan_size=10, seed=1)
    assert res.guarantee["epsilon"] == 5.0
    assert res.spent["epsilon"] <= 5.0
    assert res.plan["test_epsilon"] == pytest.approx(0.5)
    assert res.plan["releases"] == res.pc.n_tests
    assert res.pc.n_tests >= 1


def test_api_privcrt_with_public_gaussian_law() -> None:
    sem = random_sem(4, seed=5, expected_degree=2)
    ds = sem.sample(1500, 0)
    mx = GaussianModelX.from_arrays(np.zeros(4), sem.covariance())
    res = private_run(ds, "private-ci-pc", test="privcrt", epsilon=40.0, test_epsilon=4.0, seed=3,
                      model=mx, residual_bound=0.3)
    assert res.plan["plan_size"] == 10
    assert res.spent["epsilon"] <= 40.0
    assert res.plan["m"] == 19


def test_api_bad_input_spends_nothing() -> None:
    ds = random_sem(3, seed=1).sample(100, 0)
    with pytest.raises(DpcgError):
        private_run(ds, "private-ci-pc", test="privcrt", epsilon=1.0)  # no model-X law
    with pytest.raises(DpcgError):
        private_run(ds, "private-ci-pc", test="privgcm", epsilon=1.0, lam=1e-6)
    with pytest.raises(DpcgError):
        private_run(ds, "private-ci-pc", test="privgcm", epsilon=-1.0)
    with pytest.raises(DpcgError):
        private_run(ds, "private-ci-pc", test="kendall", epsilon=1.0)
    with pytest.raises(DpcgError, match="crt_resamples"):  # a privcrt option on privgcm
        private_run(ds, "private-ci-pc", test="privgcm", epsilon=1.0, crt_resamples=5)
    with pytest.raises(DpcgError):
        build_private_test(ds, "privgcm", None, 1.0, bandwidth="median")  # type: ignore[arg-type]


def test_cli_discover_privgcm(tmp_path: Path) -> None:
    sem = random_sem(4, seed=7)
    ds = sem.sample(200, 0)
    data, schema, out = tmp_path / "d.csv", tmp_path / "s.json", tmp_path / "o.json"
    ds.to_csv(data)
    schema.write_text(ds.schema.to_json())
    code = main(["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
                 "private-ci-pc", "--test", "privgcm", "--epsilon", "3", "--plan-size", "6",
                 "--noise-seed", "2", "--no-ledger", "--quiet", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["privacy"] == doc["guarantee"]
    assert doc["privacy"]["epsilon"] == 3.0
    assert doc["privacy"]["delta"] == 0.0
    assert doc["spent"]["epsilon"] <= 3.0
    assert doc["ledger"] is None
    # --seed seeds a bundled sample only: with --data it is an error, not ignored
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
                 "private-ci-pc", "--epsilon", "3", "--seed", "2", "--no-ledger",
                 "--quiet"]) == 2
    # options of another algorithm or test are errors, not silently ignored
    for extra in (["--cutoff", "2"], ["--model-x", "law.json"], ["--threshold", "1"],
                  ["--delta", "1e-6"]):
        assert main(["discover", "--data", str(data), "--schema", str(schema),
                     "--algorithm", "private-ci-pc", "--epsilon", "3", "--no-ledger",
                     "--quiet", *extra]) == 2
    # a private test without --epsilon, and privcrt without --model-x, are refused
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
                 "private-ci-pc", "--test", "privgcm", "--quiet"]) == 2
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
                 "private-ci-pc", "--test", "privcrt", "--epsilon", "1", "--quiet"]) == 2


def test_cli_private_ci_pc_durable_ledger_lifetime_and_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """private-ci-pc follows the one ledger policy: durable ledger by default, refused
    past the dataset's lifetime (nothing released), and the ledger verifies."""
    from accounting.ledger import Ledger

    ds = random_sem(4, seed=7).sample(200, 0)
    data, schema = tmp_path / "d.csv", tmp_path / "s.json"
    ds.to_csv(data)
    schema.write_text(ds.schema.to_json())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", "dpcg-ledger.sqlite")  # the per-user default
    argv = ["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
            "private-ci-pc", "--epsilon", "2", "--plan-size", "4", "--noise-seed", "1",
            "--dataset-id", "sem4", "--lifetime-epsilon", "3", "--quiet", "--out", "r.json"]
    # --data without --dataset-id: the ledger needs the declared id
    assert main([a for a in argv if a not in ("--dataset-id", "sem4")]) == 2
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["ledger"]["path"] == "dpcg-ledger.sqlite"
    assert doc["ledger"]["dataset_id"] == "sem4"
    led = Ledger.open(tmp_path / "dpcg-ledger.sqlite")
    try:
        assert led.dataset("sem4").lifetime_epsilon == 3
        n = led.entry_count()
        assert led.run(doc["ledger"]["run_id"]).n_entries == doc["tests"]["count"] > 0
    finally:
        led.close()
    # 2 of the lifetime 3 are reserved: another run of 2 is refused, nothing recorded
    again = [a for a in argv if a not in ("--lifetime-epsilon", "3")]
    assert main(again) == 2
    led = Ledger.open(tmp_path / "dpcg-ledger.sqlite")
    try:
        assert led.entry_count() == n
        assert led.verify().ok
    finally:
        led.close()
    assert main(["ledger", "verify", "dpcg-ledger.sqlite"]) == 0
