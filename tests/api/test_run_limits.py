"""The front door's run limits (issue 59): --max-seconds / --max-memory end a run with
the graph so far and a message; a private run decides from a public test budget (its
spend stands); --workers is non-private only and changes no result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dpcg
from dpcg.cli import main
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError


@pytest.fixture(scope="module")
def alarm() -> Dataset:
    return load_network("alarm").sample(5000, 0)


def test_private_memory_limit_stops_on_a_public_test_budget(alarm: Dataset,
                                                            tmp_path: Path) -> None:
    full = dpcg.discover(alarm, algorithm="laplace-pc", epsilon=1.0, noise_seed=3,
                         ledger=dpcg.NO_LEDGER)
    assert "stopped" not in full.document
    # 300 MiB of base plus a few hundred tests of 1 KiB each (public cost model)
    cut = dpcg.discover(alarm, algorithm="laplace-pc", epsilon=1.0, noise_seed=3,
                        ledger=dpcg.NO_LEDGER, max_memory="300.5MiB")
    stopped = cut.document["stopped"]
    assert stopped["limit"] == "max_memory"
    assert cut.pc.n_tests < full.pc.n_tests
    assert "graph so far" in cut.document["message"]
    assert cut.document["spent"]["epsilon"] <= 1.0


def test_nonprivate_time_limit_and_workers(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["discover", "--dataset", "alarm", "--rows", "5000", "--max-seconds",
                 "1e-6", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["stopped"]["limit"] == "max_seconds"
    assert "stopped:" in capsys.readouterr().err
    one, two = tmp_path / "1.json", tmp_path / "2.json"
    assert main(["discover", "--dataset", "asia", "--rows", "3000", "--quiet", "--out",
                 str(one)]) == 0
    assert main(["discover", "--dataset", "asia", "--rows", "3000", "--quiet", "--workers",
                 "2", "--out", str(two)]) == 0
    assert json.loads(one.read_text())["edges"] == json.loads(two.read_text())["edges"]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"algorithm": "laplace-pc", "epsilon": 1.0, "workers": 2}, "non-private"),
    ({"max_memory": "lots"}, "max_memory"),
    ({"max_seconds": -1.0}, "max_seconds"),
])
def test_bad_limits_are_refused(alarm: Dataset, kwargs: dict[str, object],
                                fragment: str) -> None:
    with pytest.raises(AlgorithmError, match=fragment):
        dpcg.discover(alarm, ledger=dpcg.NO_LEDGER, **kwargs)  # type: ignore[arg-type]
