"""A zcdp lifetime on the PostgreSQL ledger (a real server, ``pgcluster.Cluster``).

The database's ``reserve`` admits on rho (``sum of charges + the run's rho <= rho_L``,
exact numeric), ``charge`` refuses a mechanism that is no zCDP unit and keeps a run's
unit rho within its rho reservation, and ``dataset_info`` re-derives the charge in rho
from the chain rows; the Python verifier re-derives the same ``Fraction``s.
"""

from __future__ import annotations

import random
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from accounting.costs import Budget, rho_for_budget
from accounting.errors import BudgetExceededError, LifetimeRuleError
from accounting.ledger.postgres import PostgresLedger, _encode
from accounting.mechanisms import Exponential, SmoothSensitivityMedian

from .conftest import PgLedger, draft, gaussian_draft, laplace_draft

psycopg = pytest.importorskip("psycopg")

D5 = Fraction(1e-5)
D6 = Fraction(1e-6)


def _rho(led: PostgresLedger, dataset: str = "d") -> Fraction:
    """The database's charge in rho, checked against the verifier's re-derivation."""
    info = led.dataset(dataset)
    report = led.verify()
    assert report.ok, report.problems
    (totals,) = [d for d in report.datasets if d.dataset_id == dataset]
    assert info.lifetime_rule == totals.lifetime_rule == "zcdp"
    assert info.lifetime_rho == totals.lifetime_rho
    assert info.charged_rho == totals.charged_rho
    return info.charged_rho


def test_a_zcdp_run_stopped_early_returns_exactly_its_unspent_rho(pg: PgLedger) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("d", Budget(8.0, 1e-5), lifetime_rule="zcdp")
        assert led.dataset("d").lifetime_rho == rho_for_budget(Fraction(8), D5)
        run = led.open_run("d", Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        run.record(gaussian_draft(8.0))
        run.record(laplace_draft(0.125))
        assert _rho(led) == Budget(1.0, 1e-6).rho()  # open: the reservation holds
        run.close()
        assert _rho(led) == Fraction(1, 128) + Fraction(1, 128)
        # a basic run under a zcdp lifetime: its realized sum of eps^2/2 (the exponential
        # mechanism its own smaller rho, eps^2/8)
        basic = led.open_run("d", Budget(1.0), "basic", seed_explicit=False)
        basic.record_many([laplace_draft(0.25), laplace_draft(0.5)])
        basic.record(draft(Exponential(sensitivity=1.0, epsilon=0.125), "pick"))
        assert _rho(led) == Fraction(1, 64) + Fraction(1, 2)
        basic.close()
        assert _rho(led) == Fraction(1, 64) + Fraction(1, 32) + Fraction(1, 8) + Fraction(1, 512)
        led.open_run("d", Budget(0.5), "basic", seed_explicit=False).close()  # nothing
        assert _rho(led) == Fraction(1, 64) + Fraction(1, 32) + Fraction(1, 8) + Fraction(1, 512)


def test_refusals_write_nothing(pg: PgLedger) -> None:
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("d", Budget(1.0, 1e-6), lifetime_rule="zcdp")
        n = led.entry_count()
        with pytest.raises(LifetimeRuleError, match="delta = 0"):
            led.open_run("d", Budget(0.1, 1e-7), "basic", seed_explicit=False)
        with pytest.raises(BudgetExceededError, match="zcdp lifetime"):
            led.open_run("d", Budget(1.0), "basic", seed_explicit=False)  # rho 1/2
        assert led.entry_count() == n
        run = led.open_run("d", Budget(1.0, 1e-6), "zcdp", seed_explicit=False)  # all of it
        with pytest.raises(BudgetExceededError):
            led.open_run("d", Budget(0.01), "basic", seed_explicit=False)
        n = led.entry_count()
        median = SmoothSensitivityMedian(epsilon=0.1, delta=1e-8, lower=0.0, upper=1.0)
        with pytest.raises(LifetimeRuleError, match="not zCDP"):
            run.record(draft(median, "median"))
        assert led.entry_count() == n
        run.record(gaussian_draft(16.0))
        run.close()
        assert _rho(led) == Fraction(1, 512)


def _call(conn: Any, sql: str, *args: object) -> list[tuple[Any, ...]]:
    return list(conn.execute(sql, args).fetchall())


def test_direct_calls_cannot_bypass_the_zcdp_lifetime(pg: PgLedger) -> None:
    """The analyst calling the functions directly: the database itself enforces the
    lifetime filter on the rho in the chain."""
    led = PostgresLedger.open(pg.analyst)
    led.register_dataset("d", Budget(2.0, 1e-5), lifetime_rule="zcdp")
    run = led.open_run("d", Budget(0.25), "basic", seed_explicit=False)  # rho 1/32
    zrun = led.open_run("d", Budget(0.5, 1e-6), "zcdp", seed_explicit=False)
    n = led.entry_count()
    rho_l = led.dataset("d").lifetime_rho
    assert rho_l is not None

    def opening(eps: str, delta: str, rule: str, rho: str | None,
                run_id: str = "a" * 32) -> tuple[str, str]:
        data: dict[str, Any] = {"budget": {"epsilon": eps, "delta": delta}, "rule": rule,
                                "description": ""}
        if rho is not None:
            data["rho"] = rho
        return _encode({"kind": "run-open", "dataset_id": "d", "run_id": run_id,
                        "relation": "replace-one", "seed_explicit": False, "data": data})

    def mechanism(cost: dict[str, Any], run_id: str) -> tuple[str, str]:
        return _encode({"kind": "mechanism", "dataset_id": "d", "run_id": run_id,
                        "relation": "replace-one", "seed_explicit": False,
                        "mechanism": "laplace", "params": {"epsilon": 1.0, "sensitivity": 1.0},
                        "sensitivity": 1.0, "cost": cost, "data": {"extra": {}}})

    with psycopg.connect(pg.analyst, autocommit=True) as conn:
        cases = [
            # a run-open without its rho, or a basic run's rho that is not eps^2/2
            (opening("1/4", "0", "basic", None), "DPI01"),
            (opening("1/4", "0", "basic", "1/1000"), "DPI01"),
            # a basic run with delta > 0
            (opening("1/4", "1/1000000", "basic", "1/32"), "DPZ01"),
            # more rho than the lifetime has left (the open run holds 1/32)
            (opening("1", "1/100000", "zcdp", str(rho_l)), "DPB01"),
        ]
        for (head, mid), state in cases:
            with pytest.raises(psycopg.DatabaseError) as exc:
                _call(conn, "SELECT * FROM dpcg.reserve(%s, %s)", head, mid)
            assert exc.value.sqlstate == state, (head, mid)
        over = [
            # delta > 0: no zCDP unit (in a basic and in a zcdp run)
            (run.run_id, {"epsilon": "1/8", "delta": "1/100000000", "rho": None}, "DPZ01"),
            (zrun.run_id, {"epsilon": None, "delta": "1/100000000", "rho": "1/100000"},
             "DPZ01"),
            # a zcdp run's rho above its rho reservation: the database does not compute
            # the run's zCDP conversion, but it keeps the units within the stated rho
            (zrun.run_id, {"epsilon": None, "delta": "0", "rho": "1/10"}, "DPB01"),
        ]
        for run_id, cost, state in over:
            head, mid = mechanism(cost, run_id)
            with pytest.raises(psycopg.DatabaseError) as exc:
                _call(conn, "SELECT * FROM dpcg.charge(%s, %s, %s)", run_id, [head], [mid])
            assert exc.value.sqlstate == state, cost
    with led:
        assert led.entry_count() == n  # nothing was written
        led.open_run("d", Budget(0.5, 1e-6), "zcdp", seed_explicit=False).close()
        assert _rho(led) == Fraction(1, 32) + Budget(0.5, 1e-6).rho()
        zrun.record(gaussian_draft(16.0))  # 1/512 fits the run's rho
        zrun.close()
        assert _rho(led) == Fraction(1, 32) + Fraction(1, 512)


def test_the_database_charge_equals_the_verifier_exactly_under_a_zcdp_lifetime(
        pg: PgLedger) -> None:
    """Mixed basic and zcdp runs, open, closed with and without mechanisms: the
    database's exact numeric charge in rho equals the verifier's and an exact model's."""
    rng = random.Random(55)
    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("mix", Budget(1000.0, 0.5), lifetime_rule="zcdp")
        model = Fraction(0)
        for i in range(16):
            rule = "zcdp" if i % 3 == 2 else "basic"
            eps = rng.choice([1.0, 0.3, 2.5])
            budget = Budget(eps, 1e-3 if rule == "zcdp" else 0.0)
            run = led.open_run("mix", budget, rule, seed_explicit=False)
            units = Fraction(0)
            k = rng.randrange(0, 4)
            for _ in range(k):
                if rule == "zcdp" and rng.random() < 0.5:
                    entry = gaussian_draft(rng.choice([8.0, 16.0]))
                elif rng.random() < 0.3:
                    entry = draft(Exponential(sensitivity=1.0,
                                              epsilon=rng.choice([0.1, 0.07])), "e")
                else:
                    entry = laplace_draft(rng.choice([0.1, 0.05, 0.07]))
                run.record(entry)
                c = entry.cost
                assert c.rho is not None
                units += c.rho if c.epsilon is None else min(c.rho, c.epsilon ** 2 / 2)
            reserved = (Fraction(eps) ** 2 / 2 if rule == "basic"
                        else rho_for_budget(Fraction(eps), Fraction(1e-3)))
            if i % 4:
                run.close(rng.choice(["completed", "error", "budget-exhausted"]))
                model += units
            else:
                model += reserved
        assert _rho(led, "mix") == model
        info = led.dataset("mix")
        assert info.remaining_rho == rho_for_budget(Fraction(1000), Fraction(1, 2)) - model


_RACE = """
import os, sys, time
from accounting.costs import Budget
from accounting.errors import BudgetExceededError
from accounting.ledger import open_ledger
led = open_ledger(sys.argv[1])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
try:
    led.open_run("race", Budget(0.375), "basic", seed_explicit=False)  # rho 9/128
except BudgetExceededError:
    print("refused")
else:
    print("admitted")  # never closed: the reservation stands
led.close()
"""


def test_concurrent_reservations_never_overspend_a_zcdp_lifetime(pg: PgLedger,
                                                                  tmp_path: Path) -> None:
    """8 processes race for a zcdp lifetime whose rho admits exactly 5 basic runs of eps
    3/8 (rho 9/128 each): exactly 5 are admitted and the chain verifies."""
    import subprocess

    from .conftest import PYTHON, ROOT

    with PostgresLedger.open(pg.analyst) as led:
        led.register_dataset("race", Budget(4.0, 1e-5), lifetime_rule="zcdp")
        rho_l = led.dataset("race").lifetime_rho
        assert rho_l is not None
        assert 5 * Fraction(9, 128) <= rho_l < 6 * Fraction(9, 128)
    go = tmp_path / "go"
    procs = [subprocess.Popen([str(PYTHON), "-c", _RACE, pg.analyst, str(go)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    try:
        time.sleep(1.5)
        go.touch()
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
            outs.append(out.strip())
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert sorted(outs) == ["admitted"] * 5 + ["refused"] * 3
    with PostgresLedger.open(pg.analyst) as led:
        assert _rho(led, "race") == 5 * Fraction(9, 128)
