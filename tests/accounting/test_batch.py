"""Batched admission: ``PrivacyFilter.fitting_prefix``, ``Session.release_many`` and the
recorders' atomic ``record_many`` behave exactly as the one-at-a-time path would."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from accounting import (
    Budget,
    BudgetExceededError,
    Cost,
    Gaussian,
    InMemoryRecorder,
    InvalidParameterError,
    Laplace,
    LedgerError,
    Session,
    SessionHaltedError,
    SparseVector,
)
from accounting.filter import PrivacyFilter


def _requests(epsilons: list[float], log: list[int] | None = None,
              value: float = 0.5) -> list[tuple[Any, Any, str]]:
    def compute(i: int) -> float:
        if log is not None:
            log.append(i)
        return value + i

    return [(Laplace(1.0, e), (lambda i=i: compute(i)), f"q{i}") for i, e in enumerate(epsilons)]


def test_fitting_prefix_matches_sequential_checks() -> None:
    costs = [Cost.pure(Fraction(1, 4))] * 3 + [Cost.pure(Fraction(1, 2))]
    f = PrivacyFilter(Budget(1.0))
    assert f.fitting_prefix(costs) == 3  # 3/4 fits, 5/4 does not
    assert f.spent() == Cost.zero()  # no state change
    f.commit_prefix(costs[:3])
    assert f.spent().epsilon == Fraction(3, 4)
    assert f.admitted == 3
    # the same as check() on each in turn
    g = PrivacyFilter(Budget(1.0))
    for c in costs[:3]:
        g.admit(c)
    with pytest.raises(BudgetExceededError):
        g.check(costs[3])
    assert g.spent() == f.spent()
    # a commit that was not checked is recomputed, and refused when it does not fit
    h = PrivacyFilter(Budget(1.0))
    with pytest.raises(BudgetExceededError):
        h.commit_prefix(costs)
    assert h.spent() == Cost.zero()


def test_fitting_prefix_zcdp_and_applicability() -> None:
    f = PrivacyFilter(Budget(1.0, 1e-6), rule="zcdp")
    g = Gaussian(1.0, 4.0)
    rho = g.cost(g.relation).rho
    assert rho is not None
    k = int(f.rho_budget // rho)  # type: ignore[operator]
    assert f.fitting_prefix([g.cost(g.relation)] * (k + 3)) == k
    with pytest.raises(InvalidParameterError, match="rule"):
        PrivacyFilter(Budget(1.0)).fitting_prefix([g.cost(g.relation)])


def test_release_many_equals_sequential_release() -> None:
    eps = [0.1, 0.2, 0.05, 0.3]
    a_rec, b_rec = InMemoryRecorder(Budget(1.0)), InMemoryRecorder(Budget(1.0))
    a = Session(Budget(1.0), recorder=a_rec, seed=11)
    b = Session(Budget(1.0), recorder=b_rec, seed=11)
    batch = a.release_many(_requests(eps))
    one_by_one = [b.release(m, c, purpose=p) for m, c, p in _requests(eps)]
    assert batch == one_by_one  # same noise stream, same order
    assert a_rec.entries == b_rec.entries
    assert a.spent() == b.spent()
    assert a.releases == b.releases == 4
    assert a.release_many([]) == []


def test_release_many_records_everything_before_computing() -> None:
    log: list[object] = []

    class Recorder(InMemoryRecorder):
        def record_many(self, entries: list[Any]) -> list[int]:
            log.append(("record_many", len(entries)))
            return super().record_many(entries)

    rec = Recorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec, seed=1)
    computed: list[int] = []
    session.release_many(_requests([0.1, 0.1, 0.1], computed))
    assert log == [("record_many", 3)]
    assert computed == [0, 1, 2]


def test_release_many_prefix_then_halt() -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec, seed=2)
    computed: list[int] = []
    out = session.release_many(_requests([0.375, 0.375, 0.375, 0.125], computed))
    assert len(out) == 2
    assert computed == [0, 1]
    assert session.halted
    assert len(rec.entries) == 2
    assert session.spent().epsilon == Fraction(3, 4)
    with pytest.raises(SessionHaltedError):
        session.release_many(_requests([0.01]))
    with pytest.raises(SessionHaltedError):
        session.release(Laplace(1.0, 0.01), lambda: 0.0, purpose="after")


def test_release_many_none_fits_raises_and_spends_nothing() -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec)
    computed: list[int] = []
    with pytest.raises(BudgetExceededError):
        session.release_many(_requests([2.0, 0.1], computed))
    assert computed == []
    assert rec.entries == []
    assert session.halted
    assert session.spent() == Cost.zero()


def test_release_many_atomic_recorder_failure_charges_nothing() -> None:
    rec = InMemoryRecorder(Budget(1.0), fail_on={2})
    session = Session(Budget(1.0), recorder=rec)
    session.release(Laplace(1.0, 0.125), lambda: 0.0, purpose="first")
    computed: list[int] = []
    with pytest.raises(LedgerError):
        session.release_many(_requests([0.125, 0.125, 0.125], computed))
    assert computed == []
    assert len(rec.entries) == 1
    assert session.spent().epsilon == Fraction(1, 8)
    assert session.halted


def test_release_many_without_record_many_charges_what_was_recorded() -> None:
    class OneAtATime:
        def __init__(self, fail_at: int) -> None:
            self.inner = InMemoryRecorder(Budget(1.0))
            self.fail_at = fail_at

        run_id = "r"
        budget = Budget(1.0)
        rule = "basic"

        @property
        def relation(self) -> Any:
            return self.inner.relation

        def record(self, entry: Any) -> int:
            if len(self.inner.entries) == self.fail_at:
                raise LedgerError("disk full")
            return self.inner.record(entry)

        def record_output(self, sequence: int, output: Any) -> None:
            self.inner.record_output(sequence, output)

        def close(self, status: str) -> None:
            self.inner.close(status)

    ok = OneAtATime(fail_at=99)
    s_ok = Session(Budget(1.0), recorder=ok, seed=3)
    assert len(s_ok.release_many(_requests([0.1, 0.2]))) == 2
    assert len(ok.inner.entries) == 2

    bad = OneAtATime(fail_at=2)
    session = Session(Budget(1.0), recorder=bad)
    computed: list[int] = []
    with pytest.raises(LedgerError):
        session.release_many(_requests([0.125, 0.25, 0.375], computed))
    assert computed == []
    assert len(bad.inner.entries) == 2
    assert session.spent().epsilon == Fraction(3, 8)  # recorded = charged
    assert session.halted


def test_release_many_compute_failure_keeps_batch_charged() -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec)

    def boom() -> float:
        raise RuntimeError("data error")

    reqs = [*_requests([0.125, 0.125]), (Laplace(1.0, 0.125), boom, "bad")]
    with pytest.raises(RuntimeError):
        session.release_many(reqs)
    assert len(rec.entries) == 3
    assert session.spent().epsilon == Fraction(3, 8)


def test_release_many_stores_outputs() -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec, seed=4, store_outputs=True)
    out = session.release_many(_requests([0.1, 0.1]))
    assert rec.outputs == {0: out[0], 1: out[1]}


@pytest.mark.parametrize("bad", [
    "abc", [Laplace(1.0, 0.1)], [(Laplace(1.0, 0.1), 1.0, "p")],
    [(Laplace(1.0, 0.1), lambda: 0.0, 3)], [(SparseVector(0.0, 1.0, 0.1), lambda: 0.0, "s")],
    [("laplace", lambda: 0.0, "p")],
])
def test_release_many_bad_input_spends_nothing(bad: Any) -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec)
    with pytest.raises(InvalidParameterError):
        session.release_many(bad)
    assert rec.entries == []
    assert session.spent() == Cost.zero()
    assert not session.halted


def test_in_memory_record_many_validates_all_first() -> None:
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec)
    session.release_many(_requests([0.1]))
    with pytest.raises(LedgerError):
        rec.record_many([rec.entries[0], "not a draft"])  # type: ignore[list-item]
    assert len(rec.entries) == 1
    rec.close("completed")
    with pytest.raises(LedgerError):
        rec.record_many([rec.entries[0]])


def test_release_many_starts_stateful_mechanisms() -> None:
    """An SVT in a batch (``compute=None``) is admitted, recorded with the others and
    started, exactly as ``start`` would (same charge, same run handle behaviour)."""
    rec = InMemoryRecorder(Budget(1.0))
    session = Session(Budget(1.0), recorder=rec, seed=5)
    svt = SparseVector(0.0, 1.0, 0.25, cutoff=1)
    out = session.release_many([(Laplace(1.0, 0.25), lambda: 1.0, "examine"),
                                (svt, None, "next sieve")])
    assert len(out) == 2
    run = out[1]
    assert [e.purpose for e in rec.entries] == ["examine", "next sieve"]
    assert session.spent().epsilon == Fraction(1, 2)
    while not run.halted:
        run.test(lambda: 100.0)
    assert run.positives == 1
    with pytest.raises(InvalidParameterError, match="pass None"):
        session.release_many([(svt, lambda: 0.0, "svt with compute")])
