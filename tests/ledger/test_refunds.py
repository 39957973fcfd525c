"""The lifetime is charged by realized spend (issue 55, item 3).

A closed ``basic`` run returns its unspent reservation (and any delta no mechanism
used); a closed ``zcdp`` run that admitted a mechanism keeps its whole reservation; a run
that admitted nothing returns everything; a run that never closed (killed) keeps its
reservation. ``test_random_run_sequences_keep_the_filter_invariant`` drives 1,000 seeded
random sequences of reserve / charge / close / crash against an exact ``Fraction``
model and checks every admission, every charge, the verifier's re-derivation and the
filter invariant of ``docs/privacy/ledger-composition.md``.
``test_random_run_sequences_keep_the_zcdp_lifetime_filter_invariant`` does the same for
1,000 sequences under a ``zcdp`` lifetime (the lifetime in rho; a closed run charged the
exact sum of its mechanisms' unit rho; basic runs with delta > 0 and mechanisms with
delta > 0 refused, writing nothing), with the invariant "sum of the unit rho started so
far <= rho_L" at every step.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import pytest

from accounting.costs import Budget, Cost, rho_for_budget
from accounting.entries import EntryDraft
from accounting.errors import BudgetExceededError, LifetimeRuleError
from accounting.ledger import Ledger, LedgerRun, verify_certificate
from accounting.mechanisms import Exponential, Gaussian, Laplace, SmoothSensitivityMedian

from .conftest import draft, laplace_draft

DATASET = "d"


def _charged(led: Ledger) -> tuple[Fraction, Fraction]:
    (ds,) = led.verify().datasets
    return ds.charged_epsilon, ds.charged_delta


def test_a_run_stopped_early_returns_exactly_its_unspent_share(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-6))
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "basic", seed_explicit=False)
        run.record(laplace_draft(0.25))
        assert _charged(led) == (Fraction(1), Fraction(1e-6))  # open: the reservation holds
        run.close("completed")
        # 3/4 of the epsilon and all of the delta (no mechanism used delta) come back
        assert _charged(led) == (Fraction(1, 4), Fraction(0))
        assert led.dataset(DATASET).remaining_epsilon == Fraction(7, 4)
        assert led.dataset(DATASET).remaining_delta == Fraction(1e-6)
        with pytest.raises(BudgetExceededError):
            led.open_run(DATASET, Budget(1.76, 1e-6), "basic", seed_explicit=False)
        led.open_run(DATASET, Budget(1.75, 1e-6), "basic", seed_explicit=False)  # exact fit
        report = led.verify()
        assert report.ok, report.problems
        assert report.datasets[0].reserved_epsilon == Fraction(11, 4)  # > lifetime: reused


def test_delta_is_charged_only_when_a_mechanism_used_it(tmp_path: Path) -> None:
    median = SmoothSensitivityMedian(epsilon=0.5, delta=1e-7, lower=0.0, upper=1.0)
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-6))
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "basic", seed_explicit=False)
        run.record(draft(median, "median"))
        run.close()
        assert _charged(led) == (Fraction(1, 2), Fraction(1e-7))


def test_zcdp_runs_keep_their_reservation_unless_they_released_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db", create=True) as led:
        led.register_dataset(DATASET, Budget(2.0, 1e-5))
        run = led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False)
        run.record(draft(Gaussian(l2_sensitivity=1.0, sigma=64.0), "tiny"))
        run.close()
        assert _charged(led) == (Fraction(1), Fraction(1e-6))  # no odometer: the whole reservation
        led.open_run(DATASET, Budget(1.0, 1e-6), "zcdp", seed_explicit=False).close()
        assert _charged(led) == (Fraction(1), Fraction(1e-6))  # released nothing: nothing charged


def test_a_killed_run_keeps_its_reservation(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(2.0))
        run = led.open_run(DATASET, Budget(1.5), "basic", seed_explicit=False)
        run.record(laplace_draft(0.25))
    # the process "died": the run never closed (tests/ledger/test_processes.py does it
    # with SIGKILL); its whole reservation stays charged
    with Ledger.open(path) as led:
        assert _charged(led) == (Fraction(3, 2), Fraction(0))
        with pytest.raises(BudgetExceededError):
            led.open_run(DATASET, Budget(0.75), "basic", seed_explicit=False)
        assert led.verify().ok


# ---------------------------------------------------------------------------------
# 1,000 random sequences against an exact model
# ---------------------------------------------------------------------------------
_PURE = (Fraction(1, 8), Fraction(1, 4), Fraction(1, 2))
_BUDGETS = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))
_DELTAS = (Fraction(0), Fraction(1e-6))  # the exact values of the floats stored


@dataclass
class ModelRun:
    rule: str
    eps: Fraction
    delta: Fraction
    spent_eps: Fraction = Fraction(0)
    spent_delta: Fraction = Fraction(0)
    spent_rho: Fraction = Fraction(0)
    entries: int = 0
    status: str = "open"  # open, closed, crashed (never closed)
    recorder: LedgerRun | None = field(default=None, repr=False)

    def charge(self) -> tuple[Fraction, Fraction]:
        if self.status != "closed":
            return self.eps, self.delta
        if self.entries == 0:
            return Fraction(0), Fraction(0)
        if self.rule == "basic":
            return self.spent_eps, self.spent_delta
        return self.eps, self.delta

    def unit_cost(self) -> tuple[Fraction, Fraction]:
        """The filter units this run started so far (ledger-composition.md)."""
        if self.rule == "basic":
            return self.spent_eps, self.spent_delta
        return (self.eps, self.delta) if self.entries else (Fraction(0), Fraction(0))


def _mechanism(rng: random.Random, rule: str) -> tuple[EntryDraft, Cost]:
    if rule == "zcdp" and rng.random() < 0.5:
        mech: object = Gaussian(l2_sensitivity=1.0, sigma=rng.choice([4.0, 8.0, 16.0]))
    elif rule == "basic" and rng.random() < 0.25:
        mech = SmoothSensitivityMedian(epsilon=float(rng.choice(_PURE)), delta=1e-7,
                                       lower=0.0, upper=1.0)
    else:
        mech = Laplace(sensitivity=1.0, epsilon=float(rng.choice(_PURE)))
    entry = draft(mech, "q")
    return entry, entry.cost


def _sequence(tmp: Path, seed: int) -> None:
    rng = random.Random(seed)
    lifetime_eps = rng.choice([Fraction(1), Fraction(3, 2), Fraction(2)])
    lifetime_delta = rng.choice([Fraction(0), Fraction(2e-6), Fraction(1e-5)])
    path = tmp / f"s{seed}.db"
    runs: list[ModelRun] = []
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(float(lifetime_eps), float(lifetime_delta)))
        for _ in range(rng.randint(4, 14)):
            op = rng.choice(["reserve", "reserve", "charge", "charge", "charge", "close",
                             "crash"])
            live = [r for r in runs if r.status == "open"]
            if op == "reserve" or not live:
                rule = rng.choice(["basic", "zcdp"])
                eps = rng.choice(_BUDGETS)
                delta = _DELTAS[1] if rule == "zcdp" else rng.choice(_DELTAS)
                held = [r.charge() for r in runs]
                fits = (sum((c[0] for c in held), Fraction(0)) + eps <= lifetime_eps
                        and sum((c[1] for c in held), Fraction(0)) + delta <= lifetime_delta)
                try:
                    recorder = led.open_run(DATASET, Budget(float(eps), float(delta)), rule,
                                            seed_explicit=False)
                except BudgetExceededError:
                    assert not fits, (seed, "refused although it fits")
                else:
                    assert fits, (seed, "admitted beyond the lifetime")
                    runs.append(ModelRun(rule, eps, delta, recorder=recorder))
            else:
                run = rng.choice(live)
                assert run.recorder is not None
                if op == "charge":
                    entry, cost = _mechanism(rng, run.rule)
                    if run.rule == "basic":
                        assert cost.epsilon is not None
                        ok = (run.spent_eps + cost.epsilon <= run.eps
                              and run.spent_delta + cost.delta <= run.delta)
                    else:
                        assert cost.rho is not None
                        used = run.spent_delta + cost.delta
                        ok = used < run.delta and run.spent_rho + cost.rho <= rho_for_budget(
                            run.eps, run.delta - used)
                    try:
                        run.recorder.record(entry)
                    except BudgetExceededError:
                        assert not ok, (seed, "a fitting mechanism was refused")
                    else:
                        assert ok, (seed, "a run overspent its reservation")
                        run.entries += 1
                        run.spent_eps += cost.epsilon or 0
                        run.spent_delta += cost.delta
                        run.spent_rho += cost.rho or 0
                elif op == "close":
                    run.recorder.close(rng.choice(["completed", "budget-exhausted"]))
                    run.status = "closed"
                else:  # crash: the run is abandoned, never closed
                    run.status = "crashed"
            # the filter invariant: the units started so far fit the lifetime
            units = [r.unit_cost() for r in runs]
            assert sum((u[0] for u in units), Fraction(0)) <= lifetime_eps, seed
            assert sum((u[1] for u in units), Fraction(0)) <= lifetime_delta, seed
        model = [r.charge() for r in runs]
        charged = (sum((c[0] for c in model), Fraction(0)),
                   sum((c[1] for c in model), Fraction(0)))
        report = led.verify()
        assert report.ok, (seed, report.problems)
        (ds,) = report.datasets
        assert (ds.charged_epsilon, ds.charged_delta) == charged, seed
        assert charged[0] <= lifetime_eps
        assert charged[1] <= lifetime_delta
        info = led.dataset(DATASET)
        assert (info.remaining_epsilon, info.remaining_delta) == (
            lifetime_eps - charged[0], lifetime_delta - charged[1]), seed
        if seed % 50 == 0:  # the certificate re-derives the same charges offline
            led.export(tmp / "c.json")
            assert verify_certificate(tmp / "c.json").ok
    path.unlink()


def test_random_run_sequences_keep_the_filter_invariant(tmp_path: Path) -> None:
    # on a RAM file system when there is one: every reservation and close is an fsync
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else tmp_path) as tmp:
        for seed in range(1000):
            _sequence(Path(tmp), seed)



def test_the_verifier_re_derives_refunds_and_certificates_state_them(tmp_path: Path) -> None:
    """A certificate states each dataset's charge; verify_certificate re-derives it from
    the entries (a stated charge that hides a run's spending fails), and a legacy
    certificate (no "charged", remaining from the reservations) still verifies."""
    import json

    path, cert = tmp_path / "l.db", tmp_path / "c.json"
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(2.0))
        run = led.open_run(DATASET, Budget(1.0), "basic", seed_explicit=False)
        run.record(laplace_draft(0.25))
        run.close()
        led.export(cert)
    doc = json.loads(cert.read_text())
    (ds,) = doc["datasets"]
    assert ds["charged"] == {"epsilon": "1/4", "delta": "0"}
    assert ds["remaining"] == {"epsilon": "7/4", "delta": "0"}
    assert verify_certificate(cert).ok
    ds["charged"] = {"epsilon": "0", "delta": "0"}
    ds["remaining"] = {"epsilon": "2", "delta": "0"}
    cert.write_text(json.dumps(doc))
    report = verify_certificate(cert)
    assert not report.ok
    assert "per-dataset totals" in report.problems[0]
    del ds["charged"]  # the form written before refunds
    ds["remaining"] = {"epsilon": "1", "delta": "0"}
    cert.write_text(json.dumps(doc))
    assert verify_certificate(cert).ok


# ---------------------------------------------------------------------------------
# The same under a zcdp lifetime (docs/privacy/ledger-composition.md, "zCDP lifetime")
# ---------------------------------------------------------------------------------
_Z_LIFETIMES = (Fraction(2), Fraction(4), Fraction(8))
_Z_LIFETIME_DELTAS = (Fraction(1e-5), Fraction(1e-4))
_Z_BUDGETS = (Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1))


@dataclass
class ZModelRun:
    """One run under a zcdp lifetime, in exact Fractions."""

    rule: str
    eps: Fraction
    delta: Fraction
    reserved: Fraction  # its reservation in rho
    spent_eps: Fraction = Fraction(0)
    spent_rho: Fraction = Fraction(0)
    units: Fraction = Fraction(0)  # sum of min(rho_m, eps_m^2/2)
    entries: int = 0
    status: str = "open"
    recorder: LedgerRun | None = field(default=None, repr=False)

    def charge(self) -> Fraction:
        if self.status != "closed":
            return self.reserved
        return self.units  # 0 without a mechanism


def _z_mechanism(rng: random.Random, rule: str) -> tuple[EntryDraft, Cost]:
    roll = rng.random()
    mech: object
    if roll < (0.4 if rule == "zcdp" else 0.05):  # a basic run refuses it (no eps bound)
        mech = Gaussian(l2_sensitivity=1.0, sigma=rng.choice([4.0, 8.0, 16.0]))
    elif roll < 0.6:
        mech = Exponential(sensitivity=1.0, epsilon=float(rng.choice(_PURE)))
    elif roll < 0.67:  # delta > 0, not zCDP: never a unit of a zcdp lifetime
        mech = SmoothSensitivityMedian(epsilon=float(rng.choice(_PURE)), delta=1e-7,
                                       lower=0.0, upper=1.0)
    else:
        mech = Laplace(sensitivity=1.0, epsilon=float(rng.choice(_PURE)))
    entry = draft(mech, "q")
    return entry, entry.cost


def _unit(cost: Cost) -> Fraction | None:
    """The model's unit rho (written out independently of accounting.ledger)."""
    if cost.delta != 0:
        return None
    options = [c for c in (cost.rho, None if cost.epsilon is None
                           else cost.epsilon * cost.epsilon / 2) if c is not None]
    return min(options) if options else None


def _z_sequence(tmp: Path, seed: int) -> None:
    rng = random.Random(seed)
    lifetime_eps = rng.choice(_Z_LIFETIMES)
    lifetime_delta = rng.choice(_Z_LIFETIME_DELTAS)
    rho_l = rho_for_budget(lifetime_eps, lifetime_delta)
    path = tmp / f"z{seed}.db"
    runs: list[ZModelRun] = []
    with Ledger.open(path, create=True) as led:
        led.register_dataset(DATASET, Budget(float(lifetime_eps), float(lifetime_delta)),
                             lifetime_rule="zcdp")
        assert led.dataset(DATASET).lifetime_rho == rho_l
        for _ in range(rng.randint(4, 14)):
            op = rng.choice(["reserve", "reserve", "charge", "charge", "charge", "close",
                             "crash"])
            live = [r for r in runs if r.status == "open"]
            if op == "reserve" or not live:
                rule = rng.choice(["basic", "zcdp"])
                eps = rng.choice(_Z_BUDGETS)
                delta = _DELTAS[1] if rule == "zcdp" else rng.choice((*_DELTAS, Fraction(0)))
                budget = Budget(float(eps), float(delta))
                if rule == "basic" and delta != 0:  # admits (eps, delta) mechanisms: refused
                    before = led.entry_count()
                    with pytest.raises(LifetimeRuleError):
                        led.open_run(DATASET, budget, rule, seed_explicit=False)
                    assert led.entry_count() == before
                    continue
                reserved = eps * eps / 2 if rule == "basic" else rho_for_budget(eps, delta)
                fits = sum((r.charge() for r in runs), Fraction(0)) + reserved <= rho_l
                try:
                    recorder = led.open_run(DATASET, budget, rule, seed_explicit=False)
                except BudgetExceededError:
                    assert not fits, (seed, "refused although it fits")
                else:
                    assert fits, (seed, "admitted beyond the lifetime")
                    runs.append(ZModelRun(rule, eps, delta, reserved, recorder=recorder))
            else:
                run = rng.choice(live)
                assert run.recorder is not None
                if op == "charge":
                    entry, cost = _z_mechanism(rng, run.rule)
                    unit = _unit(cost)
                    before = led.entry_count()
                    if unit is None:
                        with pytest.raises(LifetimeRuleError):
                            run.recorder.record(entry)
                        assert led.entry_count() == before, seed
                        continue
                    if run.rule == "basic":  # a Gaussian has no eps bound: refused
                        ok = cost.epsilon is not None \
                            and run.spent_eps + cost.epsilon <= run.eps
                    else:
                        assert cost.rho is not None
                        ok = run.spent_rho + cost.rho <= rho_for_budget(run.eps, run.delta)
                    ok = ok and run.units + unit <= run.reserved
                    try:
                        run.recorder.record(entry)
                    except BudgetExceededError:
                        assert not ok, (seed, "a fitting mechanism was refused")
                        assert led.entry_count() == before, seed
                    else:
                        assert ok, (seed, "a run overspent its reservation")
                        run.entries += 1
                        run.spent_eps += cost.epsilon or 0
                        run.spent_rho += cost.rho or 0
                        run.units += unit
                elif op == "close":
                    run.recorder.close(rng.choice(["completed", "budget-exhausted"]))
                    run.status = "closed"
                else:  # crash: abandoned, never closed
                    run.status = "crashed"
            # the filter invariant: the rho of the units started so far fits the lifetime
            assert sum((r.units for r in runs), Fraction(0)) <= rho_l, seed
            assert sum((r.charge() for r in runs), Fraction(0)) <= rho_l, seed
        charged = sum((r.charge() for r in runs), Fraction(0))
        report = led.verify()
        assert report.ok, (seed, report.problems)
        (ds,) = report.datasets
        assert ds.lifetime_rho == rho_l, seed
        assert ds.charged_rho == charged, seed
        assert charged <= rho_l
        for r in runs:  # every run's charge, re-derived by the verifier
            (totals,) = [t for t in report.runs if t.run_id == r.recorder.run_id]  # type: ignore[union-attr]
            assert totals.charge_rho() == r.charge(), seed
        info = led.dataset(DATASET)
        assert info.charged_rho == charged, seed
        assert info.remaining_rho == rho_l - charged, seed
        if seed % 50 == 0:
            led.export(tmp / "zc.json")
            assert verify_certificate(tmp / "zc.json").ok
    path.unlink()


def test_random_run_sequences_keep_the_zcdp_lifetime_filter_invariant(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else tmp_path) as tmp:
        for seed in range(1000):
            _z_sequence(Path(tmp), seed)
