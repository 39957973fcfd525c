"""Reading the columns of a table that conforms to a schema (no :class:`Dataset` here:
:class:`~dpcg.data.dataset.Dataset`'s ``from_csv``/``from_pandas``/``from_parquet``
encode what these functions read, and :mod:`dpcg.data.loaders` is the function API).

* :func:`csv_columns` uses the standard library ``csv`` module and NumPy only.
* :func:`pandas_columns` and :func:`parquet_columns` import pandas / pyarrow on first
  use (heavy optional dependencies, deferred on purpose); when they are missing a
  :class:`~dpcg.errors.MissingDependencyError` says what to install.

Columns are matched to the schema by name (header order does not matter), and every
mismatch -- unknown columns, missing columns, duplicate header names -- is an error.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import importlib
import io
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Schema
from dpcg.errors import DataValidationError, MissingDependencyError

__all__ = ["check_schema", "csv_columns", "debug_detail", "match_header", "pandas_columns",
           "parquet_columns", "unsafe_debug_errors"]

#: Whether error messages may quote the data (cell values, row/line numbers, counts).
#: Off by default: an error message is an uncharged release (docs/privacy/threat-model.md).
_UNSAFE_DEBUG: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "dpcg_unsafe_debug_errors", default=False)


@contextlib.contextmanager
def unsafe_debug_errors(enabled: bool = True) -> Iterator[None]:
    """Within this block, data errors quote the offending value, its row/line and counts.

    LOCAL DEBUGGING ONLY: such a message is computed from the data and is not charged to
    any budget (``dpcg discover --unsafe-debug-errors``). Never forward it to anyone the
    data is protected from; nothing it prints reaches ``result.json`` or the ledger.
    """
    token = _UNSAFE_DEBUG.set(bool(enabled))
    try:
        yield
    finally:
        _UNSAFE_DEBUG.reset(token)


def debug_detail(text: str) -> str:
    """``" [unsafe debug: text]"`` under :func:`unsafe_debug_errors`, else ``""`` (a
    message built from the data -- a value, a row or line number, a count -- only
    appears when the user asked for it locally)."""
    return f" [unsafe debug: {text}]" if _UNSAFE_DEBUG.get() else ""


def check_schema(schema: object) -> Schema:
    """``schema`` if it is a :class:`~dpcg.data.schema.Schema`; else the error."""
    if not isinstance(schema, Schema):
        raise DataValidationError(f"schema must be a dpcg.data.Schema, got {type(schema).__name__}")
    return schema


def match_header(header: Sequence[str], schema: Schema, where: str) -> list[int]:
    """Positions in ``header`` of the schema's columns; errors on any mismatch.

    The error names every missing and every extra column: column names are facts about
    the file's layout, the same for every neighbouring dataset (they do not depend on
    any row), so naming them releases nothing about a person.
    """
    seen: dict[str, int] = {}
    for pos, name in enumerate(header):
        if name in seen:
            raise DataValidationError(
                f"{where}: column {name!r} appears twice in the header (rule: every column "
                "once)")
        seen[name] = pos
    unknown = [name for name in header
               if name not in schema.names and name not in schema.ignore]
    missing = [name for name in schema.names if name not in seen]
    if unknown or missing:
        parts = []
        if missing:
            parts.append(f"declared column(s) {missing} are missing from the header")
        if unknown:
            parts.append(f"the header has column(s) the schema does not declare: {unknown} "
                         '(declare them, or list them in the schema\'s "ignore")')
        hint = ""
        if missing and unknown:
            near = _near_misses(missing, unknown)
            if near:
                hint = "; did you mean " + ", ".join(f"{a!r} for {b!r}" for a, b in near) + \
                    " (names must match exactly, case and spaces included)?"
        raise DataValidationError(f"{where}: header does not match the schema (rule: the "
                                  "header names exactly the declared columns): "
                                  + "; ".join(parts) + hint)
    return [seen[name] for name in schema.names]


def _near_misses(missing: Sequence[str], unknown: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs (declared, header) that differ only in case or surrounding spaces."""
    key = {name.strip().casefold(): name for name in unknown}
    return [(name, key[name.strip().casefold()]) for name in missing
            if name.strip().casefold() in key]


def csv_columns(
    path: str | os.PathLike[str],
    schema: Schema,
    *,
    header: bool = True,
    delimiter: str = ",",
) -> tuple[list[list[str]], int]:
    """The fields of a CSV file conforming to ``schema``, one list per schema column, and
    the line number of the first data row (for error messages).

    With ``header=True`` the first line names the columns (any order; they must be
    exactly the schema's columns). Without a header the fields are in schema order.
    Category strings are mapped to codes over the unique values of each column only.
    Values equal to one of :data:`~dpcg.data.dataset.MISSING_TOKENS` (``""``, ``NA``,
    ``NaN``, ...) that are not declared categories are missing values and raise.
    """
    schema = check_schema(schema)
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataValidationError(f"cannot read {where}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataValidationError(f"{where} is not UTF-8 text (rule: CSV files are UTF-8)"
                                  + debug_detail(str(exc))) from None
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise DataValidationError(f"delimiter must be one character, got {delimiter!r}")
    fields, counts = _split(text, delimiter, where)
    if header:
        if counts.size == 0:
            raise DataValidationError(f"{where}: empty file (no header line)")
        width = int(counts[0])
        head = fields[:width]
        order = match_header(head, schema, where)
        first_line = 2
        counts = counts[1:]
        body = fields[width:]
    else:
        width = len(schema)
        order = list(range(width))
        first_line = 1
        body = fields
    if counts.size == 0:
        raise DataValidationError(f"{where}: empty table (no data rows)")
    ragged = counts != width
    if ragged.any():
        row = int(np.argmax(ragged))
        raise DataValidationError(
            f"{where}: a line does not have {width} field(s) (rule: every line has one field "
            "per declared column)"
            + debug_detail(f"line {row + first_line} has {int(counts[row])} field(s)"))
    columns = [body[pos::width] for pos in order]
    return columns, first_line


def _split(text: str, delimiter: str, where: str) -> tuple[list[str], NDArray[np.int64]]:
    """All fields of ``text`` flattened row by row, and the number of fields per line.

    Quote-free text takes a fast path (one ``str.split`` for every field, field counts
    from ``str.count`` mapped in C); anything else goes through the ``csv`` module.
    Trailing empty lines are dropped.
    """
    if '"' not in text:
        simple = text.replace("\r\n", "\n")
        if "\r" not in simple:
            lines = simple.split("\n")
            while lines and lines[-1] == "":
                lines.pop()
            if not lines:
                return [], np.zeros(0, dtype=np.int64)
            counts = np.fromiter(
                map(str.count, lines, itertools.repeat(delimiter)),
                dtype=np.int64,
                count=len(lines),
            )
            return delimiter.join(lines).split(delimiter), counts + 1
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise DataValidationError(
            f"{where}: malformed CSV (rule: RFC 4180 quoting)"
            + debug_detail(f"line {reader.line_num}: {exc}")) from None
    while rows and not rows[-1]:
        rows.pop()
    counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    return list(itertools.chain.from_iterable(rows)), counts


def _optional(module: str, purpose: str, hint: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{purpose} needs the optional package {module.split('.')[0]!r}; install it "
            f"with `{hint}`"
        ) from None


def _pandas_missing(pd: Any, item: object) -> bool:
    """``pd.isna`` of one entry; a signalling NaN (which raises) is missing too."""
    try:
        return bool(pd.isna(item))
    except ArithmeticError:
        return True


def pandas_columns(
    df: Any, schema: Schema
) -> tuple[list[NDArray[Any]], list[NDArray[np.bool_] | None]]:
    """The columns of a pandas ``DataFrame`` whose columns are exactly the schema's
    columns, in schema order, and per column the mask of its missing entries (``NaN``,
    ``None``, ``pd.NA``, ``NaT``; ``None`` when there are none). Whether a missing entry
    is accepted is the column's missing policy's decision (:class:`~dpcg.data.Dataset`)."""
    schema = check_schema(schema)
    pd = _optional("pandas", "Dataset.from_pandas", "pip install pandas")
    if not isinstance(df, pd.DataFrame):
        raise DataValidationError(f"expected a pandas DataFrame, got {type(df).__name__}")
    header = [str(c) for c in df.columns]
    order = match_header(header, schema, "DataFrame")
    arrays = []
    masks: list[NDArray[np.bool_] | None] = []
    for pos in order:
        series = df.iloc[:, pos]
        try:
            missing = np.asarray(series.isna().to_numpy(), dtype=bool)
        except ArithmeticError:  # a Decimal('sNaN') refuses even pandas' NaN test
            missing = np.fromiter((_pandas_missing(pd, v) for v in series.tolist()),
                                  dtype=bool, count=len(series))
        masks.append(missing if missing.any() else None)
        kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else "O"
        arrays.append(series.to_numpy() if kind in "iufb" else series.to_numpy(dtype=object))
    return arrays, masks


def parquet_columns(
    path: str | os.PathLike[str], schema: Schema
) -> tuple[list[NDArray[Any]], list[NDArray[np.bool_] | None]]:
    """The columns of a Parquet file via pyarrow (or pandas if pyarrow is absent), in
    schema order, and per column the mask of its nulls (``None`` when there are none)."""
    schema = check_schema(schema)
    where = str(path)
    if not Path(path).is_file():
        raise DataValidationError(f"cannot read {where}: no such file")
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        pd = _optional(
            "pandas", "Dataset.from_parquet", "pip install pyarrow  (or pandas with fastparquet)"
        )
        try:
            df = pd.read_parquet(path)
        except ImportError:
            raise MissingDependencyError(
                "Dataset.from_parquet needs the optional package 'pyarrow'; install it with "
                "`pip install pyarrow`"
            ) from None
        return pandas_columns(df, schema)
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError types
        raise DataValidationError(f"cannot read Parquet file {where}: {exc}") from None
    order = match_header([str(c) for c in table.column_names], schema, where)
    arrays = []
    masks: list[NDArray[np.bool_] | None] = []
    for pos in order:
        chunked = table.column(pos)
        mask = None
        if chunked.null_count:
            mask = np.asarray(chunked.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        masks.append(mask)
        arrays.append(np.asarray(chunked.to_numpy(zero_copy_only=False)))
    return arrays, masks
