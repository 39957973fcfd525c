"""A dataset lifetime kept as a zCDP filter over individual mechanisms (issue 55, item 3).

Under ``lifetime_rule="zcdp"`` the lifetime is ``rho_L = Budget(eps_L, delta_L).rho()``;
a run reserves rho (a ``zcdp`` run its ``Budget.rho()``, a pure ``basic`` run
``eps^2/2``), holds it while open and, once closed, is charged the exact sum of its
mechanisms' unit rho (``min(rho_m, eps_m^2/2)``). See
``docs/privacy/ledger-composition.md``, "zCDP lifetime". The 1,000 random sequences
are in ``test_refunds.py``; the PostgreSQL side in ``test_pg_zcdp_lifetime.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget, rho_for_budget, zcdp_to_epsilon
from accounting.errors import (
    BudgetExceededError,
    InvalidParameterError,
    LedgerCorruptError,
    LifetimeRuleError,
)
from accounting.ledger import Ledger, verify_certificate
from accounting.ledger._admission import row_to_record
from accounting.ledger._format import STORED_FIELDS, canonical_json, entry_hash
from accounting.ledger._verify import reservation_rho
from accounting.mechanisms import Exponential, SmoothSensitivityMedian

from .attacker import rechain
from .conftest import draft, gaussian_draft, laplace_draft, populate, state

DATASET = "d"
#: the exact values of the floats the tests pass
D6 = Fraction(1e-6)
D5 = Fraction(1e-5)


def _rho(led: Ledger) -> Fraction:
    """The dataset's charge in rho, re-derived by the verifier (which must pass)."""
    report = led.verify()
    assert report.ok, report.problems
    (ds,) = report.datasets
    assert ds.lifetime_rule == "zcdp"
    return ds.charged_rho


def test_registration_states_the_rule_and_its_rho(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-5), lifetime_rule="zcdp")
        info = led.dataset(DATASET)
        assert info.lifetime_rule == "zcdp"
        assert info.lifetime_rho == Budget(2.0, 1e-5).rho() == rho_for_budget(Fraction(2), D5)
        assert info.charged_rho == 0
        assert info.remaining_rho == info.lifetime_rho
        (entry,) = led.entries()
        assert entry["data"] == {
            "lifetime": {"epsilon": "2", "delta": str(D5)}, "description": "",
            "lifetime_rule": "zcdp", "lifetime_rho": str(info.lifetime_rho)}
        assert _rho(led) == 0


def test_a_basic_lifetime_keeps_the_format_of_every_earlier_ledger(tmp_path: Path) -> None:
    """The default rule writes exactly the entries it always did (no new keys), and a
    ledger written that way verifies and admits as before."""
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset("survey-2024", Budget(2.0, 1e-6))
        populate(led)
        entries = led.entries()
        assert set(entries[0]["data"]) == {"lifetime", "description"}
        assert all(set(e["data"]) == {"budget", "rule", "description"}
                   for e in entries if e["kind"] == "run-open")
        report = led.verify()
        assert report.ok, report.problems
        (ds,) = report.datasets
        assert ds.lifetime_rule == "basic"
        assert ds.lifetime_rho is None
        assert "lifetime_rule" not in ds.to_dict()
        assert "rho" not in ds.to_dict()
        assert all("lifetime_units" not in r.to_dict() for r in report.runs)
        assert led.dataset("survey-2024").remaining_rho is None


def test_a_zcdp_run_stopped_early_returns_exactly_its_unspent_rho(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-5), lifetime_rule="zcdp")
        reserved = Budget(1.0, 1e-6).rho()
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        g = gaussian_draft(8.0)
        run.record(g)
        run.record(laplace_draft(0.125))
        assert _rho(led) == reserved  # open: the reservation holds
        run.close("budget-exhausted")
        spent = Fraction(1, 128) + Fraction(1, 128)  # 1/(2*8^2) + 0.125^2/2
        assert g.cost.rho == Fraction(1, 128)
        assert _rho(led) == spent  # exactly the unspent reservation came back
        info = led.dataset(DATASET)
        assert info.charged_rho == spent
        assert info.lifetime_rho is not None
        assert info.remaining_rho == info.lifetime_rho - spent
        # the (eps, delta) shown is the conversion of the charged rho at the lifetime delta
        assert (info.charged_epsilon, info.charged_delta) == (
            zcdp_to_epsilon(spent, D5), D5)
        assert (led.verify().datasets[0].charged_epsilon, info.charged_delta) == (
            zcdp_to_epsilon(spent, D5), D5)


def test_a_basic_run_is_charged_its_realized_sum_of_eps_squared_over_two(
        tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(8.0, 1e-5), lifetime_rule="zcdp")
        run = led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
        assert _rho(led) == Fraction(1, 2)  # eps^2/2 held while open
        run.record(laplace_draft(0.25))
        run.record(laplace_draft(0.5))
        run.record(draft(Exponential(sensitivity=1.0, epsilon=0.125), "pick"))
        run.close()
        # Laplace: eps^2/2; the exponential mechanism its own (smaller) rho eps^2/8
        assert _rho(led) == Fraction(1, 32) + Fraction(1, 8) + Fraction(1, 512)
        # a run that admitted nothing is charged nothing; a killed run its reservation
        led.open_run(DATASET, Budget(0.5), "basic", seed_explicit=False).close()
        killed = led.open_run(DATASET, Budget(0.5), "basic", seed_explicit=False)
        killed.record(laplace_draft(0.125))
        assert _rho(led) == Fraction(1, 32) + Fraction(1, 8) + Fraction(1, 512) + Fraction(1, 8)


def test_admission_is_on_rho_exactly(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(1.0, 1e-6), lifetime_rule="zcdp")
        rho_l = led.dataset(DATASET).lifetime_rho
        assert rho_l is not None
        # a zcdp run of the lifetime's own budget fits exactly; one more of anything not
        whole = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        assert _rho(led) == rho_l
        before = state(tmp_path / "l.db")
        with pytest.raises(BudgetExceededError, match="zcdp lifetime"):
            led.open_run(DATASET, Budget(0.01), "basic", seed_explicit=False)
        assert state(tmp_path / "l.db") == before
        whole.record(gaussian_draft(16.0))
        whole.close()
        left = rho_l - Fraction(1, 512)
        assert led.dataset(DATASET).remaining_rho == left
        # a basic run whose eps^2/2 is the remaining rho or less fits; a larger one not
        with pytest.raises(BudgetExceededError):
            led.open_run(DATASET, Budget(0.4), "basic", seed_explicit=False)  # rho .08
        with pytest.raises(BudgetExceededError):
            led.open_run(DATASET, Budget(0.25), "basic", seed_explicit=False)  # rho 1/32
        led.open_run(DATASET, Budget(0.2), "basic", seed_explicit=False)  # rho .02
        assert led.verify().ok


def test_what_a_zcdp_lifetime_cannot_count_is_refused_and_nothing_is_written(
        tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(path, create=True) as led:
        with pytest.raises(InvalidParameterError, match="delta > 0"):
            led.register_dataset(DATASET, Budget(1.0), lifetime_rule="zcdp")
        with pytest.raises(InvalidParameterError, match="lifetime_rule"):
            led.register_dataset(DATASET, Budget(1.0, 1e-6), lifetime_rule="rdp")
        assert led.entry_count() == 0
        led.register_dataset(DATASET, Budget(2.0, 1e-5), lifetime_rule="zcdp")
        before = state(path)
        # a basic run with delta > 0 admits (eps, delta) mechanisms: no zCDP unit
        with pytest.raises(LifetimeRuleError, match="delta = 0"):
            led.open_run(DATASET, Budget(0.5, 1e-6), "basic", seed_explicit=False)
        with pytest.raises(LifetimeRuleError):
            led.ensure_dataset(DATASET, Budget(2.0, 1e-5), for_run=Budget(0.5, 1e-6),
                               for_rule="basic")
        assert state(path) == before
        # a mechanism with delta > 0 that is not zCDP, in a zcdp run: refused, not written
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        before = state(path)
        median = SmoothSensitivityMedian(epsilon=0.1, delta=1e-8, lower=0.0, upper=1.0)
        with pytest.raises(LifetimeRuleError, match="not zCDP"):
            run.record(draft(median, "median"))
        with pytest.raises(LifetimeRuleError):
            run.record_many([laplace_draft(0.1), draft(median, "median")])
        assert state(path) == before
        run.record(laplace_draft(0.1))  # the run goes on
        run.close()
        assert _rho(led) == Fraction(0.1) ** 2 / 2  # the exact float 0.1, squared, halved


def test_pre_flight_of_a_new_or_known_zcdp_lifetime(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        # a new id: the run must fit the new lifetime's rho (nothing registered otherwise)
        with pytest.raises(BudgetExceededError, match="nothing was registered"):
            led.ensure_dataset(DATASET, Budget(1.0, 1e-6), for_run=Budget(2.0, 1e-6),
                               for_rule="zcdp", lifetime_rule="zcdp")
        assert led.entry_count() == 0
        info, created = led.ensure_dataset(DATASET, Budget(1.0, 1e-6), for_run=Budget(1.0, 1e-6),
                                           for_rule="zcdp", lifetime_rule="zcdp")
        assert created
        assert info.lifetime_rule == "zcdp"
        # a known id keeps its rule whatever a later call asks
        info, created = led.ensure_dataset(DATASET, Budget(9.0), for_run=Budget(0.1))
        assert not created
        assert info.lifetime_rule == "zcdp"


def test_the_certificate_states_and_re_derives_the_rho(tmp_path: Path) -> None:
    path, cert = tmp_path / "l.db", tmp_path / "c.json"
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-5), lifetime_rule="zcdp")
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        run.record(gaussian_draft(8.0))
        run.close()
        led.export(cert)
    assert verify_certificate(cert).ok
    doc = json.loads(cert.read_text())
    (ds,) = doc["datasets"]
    assert ds["lifetime_rule"] == "zcdp"
    assert ds["rho"]["charged"] == "1/128"
    (run_doc,) = doc["runs"]
    assert run_doc["lifetime_units"]["charged_rho"] == "1/128"
    ds["rho"]["charged"] = "0"  # a stated charge that hides the run's spending
    cert.write_text(json.dumps(doc))
    report = verify_certificate(cert)
    assert not report.ok


# ---------------------------------------------------------------------------------
# Tampering: verify fails and the next reservation refuses
# ---------------------------------------------------------------------------------
def _zcdp_ledger(path: Path) -> None:
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(8.0, 1e-5), lifetime_rule="zcdp")
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        run.record(gaussian_draft(8.0))  # seq 3
        run.close()  # seq 4
        run = led.open_run(DATASET, Budget(0.5), "basic", seed_explicit=False)  # seq 5
        run.record(laplace_draft(0.25))  # seq 6
        run.close()  # seq 7
        assert led.verify().ok
    state(path)  # checkpoint


Edit = Callable[[dict[str, Any]], None]


def _edit(path: Path, seq: int, change: Edit, *, rechain_all: bool) -> None:
    """Edit entry ``seq``'s JSON columns: re-hash only that entry (the next entry no
    longer links to it), or re-chain everything after it as an attacker would."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        row = conn.execute(f"SELECT {', '.join(STORED_FIELDS)} FROM entries WHERE seq=?",
                           (seq,)).fetchone()
        record, problem = row_to_record(row)
        assert problem is None
        change(record)
        record["hash"] = entry_hash(record)
        conn.execute("UPDATE entries SET data=?, cost=?, hash=? WHERE seq=?",
                     (canonical_json(record["data"]),
                      None if record["cost"] is None else canonical_json(record["cost"]),
                      record["hash"], seq))
        if rechain_all:
            rechain(conn, seq)
    finally:
        conn.close()


def _drop_rule(r: dict[str, Any]) -> None:
    del r["data"]["lifetime_rule"], r["data"]["lifetime_rho"]


def _raise_rho(r: dict[str, Any]) -> None:
    r["data"]["lifetime_rho"] = str(Fraction(r["data"]["lifetime_rho"]) * 4)


def _rule_basic(r: dict[str, Any]) -> None:
    r["data"]["lifetime_rule"] = "basic"


def _lower_mechanism_rho(r: dict[str, Any]) -> None:
    r["cost"]["rho"] = "1/100000"


def _lower_run_rho(r: dict[str, Any]) -> None:
    r["data"]["rho"] = "1/1000000"


def _close_status(r: dict[str, Any]) -> None:
    r["data"]["status"] = "refunded"


TAMPERS: dict[str, tuple[int, Edit]] = {
    "registration-rule-dropped": (1, _drop_rule),
    "registration-rho-raised": (1, _raise_rho),
    "registration-rule-renamed": (1, _rule_basic),
    "mechanism-rho-lowered": (3, _lower_mechanism_rho),
    "run-open-rho-lowered": (2, _lower_run_rho),
    "close-status-edited": (4, _close_status),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_an_edit_without_rechaining_fails_verify_and_refuses(tmp_path: Path, name: str) -> None:
    path = tmp_path / "l.db"
    _zcdp_ledger(path)
    seq, change = TAMPERS[name]
    _edit(path, seq, change, rechain_all=False)
    before = state(path)
    with Ledger.open(path) as led:
        assert not led.verify().ok
        with pytest.raises(LedgerCorruptError, match="edited or damaged"):
            led.open_run(DATASET, Budget(0.01), "basic", seed_explicit=False)
        with pytest.raises(LedgerCorruptError, match="edited or damaged"):
            led.ensure_dataset(DATASET, Budget(8.0, 1e-5), for_run=Budget(0.01))
    assert state(path) == before


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_an_edit_rechained_to_the_head_fails_verify(tmp_path: Path, name: str) -> None:
    """A consistent re-chain: the verifier re-derives the lifetime's rho, every run's rho
    reservation and every mechanism's cost from its parameters, so each edit is found.
    (On a key-bound ledger the writer also refuses it: the head is not signed,
    ``test_a_rechained_edit_of_a_signed_zcdp_ledger_refuses_the_next_reservation``.)"""
    path = tmp_path / "l.db"
    _zcdp_ledger(path)
    seq, change = TAMPERS[name]
    _edit(path, seq, change, rechain_all=True)
    with Ledger.open(path) as led:
        report = led.verify()
        assert not report.ok, name
        # the writer's own fold refuses every edit it can see without the parameters
        if name != "mechanism-rho-lowered":
            before = state(path)
            with pytest.raises(LedgerCorruptError):
                led.open_run(DATASET, Budget(0.01), "basic", seed_explicit=False)
            assert state(path) == before


def test_a_rechained_edit_of_a_signed_zcdp_ledger_refuses_the_next_reservation(
        tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from accounting.ledger import generate_keypair

    key, _pub, _ = generate_keypair(tmp_path / "ops.key")
    path = tmp_path / "l.db"
    with Ledger.open(path, create=True, signing_key=key) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-5), lifetime_rule="zcdp")
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        run.record(gaussian_draft(8.0))
        run.close()
    state(path)
    _edit(path, 3, _lower_mechanism_rho, rechain_all=True)
    before = state(path)
    with Ledger.open(path, signing_key=key) as led:
        assert not led.verify().ok
        with pytest.raises(LedgerCorruptError):
            led.open_run(DATASET, Budget(0.01), "basic", seed_explicit=False)
    assert state(path) == before


# ---------------------------------------------------------------------------------
# dpcg discover --lifetime-rule zcdp
# ---------------------------------------------------------------------------------
def test_discover_registers_a_zcdp_lifetime_and_refunds_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpcg.cli import main

    path, out = tmp_path / "l.db", tmp_path / "r.json"
    argv = ["discover", "--dataset", "asia", "--rows", "500", "--algorithm", "laplace-pc",
            "--epsilon", "1", "--dataset-id", "asia-500", "--ledger", str(path), "--quiet"]
    assert main([*argv, "--lifetime-epsilon", "4", "--lifetime-delta", "1e-5",
                 "--lifetime-rule", "zcdp", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    remaining = doc["ledger"]["remaining_lifetime"]
    with Ledger.open(path) as led:
        info = led.dataset("asia-500")
        assert info.lifetime_rule == "zcdp"
        (run,) = led.runs("asia-500")
        (totals,) = led.verify().runs
        reserved = reservation_rho(run.rule, run.budget_epsilon, run.budget_delta)
        assert totals.reserved_rho == reserved
        # charged the realized units of its mechanisms, not its reservation
        assert info.charged_rho == totals.units
        assert 0 < info.charged_rho <= reserved
        assert remaining["lifetime_rule"] == "zcdp"
        assert remaining["rho"] == float(info.remaining_rho)  # type: ignore[arg-type]
        assert led.verify().ok
        n = led.entry_count()
    capsys.readouterr()
    # a registered id keeps its rule: asking for another one is refused, nothing written
    assert main([*argv, "--lifetime-rule", "basic"]) == 2
    assert "--lifetime-rule" in capsys.readouterr().err
    with Ledger.open(path) as led:
        assert led.entry_count() == n
    assert main(argv) == 0  # the same id, no rule given: its registered zcdp rule applies


# ---------------------------------------------------------------------------------
# Ledgers written before the zcdp lifetime verify and admit unchanged
# ---------------------------------------------------------------------------------
DATA = Path(__file__).parent / "data"


def test_a_ledger_written_before_the_zcdp_lifetime_verifies_and_admits_unchanged(
        tmp_path: Path) -> None:
    """``data/basic-v1.sqlite`` and its certificate were written by dpcg at d9e32ac
    (before this rule existed; ``data/README.md``): both verify, the totals stated in the
    certificate are exactly the ones re-derived now, and the ledger admits as before."""
    cert = DATA / "basic-v1.cert.json"
    report = verify_certificate(cert)
    assert report.ok, report.problems
    stated = json.loads(cert.read_text())
    copy = tmp_path / "l.sqlite"
    copy.write_bytes((DATA / "basic-v1.sqlite").read_bytes())
    with Ledger.open(copy) as led:
        report = led.verify()
        assert report.ok, report.problems
        assert [d.to_dict() for d in report.datasets] == stated["datasets"]
        assert [r.to_dict() for r in report.runs] == stated["runs"]
        assert report.head_hash == stated["head_hash"]
        info = led.dataset("survey-2024")
        assert info.lifetime_rule == "basic"
        # refunds as before: 1/4 + 1/4 (basic, stopped early) + 1/2 (zcdp, whole) + 0
        # (nothing released) + 1/2 (killed: its reservation)
        assert info.charged_epsilon == Fraction(3, 2)
        run = led.open_run("survey-2024", Budget(1.5), "basic", seed_explicit=False)
        run.record(laplace_draft(0.5))
        run.close()
        with pytest.raises(BudgetExceededError):
            led.open_run("survey-2024", Budget(1.01), "basic", seed_explicit=False)
        assert led.verify().ok
        assert all(set(e["data"]) == {"budget", "rule", "description"}
                   for e in led.entries() if e["kind"] == "run-open")


# ---------------------------------------------------------------------------------
# The custodian's policy records a zcdp lifetime rule
# ---------------------------------------------------------------------------------
def test_the_custodians_policy_records_and_checks_the_lifetime_rule(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from accounting.ledger import generate_keypair
    from accounting.ledger.custody import (
        GovernedDataset,
        PolicyViolationError,
        check_policy,
        governed,
        read_policy,
        write_policy,
    )

    key, _pub, _ = generate_keypair(tmp_path / "custodian.key")
    path = tmp_path / "l.db"
    with Ledger.open(path, create=True, signing_key=key) as led:
        led.register_dataset("z", Budget(4.0, 1e-5), lifetime_rule="zcdp")
        led.register_dataset("b", Budget(4.0, 1e-5))
        gz, gb = governed("z", led), governed("b", led)
    assert gz.lifetime_rule == "zcdp"
    assert gz.to_dict()["lifetime_rule"] == "zcdp"
    assert "lifetime_rule" not in gb.to_dict()  # a basic entry as every earlier policy
    policy = write_policy(tmp_path / "policy.json", key, [gz, gb])
    assert read_policy(tmp_path / "policy.json").datasets["z"].lifetime_rule == "zcdp"
    with Ledger.open(path, signing_key=key) as led:
        assert check_policy(dataset_id="z", ledger=path, no_ledger=False, opened=led,
                            policies=[policy]) == policy.datasets["z"]
        # a policy that governs the id with another rule refuses the ledger's registration
        other = GovernedDataset(**{**gz.__dict__, "lifetime_rule": "basic"})
        wrong = write_policy(tmp_path / "wrong.json", key, [other])
        with pytest.raises(PolicyViolationError, match="lifetime rule"):
            check_policy(dataset_id="z", ledger=path, no_ledger=False, opened=led,
                         policies=[wrong])


def test_the_api_takes_the_lifetime_rule_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    import dpcg
    from dpcg.errors import AlgorithmError
    from dpcg.pipeline.request import NetworkSpec

    path = tmp_path / "l.db"
    with pytest.raises(AlgorithmError, match="lifetime_rule"):
        dpcg.discover(NetworkSpec("asia", rows=500), algorithm="laplace-pc", epsilon=1.0,
                      ledger=str(path), dataset_id="a", lifetime_rule="rdp")
    assert not path.exists()  # refused before the ledger was opened
    res = dpcg.discover(NetworkSpec("asia", rows=500), algorithm="laplace-pc", epsilon=1.0,
                        ledger=str(path), dataset_id="a", lifetime_epsilon=4.0,
                        lifetime_delta=1e-5, lifetime_rule="zcdp")
    assert res.to_json()["ledger"]["remaining_lifetime"]["lifetime_rule"] == "zcdp"
    with Ledger.open(path) as led:
        assert led.dataset("a").lifetime_rule == "zcdp"
        assert led.verify().ok
