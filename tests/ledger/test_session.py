"""session_for_run: a Session recording into a ledger run."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from accounting.costs import Budget, Cost
from accounting.entries import EntryDraft
from accounting.errors import (
    BudgetExceededError,
    InvalidParameterError,
    SessionHaltedError,
    UnknownDatasetError,
)
from accounting.ledger import Ledger, session_for_run, verify_certificate
from accounting.mechanisms import Gaussian, Laplace, ReportNoisyMax, SparseVector, TopK
from accounting.relations import Relation

from .conftest import state


def test_entry_is_durable_before_the_data_is_touched(ledger: Ledger,
                                                     ledger_path: Path) -> None:
    session = session_for_run(ledger, "survey-2024", Budget(1.0), "basic",
                              description="pc run", store_outputs=True)
    seen: list[dict[str, object]] = []

    def compute() -> float:
        with Ledger.open(ledger_path) as other:  # another connection sees it committed
            seen.append(other.entries()[-1])
        return 42.0

    out = session.release(Laplace(sensitivity=1.0, epsilon=0.5), compute, purpose="count")
    assert isinstance(out, float)
    (entry,) = seen
    assert entry["kind"] == "mechanism"
    assert entry["purpose"] == "count"
    assert entry["cost"] == {"epsilon": "1/2", "delta": "0", "rho": "1/8"}
    last = ledger.entries()[-1]
    assert last["kind"] == "output"
    assert last["data"] == {"of_seq": entry["seq"], "output": out}


def test_full_session_roundtrip(ledger: Ledger, tmp_path: Path) -> None:
    session = session_for_run(ledger, "survey-2024", Budget(1.0), "basic", seed=7,
                              store_outputs=True)
    vec = session.release(Laplace(sensitivity=2.0, epsilon=0.25),
                          lambda: np.array([10.0, 20.0, 30.0]), purpose="histogram")
    assert vec.shape == (3,)
    idx = session.release(ReportNoisyMax(sensitivity=1.0, epsilon=0.25),
                          lambda: np.array([1.0, 5.0, 2.0]), purpose="argmax")
    assert isinstance(idx, int)
    svt = session.start(SparseVector(threshold=3.0, sensitivity=1.0, epsilon=0.5, cutoff=1),
                        purpose="sieve")
    for value in (0.0, 0.0, 100.0):
        if svt.halted:
            break
        svt.test(lambda v=value: v)
    touched: list[int] = []

    def compute() -> float:
        touched.append(1)
        return 0.0

    with pytest.raises(BudgetExceededError):
        session.release(Laplace(sensitivity=1.0, epsilon=0.01), compute, purpose="too much")
    assert not touched
    with pytest.raises(SessionHaltedError):
        session.release(Laplace(sensitivity=1.0, epsilon=0.01), lambda: 0.0, purpose="x")
    session.close("budget-exhausted")
    report = ledger.verify()
    assert report.ok, report.problems
    (run,) = report.runs
    assert run.seed_explicit
    assert run.status == "budget-exhausted"
    assert run.entries == 3
    assert run.outputs == 3
    assert run.spent_epsilon == 1
    entries = ledger.entries()
    mech = [e for e in entries if e["kind"] == "mechanism"]
    assert [e["mechanism"] for e in mech] == ["laplace", "report-noisy-max", "sparse-vector"]
    assert all(e["seed_explicit"] for e in mech)
    outputs = [e["data"]["output"] for e in entries if e["kind"] == "output"]
    assert outputs[1] == idx
    assert isinstance(outputs[2], list)
    assert all(isinstance(a, bool) for a in outputs[2])
    ledger.export(tmp_path / "c.json")
    assert verify_certificate(tmp_path / "c.json").ok


def test_zcdp_session(ledger: Ledger) -> None:
    budget = Budget(1.0, 1e-6)
    session = session_for_run(ledger, "survey-2024", budget, "zcdp")
    mech = Gaussian(l2_sensitivity=1.0, sigma=8.0)
    k = 0
    while session.can_afford(mech):
        session.release(mech, lambda: 1.0, purpose=f"sum {k}")
        k += 1
    assert k == int(budget.rho() / Fraction(1, 128))
    session.close()
    report = ledger.verify()
    assert report.ok, report.problems
    assert report.runs[0].spent_rho == Fraction(k, 128)


def test_top_k_is_recorded_and_reverified(ledger: Ledger) -> None:
    """A TopK release is charged k eps, its stored parameters re-derive that cost in the
    verifier, and an entry declaring one selection's eps is refused."""
    session = session_for_run(ledger, "survey-2024", Budget(1.0), "basic", seed=11,
                              store_outputs=True)
    mech = TopK(sensitivity=2.0, epsilon=0.125, k=3)
    out = session.release(mech, lambda: np.array([4.0, 0.0, 9.0, 1.0, 7.0]), purpose="top 3")
    assert out.shape == (3,)
    entry = [e for e in ledger.entries() if e["kind"] == "mechanism"][-1]
    assert entry["mechanism"] == "top-k"
    assert entry["params"] == {"sensitivity": 2.0, "epsilon": 0.125, "k": 3,
                               "relation": "replace-one"}
    assert entry["cost"] == {"epsilon": "3/8", "delta": "0", "rho": "3/512"}
    assert ledger.entries()[-1]["data"]["output"] == out.tolist()
    session.close()
    report = ledger.verify()
    assert report.ok, report.problems
    assert report.runs[0].spent_epsilon == Fraction(3, 8)
    run = ledger.open_run("survey-2024", Budget(0.5), "basic", seed_explicit=False)
    n_entries = len(ledger.entries())
    with pytest.raises(InvalidParameterError, match="re-derived from the parameters"):
        run.record(EntryDraft(mech.kind, mech.public_params(), mech.sensitivity,
                              Relation.REPLACE_ONE, Cost.pure(0.125, bounded_range=True),
                              "one selection's cost", False))
    assert len(ledger.entries()) == n_entries


def test_relations_are_converted_explicitly(ledger: Ledger) -> None:
    ledger.register_dataset("ar-data", Budget(1.0), Relation.ADD_REMOVE)
    session = session_for_run(ledger, "ar-data", Budget(1.0), "basic")
    assert session.relation is Relation.ADD_REMOVE
    session.release(Laplace(sensitivity=1.0, epsilon=0.5, relation=Relation.ADD_REMOVE),
                    lambda: 3.0, purpose="count")
    n_entries = len(ledger.entries())
    with pytest.raises(InvalidParameterError, match="add-remove"):
        # a replace-one sensitivity implies no add/remove bound: refused before charging
        session.release(Laplace(sensitivity=1.0, epsilon=0.5), lambda: 3.0, purpose="no")
    assert len(ledger.entries()) == n_entries
    session.close()
    # on a replace-one dataset an add/remove eps-DP mechanism costs 2 eps
    r1 = session_for_run(ledger, "survey-2024", Budget(1.0), "basic")
    r1.release(Laplace(sensitivity=1.0, epsilon=0.25, relation=Relation.ADD_REMOVE),
               lambda: 3.0, purpose="count")
    entry = ledger.entries()[-1]
    assert entry["params"]["relation"] == "add-remove"
    assert entry["relation"] == "replace-one"
    assert entry["cost"]["epsilon"] == "1/2"
    r1.close()
    report = ledger.verify()
    assert report.ok, report.problems
    assert [r.spent_epsilon for r in report.runs] == [Fraction(1, 2), Fraction(1, 2)]


def test_bad_input_reserves_nothing(ledger: Ledger, ledger_path: Path) -> None:
    before = state(ledger_path)
    with pytest.raises(InvalidParameterError, match="rule"):
        session_for_run(ledger, "survey-2024", Budget(0.5), "rdp")
    with pytest.raises(InvalidParameterError):
        session_for_run(ledger, "survey-2024", Budget(0.5), "basic", seed="7")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        session_for_run(ledger, "survey-2024", Budget(0.5), "zcdp")  # needs delta > 0
    with pytest.raises(InvalidParameterError):
        session_for_run(ledger, "survey-2024", Budget(0.5), "basic", store_outputs=1)  # type: ignore[arg-type]
    with pytest.raises(UnknownDatasetError):
        session_for_run(ledger, "unknown", Budget(0.5), "basic")
    with pytest.raises(BudgetExceededError):
        session_for_run(ledger, "survey-2024", Budget(5.0), "basic")
    assert state(ledger_path) == before
