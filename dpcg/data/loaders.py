"""Reading tables into :class:`~dpcg.data.dataset.Dataset` objects (function API).

* :func:`read_csv` uses the standard library ``csv`` module and NumPy only.
* :func:`read_pandas` and :func:`read_parquet` import pandas / pyarrow lazily; when
  they are missing a :class:`~dpcg.errors.MissingDependencyError` says what to install.

Columns are matched to the schema by name (header order does not matter), and every
mismatch -- unknown columns, missing columns, duplicate header names -- is an error.
The column readers are in :mod:`dpcg.data.readers`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from dpcg.data.dataset import Dataset, in_file
from dpcg.data.readers import match_header
from dpcg.data.schema import Schema
from dpcg.errors import DataValidationError

__all__ = ["load_table", "match_header", "read_csv", "read_pandas", "read_parquet"]


def read_csv(
    path: str | os.PathLike[str],
    schema: Schema,
    *,
    header: bool = True,
    clip: bool = False,
    delimiter: str = ",",
    allow_row_deletion: bool = False,
) -> Dataset:
    """Load a CSV file conforming to ``schema``.

    With ``header=True`` the first line names the columns (any order; they must be
    exactly the schema's columns). Without a header the fields are in schema order.
    Category strings are mapped to codes over the unique values of each column only.
    Values equal to one of :data:`~dpcg.data.dataset.MISSING_TOKENS` (``""``, ``NA``,
    ``NaN``, ...) that are not declared categories are missing values and raise.
    """
    return Dataset.from_csv(path, schema, header=header, clip=clip, delimiter=delimiter,
                            allow_row_deletion=allow_row_deletion)


def read_pandas(df: Any, schema: Schema, *, clip: bool = False,
                allow_row_deletion: bool = False) -> Dataset:
    """Load a pandas ``DataFrame`` whose columns are exactly the schema's columns."""
    return Dataset.from_pandas(df, schema, clip=clip, allow_row_deletion=allow_row_deletion)


def read_parquet(path: str | os.PathLike[str], schema: Schema, *, clip: bool = False,
                 allow_row_deletion: bool = False) -> Dataset:
    """Load a Parquet file via pyarrow (or pandas if pyarrow is absent)."""
    return Dataset.from_parquet(path, schema, clip=clip, allow_row_deletion=allow_row_deletion)


def load_table(
    path: str | os.PathLike[str], schema: Schema, *, clip: bool = False,
    allow_row_deletion: bool = False,
) -> Dataset:
    """Load ``path`` by its suffix: ``.csv`` (header required), ``.parquet``/``.pq``,
    ``.npy`` (an ``(n, p)`` array of labels or numbers).

    ``allow_row_deletion`` permits a ``drop_rows`` missing policy: NON-PRIVATE runs only
    (``n`` then depends on the data; docs/privacy/missing-values.md).
    """
    suffix = Path(path).suffix.lower()
    rows = allow_row_deletion
    if suffix in {".csv", ".txt"}:
        return read_csv(path, schema, clip=clip, allow_row_deletion=rows)
    if suffix == ".tsv":
        return read_csv(path, schema, clip=clip, delimiter="\t", allow_row_deletion=rows)
    if suffix in {".parquet", ".pq"}:
        return read_parquet(path, schema, clip=clip, allow_row_deletion=rows)
    if suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataValidationError(f"cannot read {path}: {exc}") from None
        with in_file(path):
            return Dataset.from_numpy(array, schema, clip=clip, allow_row_deletion=rows)
    raise DataValidationError(
        f"cannot tell the format of {path}: use a .csv, .tsv, .parquet or .npy file"
    )
