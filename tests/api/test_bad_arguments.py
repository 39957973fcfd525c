"""Review 2, defects E, F and G through the Python API (and G through the CLI): an
``epsilon`` beyond the float range, a ``ledger`` that is not a path, and a dataset id
the ledger refuses are project errors, and nothing is reserved: the ledger's rows are
unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dpcg
from accounting.errors import AccountingError
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError
from dpcg.private.contract import RunSettings
from dpcg.private.ledger import LedgerTarget
from dpcg.private.run import discover_private
from tests.cli.refusals import SEED_RUN, refused_api, refused_cli, used_ledger
from tests.hardening.helpers import cli

pd = pytest.importorskip("pandas")

HUGE = 10**400
HUGE_TEXT = "1" + "0" * 20


@pytest.fixture(scope="module")
def asia() -> Dataset:
    return load_network("asia").sample(1000, 0)


@pytest.fixture(scope="module")
def frame(asia: Dataset):  # type: ignore[no-untyped-def]
    return pd.DataFrame({n: asia.labels(n) for n in asia.names})


# --------------------------------------------------------------- E: epsilon=10**400


@pytest.mark.parametrize("field", ["epsilon", "delta"])
def test_run_settings_refuse_ints_beyond_float_range(field: str) -> None:
    kwargs: dict[str, object] = {"epsilon": 1.0, "delta": 0.0, "test": "g2"}
    kwargs[field] = HUGE
    with pytest.raises(AlgorithmError, match=field) as info:
        RunSettings(**kwargs)  # type: ignore[arg-type]
    assert HUGE_TEXT not in str(info.value)
    kwargs[field] = 10**5000  # too long even for repr(): still a clean error
    with pytest.raises(AlgorithmError, match=field):
        RunSettings(**kwargs)  # type: ignore[arg-type]


def test_discover_private_huge_epsilon_reserves_nothing(
        asia: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    target = LedgerTarget(led, "asia-1000")
    refused_api(lambda: discover_private(asia, "laplace-pc", epsilon=HUGE, ledger=target),
                led, AlgorithmError, fragment="epsilon", absent=[HUGE_TEXT])
    refused_api(lambda: dpcg.discover(asia, algorithm="laplace-pc", epsilon=HUGE,
                                      ledger=str(led), dataset_id="asia-1000"),
                led, AlgorithmError, fragment="epsilon", absent=[HUGE_TEXT])


def test_dpcg_discover_huge_epsilon_reserves_nothing(  # type: ignore[no-untyped-def]
        frame, asia: Dataset, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)

    def run(**kw: Any) -> Callable[[], object]:
        return lambda: dpcg.discover(frame, schema=asia.schema, algorithm="laplace-pc",
                                     ledger=str(led), dataset_id="asia-1000", **kw)

    for kwargs in ({"epsilon": HUGE}, {"epsilon": 1.0, "delta": HUGE},
                   {"epsilon": "1"}):
        refused_api(run(**kwargs), led, AlgorithmError, absent=[HUGE_TEXT])


# ----------------------------------------------------------------- F: ledger=123


@pytest.mark.parametrize("ledger", [123, 1.5, b"ledger.sqlite", ["l.sqlite"]])
def test_ledger_that_is_not_a_path(ledger: object, frame, asia: Dataset,  # type: ignore[no-untyped-def]
                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "default.sqlite"
    monkeypatch.setenv("DPCG_LEDGER", str(default))
    with pytest.raises(AlgorithmError, match="ledger") as info:
        dpcg.discover(frame, schema=asia.schema, algorithm="laplace-pc", epsilon=1.0,
                      ledger=ledger, dataset_id="asia-1000")  # type: ignore[arg-type]
    assert "TypeError" not in str(info.value)
    with pytest.raises(AlgorithmError, match="ledger"):  # a Dataset: the same refusal
        dpcg.discover(asia, algorithm="laplace-pc", epsilon=1.0, ledger=ledger,  # type: ignore[arg-type]
                      dataset_id="asia-1000")
    assert list(tmp_path.iterdir()) == []  # no ledger file anywhere


# ------------------------------------------------------------ G: --dataset-id > 200


LONG_ID = "d" * 201


def test_long_dataset_id_on_a_used_ledger(frame, asia: Dataset,  # type: ignore[no-untyped-def]
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    led = used_ledger(tmp_path, capsys)
    refused_cli([*SEED_RUN, "--ledger", str(led), "--dataset-id", LONG_ID], led,
                AccountingError, capsys, fragment="dataset_id")
    refused_api(lambda: dpcg.discover(frame, schema=asia.schema, algorithm="laplace-pc",
                                      epsilon=1.0, ledger=str(led), dataset_id=LONG_ID),
                led, AccountingError, fragment="dataset_id")


def test_long_dataset_id_leaves_no_ledger_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    led = tmp_path / "fresh.sqlite"
    got = cli([*SEED_RUN, "--ledger", str(led), "--dataset-id", LONG_ID], capsys)
    assert got.code == 2
    assert not led.exists()
