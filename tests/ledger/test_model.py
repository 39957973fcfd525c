"""Property test: random operation sequences agree with a simple exact model."""

from __future__ import annotations

import tempfile
from fractions import Fraction
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.costs import Budget
from accounting.errors import BudgetExceededError, LedgerError
from accounting.ledger import Ledger, LedgerRun, verify_certificate

from .conftest import laplace_draft

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.sampled_from([0.125, 0.25, 0.5, 0.75])),
        st.tuples(st.just("record"), st.integers(0, 5), st.sampled_from([0.0625, 0.125, 0.25])),
        st.tuples(st.just("output"), st.integers(0, 5)),
        st.tuples(st.just("close"), st.integers(0, 5)),
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_ledger_agrees_with_exact_model(ops: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "l.db"
        lifetime = Fraction(1)
        reserved = Fraction(0)  # every reservation ever made

        def charged() -> Fraction:  # open runs hold their reservation; closed: their spend
            return sum((spent[r] if r in closed else budget[r] for r in budget), Fraction(0))

        runs: list[LedgerRun] = []
        budget: dict[str, Fraction] = {}
        spent: dict[str, Fraction] = {}
        closed: set[str] = set()
        recorded: dict[str, list[int]] = {}
        with Ledger.open(path, create=True) as led:
            led.register_dataset("d", Budget(1.0))
            for op in ops:
                if op[0] == "open":
                    eps = op[1]
                    assert isinstance(eps, float)
                    if charged() + Fraction(eps) <= lifetime:
                        run = led.open_run("d", Budget(eps), "basic", seed_explicit=False)
                        runs.append(run)
                        reserved += Fraction(eps)
                        budget[run.run_id] = Fraction(eps)
                        spent[run.run_id] = Fraction(0)
                        recorded[run.run_id] = []
                    else:
                        try:
                            led.open_run("d", Budget(eps), "basic", seed_explicit=False)
                        except BudgetExceededError:
                            pass
                        else:
                            raise AssertionError("lifetime overspent")
                    continue
                if not runs:
                    continue
                index = op[1]
                assert isinstance(index, int)
                run = runs[index % len(runs)]
                rid = run.run_id
                if op[0] == "record":
                    eps = op[2]
                    assert isinstance(eps, float)
                    fits = spent[rid] + Fraction(eps) <= budget[rid]
                    try:
                        seq = run.record(laplace_draft(eps))
                    except BudgetExceededError:
                        assert not fits
                        assert rid not in closed
                    except LedgerError:
                        assert rid in closed
                    else:
                        assert fits
                        assert rid not in closed
                        spent[rid] += Fraction(eps)
                        recorded[rid].append(seq)
                elif op[0] == "output":
                    if recorded[rid] and rid not in closed:
                        run.record_output(recorded[rid].pop(), [1.5, -2.0])
                else:
                    run.close("completed")
                    closed.add(rid)
            report = led.verify()
            assert report.ok, report.problems
            assert report.datasets[0].reserved_epsilon == reserved
            assert report.datasets[0].charged_epsilon == charged() <= lifetime
            assert led.dataset("d").remaining_epsilon == lifetime - charged()
            for totals in report.runs:
                assert totals.spent_epsilon == spent[totals.run_id]
                assert totals.status == ("completed" if totals.run_id in closed else "open")
            led.export(Path(tmp) / "c.json")
        assert verify_certificate(Path(tmp) / "c.json").ok
