"""The verifier never crashes: arbitrary (re-hashed) certificate edits give a report."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.costs import rho_for_budget
from accounting.errors import AccountingError
from accounting.ledger import Ledger, check_certificate
from accounting.ledger._format import entry_hash

from .conftest import populate

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["1/2", "0", "1", "10" * 200, "-1", "1/0", "laplace", "zcdp", "open"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["epsilon", "delta", "rho", "status", "of_seq",
                                       "budget", "rule", "description", "lifetime",
                                       "output", "extra", "x"]), children, max_size=4),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("fuzz")
    with Ledger.open(tmp / "l.db", create=True) as led:
        from accounting.costs import Budget

        led.register_dataset("survey-2024", Budget(2.0, 1e-6))
        populate(led)
        led.export(tmp / "c.json")
    data: dict[str, Any] = json.loads(Path(tmp / "c.json").read_text())
    return data


FIELDS = ["kind", "dataset_id", "run_id", "mechanism", "params", "sensitivity", "relation",
          "cost", "purpose", "seed_explicit", "data", "seq"]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 8), st.sampled_from(FIELDS), JSON,
                          st.lists(st.integers(0, 5), max_size=2)), min_size=1, max_size=3))
def test_rehashed_edits_never_crash(certificate: dict[str, Any],
                                   edits: list[tuple[int, str, Any, list[int]]]) -> None:
    cert = copy.deepcopy(certificate)
    entries = cert["entries"]
    for index, field, value, path in edits:
        parent: Any = entries[index % len(entries)]
        key: Any = field
        for step in path:  # descend into nested objects along the chosen keys
            child = parent[key]
            if not isinstance(child, dict) or not child:
                break
            parent, key = child, sorted(child)[step % len(child)]
        parent[key] = value
    prev = cert["genesis_hash"]
    for entry in entries:  # re-chain so that the semantic checks are reached
        entry["prev_hash"] = prev
        try:
            entry["hash"] = prev = entry_hash(entry)
        except (TypeError, ValueError):
            entry["hash"] = prev = "0" * 64
    cert["head_hash"] = prev
    try:
        report = check_certificate(cert)
    except AccountingError:
        return
    if report.ok:  # an accepted edit must still be a self-consistent, within-budget ledger
        for run in report.runs:  # the bound of the run's rule (under zcdp: its rho)
            if run.rule == "zcdp":
                assert run.spent_rho is None or run.spent_rho <= rho_for_budget(
                    run.budget_epsilon, run.budget_delta)
            else:
                assert run.spent_epsilon is None or run.spent_epsilon <= run.budget_epsilon
        for ds in report.datasets:
            assert ds.reserved_epsilon <= ds.lifetime_epsilon


HUGE = "10" * 200


@pytest.mark.parametrize(("index", "path", "value"), [
    (0, ("data", "lifetime", "epsilon"), HUGE),
    (0, ("data", "lifetime", "delta"), "1/" + HUGE),
    (1, ("data", "budget", "epsilon"), HUGE),
    (1, ("data", "budget", "epsilon"), "1/" + HUGE),
    (2, ("cost", "epsilon"), HUGE),
    (2, ("cost", "rho"), HUGE),
    (2, ("params", "epsilon"), 1e308),
    (2, ("params", "epsilon"), 5e-324),
    (2, ("params", "sensitivity"), 10**400),
    (2, ("sensitivity",), 1e308),
    (6, ("data", "budget", "delta"), "1/" + HUGE),
    (6, ("data", "budget", "epsilon"), HUGE),
    (3, ("data", "of_seq"), 10**40),
    (0, ("seq",), 10**40),
])
def test_extreme_values_do_not_crash(certificate: dict[str, Any], index: int,
                                     path: tuple[str, ...], value: Any) -> None:
    cert = copy.deepcopy(certificate)
    target: Any = cert["entries"][index]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    prev = cert["genesis_hash"]
    for entry in cert["entries"]:
        entry["prev_hash"] = prev
        entry["hash"] = prev = entry_hash(entry)
    cert["head_hash"] = prev
    try:
        report = check_certificate(cert)
    except AccountingError:
        return
    assert not report.ok
