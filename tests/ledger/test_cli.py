"""``dpcg ledger``: in-process via dpcg.cli.main, plus one real subprocess."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from accounting.costs import Budget
from accounting.ledger import Ledger
from dpcg.cli import main

from .conftest import ROOT, laplace_draft, populate, state


def _init(path: Path, *extra: str) -> int:
    return main(["ledger", "init", str(path), "--dataset-id", "survey-2024",
                 "--epsilon", "2", *extra])


def test_init_show_verify_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.db"
    assert _init(path, "--delta", "1e-6", "--description", "test data") == 0
    out = capsys.readouterr().out
    assert "registered dataset 'survey-2024'" in out
    with Ledger.open(path) as led:
        info = led.dataset("survey-2024")
        assert info.lifetime == Budget(2.0, 1e-6)
        populate(led)
        head = led.head_hash()
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "dataset 'survey-2024' (replace-one) - test data" in out
    assert "reserved eps=1.5" in out
    # the closed basic run spent 0.75 of its 1 (refunded 0.25); the zcdp run used rho
    assert "charged eps=1.25" in out
    assert "remaining eps=0.75" in out
    assert "spent rho=0.00195312 (eps=" in out
    assert "spent eps=0.75 delta=0 charged eps=0.75" in out
    assert "budget-exhausted, SEEDED" in out
    assert main(["ledger", "show", str(path), "--json", "--dataset-id", "survey-2024"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["head_hash"] == head
    assert shown["datasets"][0]["reserved"]["epsilon"] == "3/2"
    assert shown["datasets"][0]["charged"]["epsilon"] == "5/4"
    zc = shown["datasets"][0]["runs"][1]["spent"]
    assert zc["rule"] == "zcdp"
    assert zc["rho"] == "1/512"
    assert 0 < zc["epsilon_float"] < 1  # converted at the run's delta, not a sum of epsilons
    assert zc["guarantee"] == {"epsilon": 0.5, "delta": 1e-07}
    assert len(shown["datasets"][0]["runs"]) == 2

    assert main(["ledger", "verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: ")
    assert head is not None
    assert head in out

    cert = tmp_path / "cert.json"
    assert main(["ledger", "export", str(path), "--out", str(cert)]) == 0
    assert head in capsys.readouterr().out
    assert main(["ledger", "verify", str(cert)]) == 0
    assert "OK: certificate" in capsys.readouterr().out
    assert main(["ledger", "verify", str(cert), "--head", head]) == 0
    assert main(["ledger", "verify", str(path), "--head", head]) == 0
    capsys.readouterr()
    assert main(["ledger", "verify", str(cert), "--head", "0" * 64]) == 1
    assert "FAILED" in capsys.readouterr().err
    assert main(["ledger", "verify", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_verify_failure_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.db"
    assert _init(path) == 0
    with Ledger.open(path) as led:
        run = led.open_run("survey-2024", Budget(1.0), "basic", seed_explicit=False)
        run.record(laplace_draft(0.5))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE entries SET purpose='edited' WHERE seq=3")
    conn.commit()
    conn.close()
    capsys.readouterr()
    assert main(["ledger", "verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "FAILED" in err
    assert "entry 3: stored hash does not match its contents" in err
    cert = tmp_path / "c.json"
    assert main(["ledger", "export", str(path), "--out", str(cert)]) == 2
    assert "does not verify" in capsys.readouterr().err
    assert not cert.exists()


@pytest.mark.parametrize(
    ("argv_tail", "message"),
    [
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "-1"], "epsilon"),
        (["--epsilon", "nan"], "epsilon"),
        (["--epsilon", "1", "--delta", "1"], "delta"),
        (["--epsilon", "1", "--delta", "-0.5"], "delta"),
    ],
)
def test_init_rejects_bad_budgets(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  argv_tail: list[str], message: str) -> None:
    path = tmp_path / "l.db"
    code = main(["ledger", "init", str(path), "--dataset-id", "d", *argv_tail])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("dpcg ledger: error:")
    assert message in err
    assert not path.exists()


def test_init_duplicate_and_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.db"
    assert _init(path) == 0
    before = state(path)
    assert _init(path) == 2
    assert "already registered" in capsys.readouterr().err
    assert main(["ledger", "show", str(path), "--dataset-id", "other"]) == 2
    assert "not registered" in capsys.readouterr().err
    assert state(path) == before
    # a second dataset in the same ledger is fine
    assert main(["ledger", "init", str(path), "--dataset-id", "other", "--epsilon", "1",
                 "--relation", "add-remove"]) == 0


def test_foreign_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    for action in (["verify", str(text)], ["show", str(text)],
                   ["export", str(text), "--out", str(tmp_path / "x.json")],
                   ["init", str(text), "--dataset-id", "d", "--epsilon", "1"]):
        assert main(["ledger", *action]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "not" in err
    assert text.read_text() == "hello\n"
    assert main(["ledger", "verify", str(tmp_path / "missing.db")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["ledger", "show", str(tmp_path / "missing.db")]) == 2
    assert not (tmp_path / "missing.db").exists()


def test_pinned_hashes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.db"
    assert _init(path, "--delta", "1e-6") == 0
    with Ledger.open(path) as led:
        populate(led)
        published = led.head_hash()
        assert published is not None
        led.open_run("survey-2024", Budget(0.25), "basic", seed_explicit=False)  # appended later
    capsys.readouterr()
    # appends keep an earlier head in the chain; only --head demands it to be the head
    assert main(["ledger", "verify", str(path), "--contains", published]) == 0
    assert "contains the pinned hash" in capsys.readouterr().out
    assert main(["ledger", "verify", str(path), "--head", published]) == 1
    cert = tmp_path / "c.json"
    assert main(["ledger", "export", str(path), "--out", str(cert)]) == 0
    assert main(["ledger", "verify", str(cert), "--contains", published]) == 0
    capsys.readouterr()
    assert main(["ledger", "verify", str(cert), "--contains", "ab" * 32]) == 1
    assert "pinned hash" in capsys.readouterr().err
    assert main(["ledger", "verify", str(cert), "--contains", "not-a-hash"]) == 2
    assert "not a SHA-256" in capsys.readouterr().err


def test_no_action_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger"]) == 2
    assert "init" in capsys.readouterr().err


def test_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "demo.db"
    for _ in range(3):  # lifetime 3, each demo run reserves 1
        assert main(["ledger", "demo", "--ledger", str(path)]) == 0
        out = capsys.readouterr().out
        assert "released number of smokers" in out
        assert "refused before the data is touched (data read: False)" in out
        assert "verified:" in out
    assert main(["ledger", "demo", "--ledger", str(path)]) == 2
    assert "lifetime epsilon budget" in capsys.readouterr().err
    with Ledger.open(path) as led:
        report = led.verify()
        assert report.ok, report.problems
        assert len(report.runs) == 3
        for run in report.runs:
            assert run.status == "budget-exhausted"
            assert run.entries == 3
            assert run.outputs == 3
            assert run.spent_epsilon == 1
        assert report.datasets[0].reserved_epsilon == 3
        led.export(tmp_path / "demo.json")
    assert main(["ledger", "verify", str(tmp_path / "demo.json")]) == 0


def test_subprocess_entry_point() -> None:
    """The README's first command (default temporary ledger), then verify via the script."""
    exe = ROOT / ".venv" / "bin" / "dpcg"
    demo = subprocess.run([str(exe), "ledger", "demo"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert demo.returncode == 0, demo.stderr
    assert "verified:" in demo.stdout
    demo_path = Path(demo.stdout.split()[1].rstrip(":"))
    assert demo_path.name == "demo-ledger.db"
    try:
        ok = subprocess.run([str(exe), "ledger", "verify", str(demo_path)],
                            capture_output=True, text=True, timeout=120, check=False)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.startswith("OK: ")
        head = demo.stdout.split("head hash ")[1].split()[0]
        assert head in ok.stdout
    finally:
        shutil.rmtree(demo_path.parent)
