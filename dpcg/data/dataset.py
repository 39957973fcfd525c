"""The encoded, validated table that every statistic reads.

A :class:`Dataset` pairs a :class:`~dpcg.data.schema.Schema` with the encoded data:

* discrete (categorical / ordinal) columns hold integer codes -- the position of the
  value in the declared category list -- in the smallest unsigned dtype that fits the
  largest cardinality (``uint8`` up to 256 categories, then ``uint16``, ``uint32``);
* continuous columns hold ``float64`` values inside their declared bounds.

Storage is column-major: all discrete columns form one C-contiguous ``(p, n)`` array
(each variable's codes are contiguous), all continuous columns another. For an
all-discrete table :attr:`Dataset.codes` is that array; for an all-continuous one
:attr:`Dataset.values`; mixed tables are read column by column with
:meth:`Dataset.column`. The arrays are read-only: a dataset never changes after it is
built, and :meth:`Dataset.select` / :meth:`Dataset.subset_rows` return new datasets.

Nothing here looks at the data to decide anything public: categories, bounds and the
encoding all come from the schema.
"""

from __future__ import annotations

import contextlib
import csv
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcg.data.readers import (
    check_schema,
    csv_columns,
    debug_detail,
    pandas_columns,
    parquet_columns,
)
from dpcg.data.schema import Categorical, Continuous, Ordinal, Schema
from dpcg.errors import DataValidationError, DpcgError

__all__ = ["MISSING_TOKENS", "DataClippingWarning", "Dataset", "code_dtype", "in_file"]

#: Strings read as "missing" (unless a column declares them as a category).
MISSING_TOKENS = frozenset({"", "NA", "N/A", "NaN", "nan", "NAN", "null", "NULL", "None"})

Codes = NDArray[np.unsignedinteger[Any]]
Floats = NDArray[np.float64]


class DataClippingWarning(UserWarning):
    """Continuous values were clipped to their declared bounds (``clip=True``)."""


def code_dtype(cardinalities: Sequence[int]) -> np.dtype[np.unsignedinteger[Any]]:
    """Smallest unsigned dtype holding codes ``0 .. max(cardinalities) - 1``."""
    top = max(cardinalities, default=1)
    if top <= 256:
        return np.dtype(np.uint8)
    if top <= 65536:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32)


def _where(row: int, line_offset: int | None) -> str:
    """Row (and line) of an offending entry: only ever passed to :func:`debug_detail`."""
    text = f"row {row}"
    if line_offset is not None:
        text += f" (line {row + line_offset})"
    return text


#: Error messages name the column and the rule, never a value, a row or a count (those
#: appear only under ``unsafe_debug_errors``; see docs/privacy/threat-model.md).
_MISSING_RULE = "a value is missing (rule: no missing values; declare the token as a category " \
    "if it is one)"


@contextlib.contextmanager
def in_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """Name the file in a :class:`DataValidationError` raised inside the block (the
    message names the column and the rule; this adds which file)."""
    where = str(path)
    try:
        yield
    except DataValidationError as exc:
        text = str(exc)
        if text.startswith(where):
            raise
        raise DataValidationError(f"{where}: {text}") from None


def _readonly(array: NDArray[Any]) -> NDArray[Any]:
    array.flags.writeable = False
    return array


# ---------------------------------------------------------------------------------------
# Column encoders (vectorised; Python loops run over unique values or on error paths only)
# ---------------------------------------------------------------------------------------


def _missing_mask(raw: NDArray[Any]) -> NDArray[np.bool_]:
    """Entries that are missing in a non-string array (None, NaN)."""
    if raw.dtype.kind == "f" or raw.dtype.kind == "c":
        nan: NDArray[np.bool_] = np.isnan(raw)
        return nan
    if raw.dtype.kind == "O":
        with np.errstate(invalid="ignore"):
            try:
                mask: NDArray[np.bool_] = np.asarray((raw == None) | (raw != raw), dtype=bool)  # noqa: E711
            except ArithmeticError:  # e.g. Decimal('sNaN') refuses to compare
                mask = np.fromiter((_is_missing(v) for v in raw.reshape(-1).tolist()),
                                   dtype=bool, count=raw.size).reshape(raw.shape)
            return mask
    return np.zeros(raw.shape, dtype=bool)


def _is_missing(item: object) -> bool:
    """``None`` or a NaN (a signalling NaN, which refuses every comparison, included)."""
    if item is None:
        return True
    try:
        return bool(item != item)
    except ArithmeticError:
        return True


def _label_strings(raw: NDArray[Any], name: str, line_offset: int | None) -> NDArray[np.str_]:
    """Convert a raw column to label strings; raises on None/NaN entries."""
    if raw.dtype.kind in "US":
        return raw.astype(str, copy=False)
    missing = _missing_mask(raw)
    if missing.any():
        row = int(np.argmax(missing))
        raise DataValidationError(
            f"column {name!r}: {_MISSING_RULE}"
            + debug_detail(f"{raw[row]!r} at {_where(row, line_offset)}"))
    if raw.dtype.kind == "f":
        if np.all(raw == np.floor(raw)) and np.all(np.abs(raw) < 2.0**53):
            return raw.astype(np.int64).astype(str)
        return raw.astype(str)
    if raw.dtype.kind == "O":
        # bool/float/int objects: use str(); integral floats become e.g. "1.0" and are
        # then reported as unknown categories, which is the honest outcome.
        try:
            return raw.astype(str)
        except ValueError:  # an int too long for str(): no declared label is that long
            raise DataValidationError(
                f"column {name!r}: a value is not one of the declared categories (rule: "
                "categorical values must be declared in the schema)") from None
    return raw.astype(str)


def encode_labels(
    raw: ArrayLike,
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
) -> Codes:
    """Codes of the labels in ``raw`` (1-D), mapped via the unique values only."""
    arr = np.asarray(raw)
    labels = _label_strings(arr, column.name, line_offset)
    uniques, inverse = np.unique(labels, return_inverse=True)
    lookup = {label: code for code, label in enumerate(column.labels)}
    table = np.empty(len(uniques), dtype=dtype)
    for k, value in enumerate(uniques.tolist()):
        code = lookup.get(value)
        if code is None:
            row = int(np.argmax(inverse.reshape(-1) == k))
            _raise_unknown(column, value, row, line_offset)
        table[k] = code
    return np.asarray(table[inverse.reshape(-1)], dtype=dtype)


def encode_label_strings(
    values: Sequence[str],
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
) -> Codes:
    """Codes of a column given as a list of label strings (the CSV path).

    Distinct values are numbered with one C-level dict pass (``dict.fromkeys``), the
    row ids are gathered with ``np.fromiter``, and the category lookup runs over the
    distinct values only.
    """
    ids_of = {value: k for k, value in enumerate(dict.fromkeys(values))}
    n = len(values)
    ids = np.fromiter(map(ids_of.__getitem__, values), dtype=np.intp, count=n)
    lookup = {label: code for code, label in enumerate(column.labels)}
    table = np.empty(len(ids_of), dtype=dtype)
    for value, k in ids_of.items():
        code = lookup.get(value)
        if code is None:
            row = int(np.argmax(ids == k))
            _raise_unknown(column, value, row, line_offset)
        table[k] = code
    return np.asarray(table[ids], dtype=dtype)


def _raise_unknown(
    column: Categorical | Ordinal, value: str, row: int, line_offset: int | None
) -> None:
    detail = debug_detail(f"value {value!r} at {_where(row, line_offset)}")
    if value in MISSING_TOKENS:
        raise DataValidationError(f"column {column.name!r}: {_MISSING_RULE}" + detail)
    raise DataValidationError(
        f"column {column.name!r}: a value is not one of the declared categories "
        f"{list(column.labels)} (rule: categorical values must be declared in the schema)"
        + detail)


def parse_float_strings(
    values: Sequence[str], column: Continuous, *, line_offset: int | None = None
) -> Floats:
    """Float values of a column given as strings (the CSV path); no bounds check."""
    try:
        return np.fromiter(map(float, values), dtype=np.float64, count=len(values))
    except ValueError:
        pass
    for row, item in enumerate(values):
        detail = debug_detail(f"value {item!r} at {_where(row, line_offset)}")
        if item in MISSING_TOKENS:
            raise DataValidationError(f"column {column.name!r}: {_MISSING_RULE}" + detail)
        try:
            float(item)
        except ValueError:
            raise DataValidationError(
                f"column {column.name!r}: a value is not a number (rule: continuous "
                "columns hold numbers)" + detail) from None
    raise DataValidationError(f"column {column.name!r}: values are not numeric")  # pragma: no cover


def validate_codes(
    raw: ArrayLike,
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
) -> Codes:
    """Check pre-encoded integer codes against the column's cardinality."""
    arr = np.asarray(raw)
    name = column.name
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)
            except OverflowError:  # an int (or fraction) beyond the float range
                raise DataValidationError(
                    f"column {name!r}: a code is outside 0..{column.cardinality - 1} (rule: "
                    f"codes index the {column.cardinality} declared categories)") from None
            except (TypeError, ValueError, ArithmeticError):
                raise DataValidationError(
                    f"column {name!r}: encoded codes must be integers, got non-numeric values"
                ) from None
        else:
            raise DataValidationError(
                f"column {name!r}: encoded codes must be integers, got dtype {arr.dtype}"
            )
    if arr.dtype.kind == "f":
        bad = np.isnan(arr)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataValidationError(
                f"column {name!r}: {_MISSING_RULE}"
                + debug_detail(f"nan at {_where(row, line_offset)}"))
        frac = arr != np.floor(arr)
        if frac.any():
            row = int(np.argmax(frac))
            raise DataValidationError(
                f"column {name!r}: a code is not an integer (rule: encoded codes are "
                "integers)" + debug_detail(f"code {arr[row]!r} at {_where(row, line_offset)}"))
    card = column.cardinality
    out_of_range = (arr < 0) | (arr >= card)
    if out_of_range.any():
        row = int(np.argmax(out_of_range))
        value = arr[row].item()
        raise DataValidationError(
            f"column {name!r}: a code is outside 0..{card - 1} (rule: codes index the "
            f"{card} declared categories)"
            + debug_detail(f"code {value!r} at {_where(row, line_offset)}"))
    return arr.astype(dtype)


def encode_continuous(
    raw: ArrayLike,
    column: Continuous,
    *,
    clip: bool = False,
    line_offset: int | None = None,
) -> tuple[Floats, int]:
    """Float values of a continuous column, checked against the declared bounds.

    Returns ``(values, number_clipped)``. Out-of-bounds values raise unless ``clip``.
    """
    arr = np.asarray(raw)
    name = column.name
    if arr.dtype.kind in "US" or arr.dtype.kind == "O":
        if arr.dtype.kind in "US":
            text = arr.astype(str, copy=False)
            missing = np.isin(text, list(MISSING_TOKENS))
        else:
            missing = _missing_mask(arr)
        if missing.any():
            row = int(np.argmax(missing))
            raise DataValidationError(
                f"column {name!r}: {_MISSING_RULE}"
                + debug_detail(f"{arr[row]!r} at {_where(row, line_offset)}"))
        try:
            values = arr.astype(np.float64)
        except (TypeError, ValueError, ArithmeticError):
            values = _floats_of_objects(arr, name, line_offset)
    elif arr.dtype.kind in "iuf" and arr.dtype.kind != "b":
        values = arr.astype(np.float64)
    else:
        raise DataValidationError(
            f"column {name!r}: continuous values must be numeric, got dtype {arr.dtype}"
        )
    return check_bounds(values, column, clip=clip, line_offset=line_offset)


def check_bounds(
    values: Floats, column: Continuous, *, clip: bool = False, line_offset: int | None = None
) -> tuple[Floats, int]:
    """Reject NaN; reject (or, with ``clip``, clip) values outside the declared bounds."""
    name = column.name
    nan = np.isnan(values)
    if nan.any():
        row = int(np.argmax(nan))
        raise DataValidationError(
            f"column {name!r}: {_MISSING_RULE}"
            + debug_detail(f"nan at {_where(row, line_offset)}"))
    outside = (values < column.lower) | (values > column.upper)
    n_out = int(np.count_nonzero(outside))
    if n_out and not clip:
        row = int(np.argmax(outside))
        raise DataValidationError(
            f"column {name!r}: a value is outside the declared bounds "
            f"[{column.lower!r}, {column.upper!r}] (rule: continuous values lie within "
            "their bounds); fix the data or the schema, or load with clip=True to clip to "
            "the bounds"
            + debug_detail(f"value {values[row]!r} at {_where(row, line_offset)}; "
                           f"{n_out} value(s) out of bounds"))
    if n_out:
        values = np.clip(values, column.lower, column.upper)
    return np.ascontiguousarray(values, dtype=np.float64), n_out


def _floats_of_objects(arr: NDArray[Any], name: str, line_offset: int | None) -> Floats:
    """Slow path of an object column ``astype`` refused: convert entry by entry. An exact
    number beyond the float range (a huge ``int``, ``Fraction``) becomes ``+-inf``, so the
    bounds rule refuses it (or ``clip`` clips it); anything else that is not a number
    raises, naming the column and the rule."""
    out = np.empty(arr.shape[0], dtype=np.float64)
    for row, item in enumerate(arr.tolist()):
        try:
            if isinstance(item, bool):
                raise TypeError
            try:
                out[row] = float(item)
            except OverflowError:
                out[row] = np.inf if item > 0 else -np.inf
        except (TypeError, ValueError, ArithmeticError):
            raise DataValidationError(
                f"column {name!r}: a value is not a number (rule: continuous columns hold "
                "numbers)" + debug_detail(f"value {item!r} at {_where(row, line_offset)}")
            ) from None
    return out


# ---------------------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------------------


class Dataset:
    """A validated table: a schema plus encoded, read-only column-major arrays.

    Build one with :meth:`from_csv`, :meth:`from_numpy`, :meth:`from_codes`,
    :meth:`from_pandas` or :meth:`from_parquet`; the constructor itself trusts its
    arguments.
    """

    __slots__ = ("_cont", "_disc", "_n", "_slots", "schema")

    def __init__(
        self,
        schema: Schema,
        discrete: Codes | None,
        continuous: Floats | None,
        n: int,
    ) -> None:
        self.schema = schema
        self._n = n
        slots: list[tuple[bool, int]] = []
        n_disc = n_cont = 0
        for col in schema:
            if col.is_discrete:
                slots.append((True, n_disc))
                n_disc += 1
            else:
                slots.append((False, n_cont))
                n_cont += 1
        self._slots = tuple(slots)
        self._disc = _readonly(discrete) if discrete is not None and n_disc else None
        self._cont = _readonly(continuous) if continuous is not None and n_cont else None

    # -- metadata ----------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of rows."""
        return self._n

    @property
    def p(self) -> int:
        """Number of columns."""
        return len(self.schema)

    @property
    def names(self) -> tuple[str, ...]:
        return self.schema.names

    @property
    def cardinalities(self) -> tuple[int | None, ...]:
        """Declared number of categories per column (``None`` for continuous columns)."""
        return self.schema.cardinalities

    @property
    def is_discrete(self) -> bool:
        return self.schema.is_discrete

    @property
    def is_continuous(self) -> bool:
        return self.schema.is_continuous

    def index(self, name: str) -> int:
        """Position of the column called ``name``."""
        return self.schema.index(name)

    def __repr__(self) -> str:
        kinds = "discrete" if self.is_discrete else "continuous" if self.is_continuous else "mixed"
        return f"Dataset(n={self._n}, p={self.p}, {kinds}, columns={list(self.names)})"

    # -- arrays ------------------------------------------------------------------------
    @property
    def codes(self) -> Codes:
        """``(p, n)`` C-contiguous unsigned codes (all-discrete datasets only)."""
        if not self.is_discrete or self._disc is None:
            raise DataValidationError(
                "Dataset.codes needs an all-discrete dataset; continuous columns: "
                f"{[c.name for c in self.schema if not c.is_discrete]} (use column(j))"
            )
        return self._disc

    @property
    def values(self) -> Floats:
        """``(p, n)`` C-contiguous float64 values (all-continuous datasets only)."""
        if not self.is_continuous or self._cont is None:
            raise DataValidationError(
                "Dataset.values needs an all-continuous dataset; discrete columns: "
                f"{[c.name for c in self.schema if c.is_discrete]} (use column(j))"
            )
        return self._cont

    def column(self, j: int | str) -> NDArray[Any]:
        """Column ``j`` (position or name): codes for discrete, float64 for continuous."""
        pos = self.schema.positions([j])[0]
        discrete, k = self._slots[pos]
        block = self._disc if discrete else self._cont
        assert block is not None
        out: NDArray[Any] = block[k]
        return out

    def labels(self, j: int | str) -> NDArray[np.str_]:
        """Column ``j`` decoded to its category labels (discrete columns only)."""
        pos = self.schema.positions([j])[0]
        col = self.schema.columns[pos]
        if isinstance(col, Continuous):
            raise DataValidationError(f"column {col.name!r} is continuous; it has no labels")
        out: NDArray[np.str_] = np.asarray(col.labels)[self.column(pos)]
        return out

    # -- derived datasets --------------------------------------------------------------
    def select(self, columns: Sequence[int | str]) -> Dataset:
        """A dataset with only ``columns`` (names or positions), in that order."""
        positions = self.schema.positions(columns)
        schema = Schema([self.schema.columns[j] for j in positions])
        disc_rows = [self._slots[j][1] for j in positions if self._slots[j][0]]
        cont_rows = [self._slots[j][1] for j in positions if not self._slots[j][0]]
        disc = None
        if disc_rows:
            assert self._disc is not None
            cards = [c.cardinality for c in schema if c.cardinality is not None]
            disc = np.ascontiguousarray(self._disc[disc_rows], dtype=code_dtype(cards))
        cont = None
        if cont_rows:
            assert self._cont is not None
            cont = np.ascontiguousarray(self._cont[cont_rows])
        return Dataset(schema, disc, cont, self._n)

    def subset_rows(self, indices: ArrayLike) -> Dataset:
        """A dataset with the rows ``indices`` (integer positions, repeats allowed).

        A boolean mask of length ``n`` is accepted too. Uses one fancy-indexing take
        along axis 1 per storage block.
        """
        idx = np.asarray(indices)
        if idx.dtype.kind == "b":
            if idx.shape != (self._n,):
                raise DataValidationError(
                    f"subset_rows: boolean mask has shape {idx.shape}, expected ({self._n},)"
                )
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise DataValidationError(
                f"subset_rows: indices must be a 1-D integer array, got shape {idx.shape} "
                f"and dtype {idx.dtype}"
            )
        if idx.size == 0:
            raise DataValidationError("subset_rows: no rows selected (empty table)")
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self._n:
            bad = lo if lo < 0 else hi
            raise DataValidationError(
                f"subset_rows: row index {bad} out of range 0..{self._n - 1}"
            )
        disc = None if self._disc is None else np.take(self._disc, idx, axis=1)
        cont = None if self._cont is None else np.take(self._cont, idx, axis=1)
        return Dataset(self.schema, disc, cont, int(idx.size))

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def from_codes(cls, codes: ArrayLike, schema: Schema) -> Dataset:
        """An all-discrete dataset from a ``(p, n)`` array of integer codes (validated)."""
        if not isinstance(schema, Schema):
            raise DataValidationError(f"schema must be a Schema, got {type(schema).__name__}")
        if not schema.is_discrete:
            raise DataValidationError("from_codes needs an all-discrete schema")
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[0] != len(schema):
            raise DataValidationError(
                f"codes must have shape (p, n) = ({len(schema)}, n), got {arr.shape}"
            )
        if arr.shape[1] == 0:
            raise DataValidationError("empty table: the codes have no rows")
        cards = [c for c in schema.cardinalities if c is not None]
        dtype = code_dtype(cards)
        if arr.dtype.kind in "iu":
            lo = arr.min(axis=1)
            hi = arr.max(axis=1)
            bad = (lo < 0) | (hi >= np.asarray(cards))
            if not bad.any():
                out = np.ascontiguousarray(arr, dtype=dtype)
                if out is arr or np.shares_memory(out, arr):
                    out = out.copy()
                return cls(schema, out, None, int(arr.shape[1]))
        rows = [
            validate_codes(arr[j], col, dtype)  # type: ignore[arg-type]
            for j, col in enumerate(schema)
        ]
        return cls(schema, np.ascontiguousarray(np.stack(rows)), None, int(arr.shape[1]))

    @classmethod
    def from_columns(
        cls,
        columns: Sequence[ArrayLike],
        schema: Schema,
        *,
        encoded: bool = False,
        clip: bool = False,
        line_offset: int | None = None,
    ) -> Dataset:
        """A dataset from one 1-D array per schema column (labels, or codes if ``encoded``)."""
        if not isinstance(schema, Schema):
            raise DataValidationError(f"schema must be a Schema, got {type(schema).__name__}")
        if len(columns) != len(schema):
            raise DataValidationError(
                f"got {len(columns)} columns but the schema declares {len(schema)}: "
                f"{list(schema.names)}"
            )
        arrays: list[NDArray[Any] | Sequence[str]] = []
        for c, col in zip(columns, schema, strict=True):
            if isinstance(c, list | tuple) and c and all(isinstance(v, str) for v in c[:1]):
                if encoded and col.is_discrete:
                    arrays.append(np.asarray(c))
                else:
                    arrays.append(c)  # string fast path (CSV)
                continue
            arr = np.asarray(c)
            if arr.ndim != 1:
                raise DataValidationError(
                    f"column {col.name!r}: expected a 1-D array, got shape {arr.shape}"
                )
            arrays.append(arr)
        lengths = {len(arr) for arr in arrays}
        if len(lengths) != 1:
            raise DataValidationError("columns have different lengths (rule: one value per "
                                      "row in every column)"
                                      + debug_detail(f"lengths {sorted(lengths)}"))
        n = lengths.pop()
        if n == 0:
            raise DataValidationError("empty table: no rows")
        cards = [c for c in schema.cardinalities if c is not None]
        dtype = code_dtype(cards) if cards else np.dtype(np.uint8)
        disc: list[Codes] = []
        cont: list[Floats] = []
        clipped: dict[str, int] = {}
        for data, col in zip(arrays, schema, strict=True):
            if isinstance(col, Continuous):
                if not isinstance(data, np.ndarray):
                    values, n_clipped = check_bounds(
                        parse_float_strings(data, col, line_offset=line_offset),
                        col,
                        clip=clip,
                        line_offset=line_offset,
                    )
                else:
                    values, n_clipped = encode_continuous(
                        data, col, clip=clip, line_offset=line_offset
                    )
                if n_clipped:
                    clipped[col.name] = n_clipped
                cont.append(values)
            elif encoded:
                disc.append(validate_codes(data, col, dtype, line_offset=line_offset))
            elif not isinstance(data, np.ndarray):
                disc.append(encode_label_strings(data, col, dtype, line_offset=line_offset))
            else:
                disc.append(encode_labels(data, col, dtype, line_offset=line_offset))
        if clip and cont:
            # THAT clipping was applied, never how much, nor in which column anything was
            # clipped: the warning is the same whatever the data (a count would be an
            # uncharged counting query; docs/privacy/threat-model.md).
            names = [col.name for col in schema if isinstance(col, Continuous)]
            warnings.warn(
                f"clip=True: continuous column(s) {names} clipped to their declared bounds "
                "(how many values were clipped is not reported: it would be an uncharged "
                "count)" + debug_detail(", ".join(f"{k!r}: {v}" for k, v in clipped.items())
                                        or "nothing clipped"),
                DataClippingWarning,
                stacklevel=3,
            )
        return cls(
            schema,
            np.ascontiguousarray(np.stack(disc)) if disc else None,
            np.ascontiguousarray(np.stack(cont)) if cont else None,
            int(n),
        )

    @classmethod
    def from_numpy(
        cls, array: ArrayLike, schema: Schema, *, encoded: bool = False, clip: bool = False
    ) -> Dataset:
        """A dataset from an ``(n, p)`` table (rows x columns, in schema order).

        With ``encoded=False`` discrete entries are category labels (strings; integers
        are matched by their decimal form). With ``encoded=True`` they are integer codes,
        validated against the cardinalities. Continuous entries are numbers in both cases.
        """
        arr = np.asarray(array)
        if arr.ndim != 2:
            raise DataValidationError(f"expected a 2-D (n, p) array, got shape {arr.shape}")
        if isinstance(schema, Schema) and arr.shape[1] != len(schema):
            raise DataValidationError(
                f"array has {arr.shape[1]} columns but the schema declares {len(schema)}: "
                f"{list(schema.names)}"
            )
        return cls.from_columns(
            [arr[:, j] for j in range(arr.shape[1])], schema, encoded=encoded, clip=clip
        )

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        schema: Schema,
        *,
        header: bool = True,
        clip: bool = False,
        delimiter: str = ",",
    ) -> Dataset:
        """Read a CSV file (see :func:`dpcg.data.loaders.read_csv`)."""
        columns, first_line = csv_columns(
            path, check_schema(schema), header=header, delimiter=delimiter)
        with in_file(path):
            return cls.from_columns(columns, schema, clip=clip, line_offset=first_line)

    @classmethod
    def from_pandas(cls, df: Any, schema: Schema, *, clip: bool = False) -> Dataset:
        """Read a pandas DataFrame (see :func:`dpcg.data.loaders.read_pandas`)."""
        return cls.from_columns(pandas_columns(df, check_schema(schema)), schema, clip=clip)

    @classmethod
    def from_parquet(
        cls, path: str | os.PathLike[str], schema: Schema, *, clip: bool = False
    ) -> Dataset:
        """Read a Parquet file (see :func:`dpcg.data.loaders.read_parquet`)."""
        columns = parquet_columns(path, check_schema(schema))
        with in_file(path):
            return cls.from_columns(columns, schema, clip=clip)

    # -- output ------------------------------------------------------------------------
    def to_csv(self, path: str | os.PathLike[str], *, header: bool = True) -> None:
        """Write the table as CSV: category labels, and ``repr`` floats (exact round trip).

        Fields are quoted (``csv`` module) only when a label or name needs it; otherwise
        the rows are joined directly, which is several times faster.
        """
        cols: list[list[str]] = []
        for j, col in enumerate(self.schema):
            if isinstance(col, Continuous):
                cols.append([repr(x) for x in self.column(j).tolist()])
            else:
                labels = np.asarray(col.labels, dtype=object)
                cols.append(labels[self.column(j)].tolist())
        special = (",", '"', "\r", "\n")
        texts = [*self.names] + [
            label for col in self.schema if not isinstance(col, Continuous) for label in col.labels
        ]
        try:
            fh = Path(path).open("w", newline="", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise DpcgError(f"cannot write {path}: {exc}") from None
        with fh:
            if not any(ch in text for text in texts for ch in special):
                if header:
                    fh.write(",".join(self.names) + "\n")
                fh.write("\n".join(map(",".join, zip(*cols, strict=True))))
                fh.write("\n")
                return
            writer = csv.writer(fh, lineterminator="\n")
            if header:
                writer.writerow(self.names)
            writer.writerows(zip(*cols, strict=True))
