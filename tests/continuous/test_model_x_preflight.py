"""Review 2, defect A: a bad PrivCRT model-X law (``--model-x`` / ``model=``) is refused
in pre-flight -- the law's size against the schema, finite mean, finite symmetric
positive-definite covariance, no overflowing conditional -- before the run is reserved:
a project error, no data value in the message, the ledger's rows unchanged."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import dpcg
from dpcg.citests.crt import GaussianModelX, PrivCRTTest
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.errors import CITestError
from tests.cli.refusals import refused_api, refused_cli, used_ledger
from tests.engine_room import private_run
from tests.hardening.helpers import continuous_table

#: (label, the law's JSON text, a fragment of the error) for the 4-column table.
BAD_LAWS = [
    ("size", '{"mean": [0, 0], "cov": [[1, 0], [0, 1]]}', "one variable per column"),
    ("size-corr", '{"mean": [0, 0], "cov": [[1, 0.9], [0.9, 1]]}', "one variable per"),
    ("too-big", json.dumps({"mean": [0] * 5, "cov": np.eye(5).tolist()}),
     "one variable per column"),
    ("nan-mean", '{"mean": [0, 0, 0, "NaN"], "cov": [[1,0,0,0],[0,1,0,0],[0,0,1,0],'
                 '[0,0,0,1]]}', "mean must be finite"),
    ("nan-literal", '{"mean": [0, 0, 0, NaN], "cov": [[1,0,0,0],[0,1,0,0],[0,0,1,0],'
                    '[0,0,0,1]]}', "mean must be finite"),
    ("inf-cov", '{"mean": [0, 0, 0, 0], "cov": [[1,0,0,0],[0,1,0,0],[0,0,1,0],'
                '[0,0,0,Infinity]]}', "cov must be finite"),
    ("asymmetric", '{"mean": [0, 0, 0, 0], "cov": [[1,0.5,0,0],[0,1,0,0],[0,0,1,0],'
                   '[0,0,0,1]]}', "symmetric"),
    ("indefinite", '{"mean": [0, 0, 0, 0], "cov": [[1,2,0,0],[2,1,0,0],[0,0,1,0],'
                   '[0,0,0,1]]}', "positive definite"),
    ("singular", '{"mean": [0, 0, 0, 0], "cov": [[1,1,0,0],[1,1,0,0],[0,0,1,0],'
                 '[0,0,0,1]]}', "positive definite"),
    ("overflow", '{"mean": [0, 0, 0, 1e308], "cov": [[1,0,0,0],[0,1,0,0],[0,0,1,0],'
                 '[0,0,0,1e308]]}', "overflow"),
    ("ragged", '{"mean": [0, 0, 0, 0], "cov": [[1,0],[0,1,0,0]]}', "model-x"),
]


def _data_values(csv: Path) -> list[str]:
    """The cells of the table's first data row, as written (none may be quoted)."""
    return csv.read_text().splitlines()[1].split(",")


@pytest.mark.parametrize("epsilon", ["200", "1"])
@pytest.mark.parametrize(("label", "law", "fragment"), BAD_LAWS, ids=[b[0] for b in BAD_LAWS])
def test_cli_bad_model_x_is_refused_before_reserving(
        label: str, law: str, fragment: str, epsilon: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    led = used_ledger(tmp_path, capsys)
    mx = tmp_path / "law.json"
    mx.write_text(law)
    argv = ["discover", "--data", str(data), "--schema", str(schema), "--dataset-id",
            "sem4", "--algorithm", "private-ci-pc", "--test", "privcrt", "--epsilon",
            epsilon, "--model-x", str(mx), "--noise-seed", "1", "--quiet",
            "--ledger", str(led)]
    refused_cli(argv, led, CITestError, capsys, fragment=fragment,
                absent=_data_values(data))


def test_api_law_of_the_wrong_size_spends_nothing(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = continuous_table(tmp_path / "shared")
    ds = Dataset.from_csv(data, Schema.from_json(schema))
    led = used_ledger(tmp_path, capsys)
    small = GaussianModelX.from_arrays(np.zeros(2), np.eye(2))
    def run(eps: float) -> Callable[[], object]:
        return lambda: private_run(ds, "private-ci-pc", test="privcrt", epsilon=eps, model=small,
                                   ledger=led, dataset_id="sem4", seed=1)

    for epsilon in (200.0, 1.0):
        refused_api(run(epsilon), led, CITestError, fragment="one variable per column",
                    absent=_data_values(data))
    mx = tmp_path / "law.json"
    mx.write_text(BAD_LAWS[0][1])
    refused_api(lambda: dpcg.discover(
        str(data), schema=str(schema), algorithm="private-ci-pc", test="privcrt",
        epsilon=200.0, model_x=str(mx), ledger=str(led), dataset_id="sem4",
        noise_seed=1), led, CITestError, fragment="one variable per column",
        absent=_data_values(data))


def test_tester_checks_the_law_against_the_columns() -> None:
    values = np.zeros((3, 50))
    bounds = [(-1.0, 1.0)] * 3
    with pytest.raises(CITestError, match="one variable per column"):
        PrivCRTTest(values, bounds, None, 1.0, GaussianModelX.from_arrays(np.zeros(2),
                                                                          np.eye(2)))
    huge = GaussianModelX.from_arrays(np.array([0.0, 0.0, 1e300]), np.eye(3))
    with pytest.raises(CITestError, match="overflow"):
        PrivCRTTest(values, bounds, None, 1.0, huge)
    ok = GaussianModelX.from_arrays(np.zeros(3), np.eye(3) + 0.2)
    assert PrivCRTTest(values, bounds, None, 1.0, ok).model is ok


@pytest.mark.parametrize(("mean", "cov", "fragment"), [
    ((0.0, math.nan), ((1.0, 0.0), (0.0, 1.0)), "mean must be finite"),
    ((0.0, 0.0), ((1.0, 0.0), (0.0, math.inf)), "cov must be finite"),
    ((0.0, 0.0), ((1.0, 0.0),), "p x p"),
    ((), (), "non-empty"),
    ((0.0, 0.0), ((1.0, 0.5), (0.0, 1.0)), "symmetric"),
    ((0.0, 0.0), ((0.0, 0.0), (0.0, 1.0)), "positive definite"),
    ((0.0, 0.0), ((1.0, 1.0), (1.0, 1.0)), "positive definite"),
])
def test_law_is_validated_however_it_is_built(mean: tuple[float, ...],
                                              cov: tuple[tuple[float, ...], ...],
                                              fragment: str) -> None:
    with pytest.raises(CITestError, match=fragment):
        GaussianModelX(mean, cov)
    with pytest.raises(CITestError, match=fragment):
        GaussianModelX.from_arrays(np.asarray(mean), np.asarray(cov, dtype=object))


def test_scale_disparate_but_regular_law_is_accepted() -> None:
    law = GaussianModelX.from_arrays(np.zeros(2), np.diag([1e-6, 1e6]))
    law.check_columns(np.full(2, -5.0), np.full(2, 5.0))
    smp = law.sampler(1, (0,))
    assert all(math.isfinite(c) for c in smp.coef)
    assert smp.sigma > 0
