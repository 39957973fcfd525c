"""dpcg.discover: one entry point for every kind of data and every algorithm."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dpcg
from dpcg.data.dataset import Dataset
from dpcg.datasets import load_network
from dpcg.errors import AlgorithmError, DataValidationError, SchemaError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def asia() -> Dataset:
    return load_network("asia").sample(4000, 0)


@pytest.fixture(scope="module")
def frame(asia: Dataset):  # type: ignore[no-untyped-def]
    return pd.DataFrame({n: asia.labels(n) for n in asia.names})


def test_every_input_kind_gives_the_same_graph(asia: Dataset, frame, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ref = dpcg.discover(asia)
    frame.to_csv(tmp_path / "asia.csv", index=False)
    for data, kw in ((frame, {}), (np.asarray(frame), {"columns": list(frame.columns)}),
                     (tmp_path / "asia.csv", {}), (str(tmp_path / "asia.csv"), {}),
                     (frame, {"schema": asia.schema})):
        res = dpcg.discover(data, **kw)
        assert res.cpdag.skeleton() == ref.cpdag.skeleton()
        assert res.guarantee is None
        assert res.ledger is None


def test_result_shape_matches_cli(asia: Dataset, tmp_path: Path) -> None:
    from dpcg.cli import main

    ref = dpcg.discover(asia).to_json()
    asia.to_csv(tmp_path / "t.csv")
    (tmp_path / "s.json").write_text(json.dumps(asia.schema.to_dict()))
    assert main(["discover", "--data", str(tmp_path / "t.csv"), "--schema",
                 str(tmp_path / "s.json"), "--out", str(tmp_path / "r.json"), "--quiet"]) == 0
    cli = json.loads((tmp_path / "r.json").read_text())
    assert set(cli) == set(ref)
    assert cli["edges"] == ref["edges"]
    g = dpcg.discover(asia).graph
    assert set(g.nodes) == set(asia.names)


def test_private_needs_declared_schema(frame) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SchemaError, match="DECLARED schema"):
        dpcg.discover(frame, algorithm="laplace-pc", epsilon=1.0, ledger=dpcg.NO_LEDGER)


def test_private_ledger_policy(asia: Dataset, tmp_path: Path) -> None:
    with pytest.raises(AlgorithmError, match="dataset_id"):
        dpcg.discover(asia, algorithm="laplace-pc", epsilon=1.0)
    led = tmp_path / "l.sqlite"
    res = dpcg.discover(asia, algorithm="laplace-pc", epsilon=1.0, ledger=led,
                        dataset_id="asia", noise_seed=1)
    assert res.guarantee is not None
    assert res.ledger is not None
    assert led.exists()
    doc = res.to_json()
    assert doc["privacy"] == res.guarantee
    mem = dpcg.discover(asia, algorithm="laplace-pc", epsilon=1.0, ledger=dpcg.NO_LEDGER,
                        noise_seed=1)
    assert mem.ledger is None


def test_errors_say_what_to_do(asia: Dataset) -> None:
    with pytest.raises(AlgorithmError, match="only apply to a private"):
        dpcg.discover(asia, epsilon=1.0)
    with pytest.raises(AlgorithmError, match="not an option"):
        dpcg.discover(asia, bogus=3)
    with pytest.raises(AlgorithmError, match="epsilon"):
        dpcg.discover(asia, algorithm="svt-pc", ledger=None)
    with pytest.raises(SchemaError, match="columns="):
        dpcg.discover(np.zeros((5, 2)))
    with pytest.raises(DataValidationError, match="no such file"):
        dpcg.discover("/nonexistent.csv")
    with pytest.raises(DataValidationError, match="cannot use"):
        dpcg.discover(42)


def test_import_dpcg_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, dpcg; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
