"""Session order of operations, halting, recorder contract and guarantee."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from accounting import (
    Budget,
    BudgetExceededError,
    Cost,
    Gaussian,
    Guarantee,
    InMemoryRecorder,
    InvalidParameterError,
    Laplace,
    LedgerError,
    Relation,
    ReportNoisyMax,
    Session,
    SessionHaltedError,
    SmoothSensitivityMedian,
    SparseVector,
    SubsampledSparseVector,
    split_epsilon,
)
from accounting.errors import MechanismStateError, StatisticError


def _note(log: list[object], value: object, result: float = 0.0) -> float:
    log.append(value)
    return result


def test_order_validate_admit_record_compute() -> None:
    budget = Budget(1.0)
    log: list[str] = []

    class Recorder(InMemoryRecorder):
        def record(self, entry):  # type: ignore[no-untyped-def]
            log.append("record")
            return super().record(entry)

    rec = Recorder(budget)
    session = Session(budget, recorder=rec, seed=1)

    def compute() -> float:
        log.append("compute")
        assert len(rec.entries) == 1  # the entry is durable before the data is touched
        return 0.5

    out = session.release(Laplace(1.0, 0.5), compute, purpose="q")
    assert isinstance(out, float)
    assert log == ["record", "compute"]
    entry = rec.entries[0]
    assert entry.mechanism == "laplace"
    assert entry.cost == Cost.pure(0.5)
    assert entry.seed_explicit is True
    assert entry.relation is Relation.REPLACE_ONE
    assert entry.purpose == "q"


def test_refusal_never_computes_and_halts() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    calls: list[object] = []
    session.release(Laplace(1.0, 0.75), lambda: _note(calls, 1), purpose="a")
    with pytest.raises(BudgetExceededError):
        session.release(Laplace(1.0, 0.5), lambda: _note(calls, 2), purpose="b")
    assert calls == [1]
    assert session.halted
    assert len(rec.entries) == 1
    assert session.spent() == Cost.pure(0.75)
    # halt semantics: even an affordable mechanism is refused now
    with pytest.raises(SessionHaltedError):
        session.release(Laplace(1.0, 0.01), lambda: 0.0, purpose="c")
    assert not session.can_afford(Laplace(1.0, 0.01))
    with pytest.raises(SessionHaltedError):
        session.start(SparseVector(0.0, 1.0, 0.01), purpose="d")


def test_recorder_failure_releases_nothing() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget, fail_on={1})
    session = Session(budget, recorder=rec)
    session.release(Laplace(1.0, 0.1), lambda: 0.0, purpose="a")
    called: list[object] = []
    with pytest.raises(LedgerError):
        session.release(Laplace(1.0, 0.1), lambda: _note(called, 1), purpose="b")
    assert called == []
    assert session.spent() == Cost.pure(0.1)
    assert session.halted


def test_store_outputs_records_output() -> None:
    budget = Budget(2.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec, seed=7, store_outputs=True)
    v = session.release(Laplace(1.0, 0.5), lambda: np.array([1.0, 2.0]), purpose="v")
    i = session.release(ReportNoisyMax(1.0, 0.5), lambda: np.array([0.0, 10.0]), purpose="r")
    assert rec.outputs[0] == list(v)
    assert rec.outputs[1] == i
    assert isinstance(i, int)
    run = session.start(SparseVector(0.0, 1.0, 0.5, cutoff=1), purpose="svt")
    while not run.halted:
        run.test(lambda: 100.0)
    assert rec.outputs[2] == run.answers
    session.close()
    assert rec.status == "completed"


def test_outputs_not_stored_by_default() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    session.release(Laplace(1.0, 0.5), lambda: 1.0, purpose="v")
    assert rec.outputs == {}


def test_guarantee_and_recorder_match() -> None:
    budget = Budget(1.0, 1e-6)
    session = Session(budget, rule="zcdp", relation=Relation.REPLACE_ONE)
    assert session.guarantee() == Guarantee(1.0, 1e-6, Relation.REPLACE_ONE, "zcdp")
    with pytest.raises(InvalidParameterError, match="rule"):
        Session(budget, rule="basic", recorder=InMemoryRecorder(budget, rule="zcdp"))
    with pytest.raises(InvalidParameterError, match="budget"):
        Session(budget, recorder=InMemoryRecorder(Budget(2.0, 1e-6)))
    with pytest.raises(InvalidParameterError, match="relation"):
        Session(
            budget,
            relation=Relation.ADD_REMOVE,
            recorder=InMemoryRecorder(budget, relation=Relation.REPLACE_ONE),
        )
    with pytest.raises(InvalidParameterError, match="rule"):
        Session(budget, rule="pld")
    with pytest.raises(InvalidParameterError, match="delta"):
        Session(Budget(1.0), rule="zcdp")


def test_spent_and_remaining_exact() -> None:
    budget = Budget(1.0, 1e-5)
    session = Session(budget)
    session.release(Laplace(1.0, 0.1), lambda: 0.0, purpose="a")
    session.release(SmoothSensitivityMedian(0.2, 1e-6, 0.0, 1.0), lambda: [0.1, 0.2, 0.3],
                    purpose="m")
    spent = session.spent()
    assert spent.epsilon == Fraction(0.1) + Fraction(0.2)
    assert spent.delta == Fraction(1e-6)
    assert spent.rho is None
    rem = session.remaining()
    assert rem.epsilon == Fraction(1.0) - Fraction(0.1) - Fraction(0.2)
    assert rem.delta == Fraction(1e-5) - Fraction(1e-6)

    z = Session(budget, rule="zcdp")
    assert z.rho_budget is not None
    g = Gaussian.for_rho(1.0, z.rho_budget / 3)
    z.release(g, lambda: 0.0, purpose="g")
    assert z.remaining().rho == z.rho_budget - g.rho_under(Relation.REPLACE_ONE)


def test_rule_applicability() -> None:
    basic = Session(Budget(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="rule"):
        basic.release(Gaussian(1.0, 1.0), lambda: 0.0, purpose="g")
    assert basic.spent() == Cost.zero()
    assert not basic.halted
    z = Session(Budget(1.0, 1e-6), rule="zcdp")
    with pytest.raises(InvalidParameterError, match="rule"):
        z.release(SmoothSensitivityMedian(0.5, 1e-7, 0.0, 1.0), lambda: [0.5], purpose="m")
    assert z.spent() == Cost.zero()
    assert not z.halted


def test_equal_split_fits_exactly_in_session() -> None:
    k = 1000
    session = Session(Budget(0.7))
    e = split_epsilon(0.7, k)
    for _ in range(k):
        session.release(Laplace(1.0, e), lambda: 0.0, purpose="t")
    spent_eps = session.spent().epsilon
    assert spent_eps is not None
    assert spent_eps <= Fraction(0.7)

    z = Session(Budget(0.3, 1e-7), rule="zcdp")
    assert z.rho_budget is not None
    per = z.rho_budget / k
    g = Gaussian.for_rho(0.05, per)
    for _ in range(k):
        z.release(g, lambda: 0.0, purpose="t")
    spent_rho = z.spent().rho
    assert spent_rho is not None
    assert spent_rho <= z.rho_budget


def test_stateful_runs_charged_at_start() -> None:
    session = Session(Budget(1.0), seed=3)
    run = session.start(SparseVector(1.0, 1.0, 0.4, cutoff=2), purpose="svt")
    assert session.spent() == Cost.pure(0.4)
    while not run.halted:
        run.test(lambda: 1e9)
    assert run.positives == 2
    with pytest.raises(MechanismStateError):
        run.test(lambda: pytest.fail("compute must not be called"))
    sub = SubsampledSparseVector(100, 10, 0.0, 1.0, 0.5)
    run2 = session.start(sub, purpose="sieve")
    sub_eps = sub.cost(Relation.REPLACE_ONE).epsilon
    assert sub_eps is not None
    assert session.spent().epsilon == Fraction(0.4) + sub_eps
    assert run2.indices is not None
    seen: list[object] = []
    run2.test(lambda idx: _note(seen, idx))
    idx = seen[0]
    assert isinstance(idx, np.ndarray)
    assert idx.dtype == np.int64
    assert len(idx) == 10
    assert np.all(np.diff(idx) > 0)
    with pytest.raises(InvalidParameterError, match="mechanism"):
        session.release(SparseVector(0.0, 1.0, 0.1), lambda: 0.0, purpose="x")
    with pytest.raises(InvalidParameterError, match="mechanism"):
        session.start(Laplace(1.0, 0.1), purpose="x")  # type: ignore[arg-type]


def test_bad_statistic_raises_statistic_error() -> None:
    session = Session(Budget(1.0))
    with pytest.raises(StatisticError):
        session.release(Laplace(1.0, 0.1), lambda: float("nan"), purpose="x")


def test_close_then_halted() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    session.close("error")
    assert rec.status == "error"
    assert session.halted
    with pytest.raises(SessionHaltedError):
        session.release(Laplace(1.0, 0.1), lambda: 0.0, purpose="x")
    with pytest.raises(SessionHaltedError):
        session.close()


def test_seed_flag_and_auxiliary_generator() -> None:
    a = Session(Budget(1.0), seed=11)
    b = Session(Budget(1.0), seed=11)
    c = Session(Budget(1.0))
    assert a.seed_explicit
    assert not c.seed_explicit
    xa = a.auxiliary_generator().random(4)
    xb = b.auxiliary_generator().random(4)
    assert np.array_equal(xa, xb)
    # the auxiliary stream differs from the noise stream and from the next auxiliary one
    assert not np.array_equal(a.auxiliary_generator().random(4), xa)
    ra = a.release(Laplace(1.0, 0.5, sampler="float"), lambda: 0.0, purpose="x")
    rb = b.release(Laplace(1.0, 0.5, sampler="float"), lambda: 0.0, purpose="x")
    assert ra == rb
    with pytest.raises(InvalidParameterError, match="seed"):
        Session(Budget(1.0), seed=-1)


def test_invalid_requests_charge_nothing() -> None:
    budget = Budget(1.0, 1e-6)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)
    bad_calls: list[tuple[object, object, object]] = [
        (Laplace(1.0, 0.1), lambda: 0.0, 3),  # purpose not a string
        (Laplace(1.0, 0.1), "not callable", "x"),
        ("laplace", lambda: 0.0, "x"),  # not a mechanism
        (Gaussian(1.0, 1.0), lambda: 0.0, "x"),  # no eps bound under basic
    ]
    for mech, compute, purpose in bad_calls:
        with pytest.raises(InvalidParameterError):
            session.release(mech, compute, purpose=purpose)  # type: ignore[arg-type]
    assert session.spent() == Cost.zero()
    assert rec.entries == []
    assert not session.halted


def test_compute_failure_after_admission_stays_charged() -> None:
    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    session = Session(budget, recorder=rec)

    def boom() -> float:
        raise RuntimeError("statistic failed")

    with pytest.raises(RuntimeError):
        session.release(Laplace(1.0, 0.25), boom, purpose="x")
    # the entry was durable before compute ran: the charge stands (conservative)
    assert session.spent() == Cost.pure(0.25)
    assert len(rec.entries) == 1
    run = session.start(SparseVector(0.0, 1.0, 0.25), purpose="svt")
    with pytest.raises(StatisticError):
        run.test(lambda: float("inf"))


def test_in_memory_recorder_contract() -> None:
    from accounting.entries import EntryDraft, RunRecorder

    budget = Budget(1.0)
    rec = InMemoryRecorder(budget)
    assert isinstance(rec, RunRecorder)
    draft = EntryDraft("laplace", {}, 1.0, Relation.REPLACE_ONE, Cost.pure(0.1), "p", False)
    assert rec.record(draft) == 0
    assert rec.record(draft) == 1
    rec.record_output(1, 0.5)
    with pytest.raises(LedgerError):
        rec.record_output(1, 0.5)
    with pytest.raises(LedgerError):
        rec.record_output(7, 0.5)
    rec.close("completed")
    with pytest.raises(LedgerError):
        rec.record(draft)
    with pytest.raises(LedgerError):
        rec.close("completed")


def test_cost_cache_is_exact_and_keyed_by_parameters() -> None:
    session = Session(Budget(1.0, 1e-6), rule="zcdp", seed=3)
    rho_b = session.remaining().rho
    assert rho_b is not None
    k = 7
    g = Gaussian.for_rho(0.25, rho_b / k)
    for _ in range(k):  # k equal parts fit exactly, through the cache
        session.release(Gaussian.for_rho(0.25, rho_b / k), lambda: 0.5, purpose="t")
    rho_g = g.cost(session.relation).rho
    assert rho_g is not None
    assert session.spent().rho == k * rho_g
    other = Gaussian(0.25, g.sigma * 2)
    assert session.cost_of(other) == other.cost(session.relation)
    assert session.cost_of(other) != session.cost_of(g)
    with pytest.raises(BudgetExceededError):
        session.release(g, lambda: 0.5, purpose="one too many")


def test_spent_summary_states_zcdp_runs_by_rho_never_by_summed_epsilons() -> None:
    """Issue 55, item 4: a zCDP run of pure mechanisms reports its spent rho and the
    conversion at the run's delta (within the budget), never the plain sum of the pure
    epsilons (which exceeds the guarantee: a reviewer would read an overspend)."""
    from accounting.session import spent_summary

    session = Session(Budget(1.0, 1e-6), rule="zcdp", seed=0)
    for _ in range(40):  # 40 pure releases of eps 0.034: rho 40 * eps^2/2 = 0.0231
        session.release(Laplace(sensitivity=1.0, epsilon=0.034), lambda: 1.0, purpose="q")
    plain_sum = session.spent().epsilon
    assert plain_sum is not None
    assert plain_sum > 1  # 1.36: what `ledger show` and result.json used to print
    summary = session.spent_summary()
    assert summary["rule"] == "zcdp"
    assert summary["rho"] == str(session.spent().rho)
    converted = summary["epsilon_float"]
    assert isinstance(converted, float)
    assert 0 < converted <= 1.0  # within the guarantee, as the filter enforces
    assert summary["delta"] == str(Fraction(1e-6))
    assert summary["guarantee"] == {"epsilon": 1.0, "delta": 1e-6}
    assert "1.36" not in str(summary)
    basic = Session(Budget(1.0, 1e-6), rule="basic", seed=0)
    basic.release(Laplace(sensitivity=1.0, epsilon=0.25), lambda: 1.0, purpose="q")
    assert basic.spent_summary() == spent_summary(
        "basic", Fraction(1.0), Fraction(1e-6), basic.spent())
    assert basic.spent_summary()["epsilon"] == "1/4"
    assert basic.spent_summary()["delta"] == "0"
