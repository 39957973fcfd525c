"""The budget advisor (dpcg.advise, ``dpcg advise``): public facts in, simulated F1 out;
no data read, nothing charged."""

from __future__ import annotations

import json

import pytest

from dpcg.advise import advise, cardinality_range, epsilon_for
from dpcg.cli import main
from dpcg.errors import AlgorithmError


def test_advice_on_a_small_schema_reports_bands_and_says_it_read_nothing() -> None:
    adv = advise([2, 3, 2, 2, 3, 2], 3_000, epsilons=(1.0, 5.0),
                 algorithms=("laplace-pc", "marginal-pc"), networks=2, max_parents=2)
    assert "no data was read" in adv.note
    assert "no budget was charged" in adv.note
    assert len(adv.rows_table) == 4
    for row in adv.rows_table:
        assert row.runs == 2
        assert row.f1_low <= row.f1 <= row.f1_high
        assert 0.0 <= row.precision <= 1.0
    assert set(adv.epsilon_for_target) == {"laplace-pc", "marginal-pc"}
    again = advise([2, 3, 2, 2, 3, 2], 3_000, epsilons=(1.0, 5.0),
                   algorithms=("laplace-pc", "marginal-pc"), networks=2, max_parents=2)
    assert [r.f1 for r in again.rows_table] == [r.f1 for r in adv.rows_table]


def test_epsilon_for_a_target_interpolates_in_log_epsilon() -> None:
    grid = [(1.0, 0.5), (4.0, 0.9)]
    assert epsilon_for(0.7, grid) == pytest.approx(2.0)
    assert epsilon_for(0.4, grid) == 1.0
    assert epsilon_for(0.95, grid) is None


@pytest.mark.parametrize(("args", "kwargs"), [
    (([2], 100), {}), (([2, 2], 1), {}), (([2, 2], 100), {"epsilons": (0.0,)}),
    (([2, 2], 100), {"max_parents": 0}), (([2, 2], 100), {"networks": 0}),
    (([2, 2], 100), {"target_f1": 1.5}), (([2, 0], 100), {}),
    (([2, 2], 100), {"concentration": 0.0})])
def test_bad_input_is_refused(args: tuple[list[int], int], kwargs: dict[str, object]) -> None:
    with pytest.raises(AlgorithmError):
        advise(*args, **kwargs)  # type: ignore[arg-type]


def test_cardinality_range() -> None:
    assert cardinality_range([1, 3, 5]) == (2, 5)


def test_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--like", "asia", "--rows", "2000", "--epsilon", "2",
                 "--networks", "1", "--algorithms", "laplace-pc", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 8
    assert doc["rows_table"][0]["algorithm"] == "laplace-pc"
    assert "no data was read" in doc["note"]
