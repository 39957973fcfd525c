"""Every private entry point refuses a dataset whose n came from listwise deletion
(review finding: the Python API's expert door ran such data), before anything is
charged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dpcg
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.errors import DataValidationError
from dpcg.private.ledger import LedgerTarget
from dpcg.private.run import discover_private


def _deleted() -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, 50).astype(object)
    y = rng.integers(0, 2, 50).astype(object)
    x[3] = None
    schema = Schema.from_dict({"columns": [
        {"name": "x", "type": "categorical", "categories": ["0", "1"],
         "missing": {"policy": "drop_rows"}},
        {"name": "y", "type": "categorical", "categories": ["0", "1"]}]})
    data = np.c_[x, y].astype(object)
    data[:, 1] = data[:, 1].astype(str)
    data[[i for i in range(50) if i != 3], 0] = data[[i for i in range(50) if i != 3],
                                                     0].astype(str)
    return Dataset.from_numpy(data, schema, allow_row_deletion=True)


@pytest.mark.parametrize("algorithm", ["laplace-pc", "cov-pc", "marginal-pc"])
def test_deleted_rows_are_refused_by_every_private_door(algorithm: str,
                                                        tmp_path: Path) -> None:
    ds = _deleted()
    assert not ds.n_public
    led = tmp_path / "l.sqlite"
    with pytest.raises(DataValidationError, match="public n"):
        discover_private(ds, algorithm, epsilon=1.0,
                         ledger=LedgerTarget(led, "d", None))
    with pytest.raises(DataValidationError, match="public n"):
        dpcg.discover(ds, algorithm=algorithm, epsilon=1.0, ledger=dpcg.NO_LEDGER)
    assert not led.exists()
