"""``dpcg discover --algorithm <private> ...`` end to end (result.json + ledger)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.costs import rho_for_budget
from dpcg.cli import main


@pytest.mark.parametrize("algorithm", ["laplace-pc", "priv-pc", "svt-pc", "curate", "em-pc"])
def test_discover_private_writes_guarantee_and_ledger(tmp_path: Path, algorithm: str) -> None:
    out = tmp_path / "result.json"
    ledger = tmp_path / "runs.db"
    code = main(["discover", "--dataset", "cancer", "--rows", "3000", "--algorithm", algorithm,
                 "--test", "kendall-z", "--epsilon", "2", "--delta", "1e-6",
                 "--ledger", str(ledger), "--dataset-id", "cancer-3k", "--out", str(out),
                 "--quiet"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["algorithm"] == algorithm
    assert doc["guarantee"]["epsilon"] == 2.0
    assert doc["guarantee"]["delta"] == 1e-6
    assert doc["guarantee"]["relation"] == "replace-one"
    assert doc["guarantee"]["rule"] in ("basic", "zcdp")
    assert doc["ledger"]["path"] == str(ledger)
    assert isinstance(doc["budget_exhausted"], bool)
    assert "skeleton_f1" in doc["metrics"]
    from accounting.ledger import Ledger

    led = Ledger.open(ledger)
    assert led.verify().ok
    run = led.run(doc["ledger"]["run_id"])
    assert run.budget_epsilon == Fraction(2.0)
    # what the run's rule guarantees; under zcdp the sum of the pure epsilons (recorded
    # too) is not bounded by the budget's epsilon, its rho is (no noise seed: any draw)
    if run.rule == "basic":
        assert run.spent_epsilon is not None
        assert run.spent_epsilon <= Fraction(2.0)
        assert run.spent_delta <= run.budget_delta
    else:
        assert run.rule == "zcdp"
        assert run.spent_rho is not None
        assert run.spent_rho <= rho_for_budget(run.budget_epsilon, run.budget_delta)


def test_discover_private_needs_epsilon(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    code = main(["discover", "--dataset", "cancer", "--rows", "500", "--algorithm",
                 "laplace-pc", "--test", "kendall-z", "--quiet"])
    assert code == 2
    assert "--epsilon" in capsys.readouterr().err


def test_user_data_without_dataset_id_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", "dpcg-ledger.sqlite")
    assert main(["datasets", "sample", "cancer", "--rows", "300", "--seed", "1", "--out",
                 "t.csv", "--schema-out", "s.json"]) == 0
    code = main(["discover", "--data", "t.csv", "--schema", "s.json", "--algorithm",
                 "laplace-pc", "--test", "kendall-z", "--epsilon", "1", "--quiet"])
    assert code == 2
    assert "--dataset-id" in capsys.readouterr().err
    assert not (tmp_path / "dpcg-ledger.sqlite").exists()


def test_private_runs_are_recorded_by_default(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """No --ledger: the run goes to the per-user default ledger ($DPCG_LEDGER here) under
    the bundled sample's
    declared id; the lifetime budget (default: the first run's budget) then refuses a
    second run without writing anything."""
    from accounting.ledger import Ledger

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", "dpcg-ledger.sqlite")
    args = ["discover", "--dataset", "cancer", "--rows", "500", "--algorithm", "laplace-pc",
            "--test", "kendall-z", "--epsilon", "1", "--quiet", "--out", "r.json"]
    assert main(args) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["ledger"]["path"] == "dpcg-ledger.sqlite"
    assert doc["ledger"]["dataset_id"] == "bundled:cancer:rows=500:seed=0"
    led = Ledger.open(tmp_path / "dpcg-ledger.sqlite")
    assert led.verify().ok
    before = len(led.entries())
    led.close()
    capsys.readouterr()
    assert main(args) == 2
    assert "lifetime" in capsys.readouterr().err
    led = Ledger.open(tmp_path / "dpcg-ledger.sqlite")
    assert len(led.entries()) == before
    assert led.verify().ok
    led.close()


def test_lifetime_budget_for_a_new_dataset_id(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["discover", "--dataset", "cancer", "--rows", "500", "--algorithm", "laplace-pc",
            "--test", "kendall-z", "--epsilon", "1", "--lifetime-epsilon", "2",
            "--lifetime-delta", "2e-6", "--quiet"]
    assert main(args) == 0
    assert main(args) == 0
    assert main(args) == 2


def test_no_ledger_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCG_LEDGER", "dpcg-ledger.sqlite")
    assert main(["discover", "--dataset", "cancer", "--rows", "500", "--algorithm",
                 "laplace-pc", "--test", "kendall-z", "--epsilon", "1", "--no-ledger",
                 "--quiet", "--out", "r.json"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["ledger"] is None
    assert not (tmp_path / "dpcg-ledger.sqlite").exists()


def test_nonprivate_pc_with_the_same_test(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["discover", "--dataset", "cancer", "--rows", "2000", "--algorithm", "pc",
                 "--test", "kendall-z", "--out", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["test"] == "kendall-z"


def test_private_algorithms_default_to_kendall_split(tmp_path: Path) -> None:
    """Without --test a private algorithm releases its own default score (kendall-split),
    not the engine's g2 (which would map to the high-sensitivity cmi); pc keeps g2."""
    out = tmp_path / "r.json"
    assert main(["discover", "--dataset", "survey", "--rows", "2000", "--algorithm",
                 "laplace-pc", "--epsilon", "1", "--no-ledger", "--out", str(out),
                 "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["test"] == "kendall-split"
    assert doc["private_test"] == "kendall-split"
    assert main(["discover", "--dataset", "survey", "--rows", "2000", "--algorithm", "pc",
                 "--out", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["test"] == "g2"
    # an explicit --test still wins
    assert main(["discover", "--dataset", "survey", "--rows", "2000", "--algorithm",
                 "laplace-pc", "--test", "kendall-z", "--epsilon", "1", "--no-ledger",
                 "--out", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["test"] == "kendall-z"


def test_private_progress_line_only_on_a_terminal(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A private run never draws its progress line into a redirected stderr (the redraws
    would log its pace per level: a timing side channel); a non-private run does."""
    import dpcg.cli.discover as discover_cli

    made: list[bool] = []

    class Recording:
        def __init__(self, *args: object, show_time: bool = True, **kwargs: object) -> None:
            made.append(show_time)

        def __call__(self, level: int, tests: int) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(discover_cli, "Progress", Recording)
    base = ["discover", "--dataset", "asia", "--rows", "500", "--out", str(tmp_path / "r.json")]
    assert main([*base, "--algorithm", "laplace-pc", "--epsilon", "1", "--no-ledger"]) == 0
    assert made == []  # stderr is captured, not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*base, "--algorithm", "laplace-pc", "--epsilon", "1", "--no-ledger"]) == 0
    assert made == [False]  # on a terminal, without the elapsed time
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert main(base) == 0
    assert made == [False, True]  # non-private: drawn, with its time
