"""Chunked Parquet writer: tables far larger than RAM, written a chunk at a time.

:func:`write_parquet_chunks` streams ``(p, m)`` code blocks of a discrete schema into one
Parquet file with ``pyarrow.parquet.ParquetWriter``; each block becomes one row group and
is released before the next is produced, so memory is ``O(chunk)`` whatever the total.
Discrete columns are written as dictionary-encoded strings (the declared labels as the
dictionary, the codes as indices): the file holds the labels a user would have, without
ever materialising one string per row. Continuous columns are written as float64.

The bundled-network sampler on top of it is
:func:`dpcg.datasets.parquet_sample.write_sample_parquet`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Continuous, Schema
from dpcg.errors import DataValidationError, MissingDependencyError

__all__ = ["write_parquet_chunks"]


def _pyarrow() -> tuple[Any, Any]:
    try:
        pa = importlib.import_module("pyarrow")  # optional extra, deferred on purpose
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise MissingDependencyError(
            "writing Parquet needs the optional package 'pyarrow'; install it with "
            "`pip install 'dpcg[duckdb]'` (or `pip install pyarrow`)"
        ) from None
    return pa, pq


def write_parquet_chunks(
    schema: Schema,
    chunks: Iterable[NDArray[Any]],
    path: str | os.PathLike[str],
    *,
    compression: str = "zstd",
) -> int:
    """Write blocks of codes (``(p, m_k)`` arrays, column ``j`` in ``schema`` order; float
    values for continuous columns) to ``path``; returns the number of rows written.

    The file is written to ``path + '.partial'`` and renamed at the end, so an interrupted
    run never leaves a truncated file under the final name.
    """
    pa, pq = _pyarrow()
    if not isinstance(schema, Schema):
        raise DataValidationError(f"schema must be a dpcg.data.Schema, got {type(schema)}")
    fields = []
    dictionaries: list[Any] = []
    for col in schema:
        if isinstance(col, Continuous):
            fields.append(pa.field(col.name, pa.float64(), nullable=False))
            dictionaries.append(None)
        else:
            index_type = pa.int8() if col.cardinality <= 127 else pa.int32()
            fields.append(
                pa.field(col.name, pa.dictionary(index_type, pa.string()), nullable=False)
            )
            dictionaries.append(pa.array(list(col.labels), type=pa.string()))
    arrow_schema = pa.schema(fields)
    final = Path(path)
    partial = final.with_name(final.name + ".partial")
    total = 0
    writer = pq.ParquetWriter(str(partial), arrow_schema, compression=compression)
    try:
        for block in chunks:
            arr = np.asarray(block)
            if arr.ndim != 2 or arr.shape[0] != len(schema):
                raise DataValidationError(
                    f"each chunk must be a ({len(schema)}, m) array, got shape {arr.shape}"
                )
            columns = []
            for j, col in enumerate(schema):
                if isinstance(col, Continuous):
                    columns.append(pa.array(arr[j].astype(np.float64)))
                else:
                    index_type = fields[j].type.index_type
                    indices = pa.array(
                        arr[j].astype(np.int8 if index_type == pa.int8() else np.int32)
                    )
                    columns.append(pa.DictionaryArray.from_arrays(indices, dictionaries[j]))
            writer.write_table(pa.Table.from_arrays(columns, schema=arrow_schema))
            total += int(arr.shape[1])
    except BaseException:
        writer.close()
        partial.unlink(missing_ok=True)
        raise
    writer.close()
    os.replace(partial, final)
    return total
