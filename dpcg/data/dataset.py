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
import itertools
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcg.data.readers import (
    check_schema,
    csv_columns,
    debug_detail,
    pandas_columns,
    parquet_columns,
)
from dpcg.data.schema import (
    DEFAULT_MISSING_TOKENS,
    Categorical,
    Continuous,
    MissingPolicy,
    Ordinal,
    Schema,
)
from dpcg.errors import DataValidationError, DpcgError

__all__ = ["MIN_ROWS", "MISSING_TOKENS", "DataClippingWarning", "Dataset", "code_dtype",
           "in_file", "integral_label"]

#: Strings read as "missing" (unless a column declares them as a category, or declares
#: its own tokens with a missing policy: :meth:`Schema.missing_rule`).
MISSING_TOKENS = DEFAULT_MISSING_TOKENS

#: The fewest rows a loaded table may have: every statistic needs two (``n`` is public,
#: so refusing a smaller table releases nothing).
MIN_ROWS = 2

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
    "if it is one, or declare a missing policy for the column: docs/data.md)"


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
            except (ArithmeticError, TypeError):  # Decimal('sNaN'), pd.NA refuse to compare
                mask = np.fromiter((_is_missing(v) for v in raw.reshape(-1).tolist()),
                                   dtype=bool, count=raw.size).reshape(raw.shape)
            return mask
    return np.zeros(raw.shape, dtype=bool)


def _is_missing(item: object) -> bool:
    """``None``, ``pd.NA`` or a NaN (a signalling NaN, which refuses every comparison,
    included)."""
    if item is None:
        return True
    try:
        return bool(item != item)
    except (ArithmeticError, TypeError):
        return True


#: ``"1.0"``, ``"-3.000"``: an integer written as a float (what pandas writes for an
#: integer column that held a NaN). Group 1 is the integer in canonical form.
_INTEGRAL_TEXT = re.compile(r"(0|-?[1-9][0-9]*)\.0+")


def integral_label(text: str) -> str | None:
    """``"1"`` for ``"1.0"`` (an integer-valued float written out), else ``None``.

    Only the canonical decimal form followed by a point and zeros qualifies (``"1.0"``,
    ``"-2.00"``; not ``"01.0"``, ``"+1.0"``, ``"1e0"``), so the SQL engines can apply the
    same rule with one regular expression (:mod:`dpcg.data.sql_validate`).
    """
    match = _INTEGRAL_TEXT.fullmatch(text)
    return None if match is None else match.group(1)


def _refuse_missing(name: str, detail: str) -> NoReturn:
    raise DataValidationError(f"column {name!r}: {_MISSING_RULE}" + debug_detail(detail))


def _label_strings(raw: NDArray[Any], name: str, line_offset: int | None) -> NDArray[np.str_]:
    """Convert a raw column (no missing entries) to label strings."""
    if raw.dtype.kind in "US":
        return raw.astype(str, copy=False)
    if raw.dtype.kind == "f":
        if np.all(raw == np.floor(raw)) and np.all(np.abs(raw) < 2.0**53):
            return raw.astype(np.int64).astype(str)
        return raw.astype(str)
    if raw.dtype.kind == "O":
        # bool/float/int objects: use str(); integral floats become e.g. "1.0", which
        # matches an integer label "1" (integral_label).
        try:
            return raw.astype(str)
        except ValueError:  # an int too long for str(): no declared label is that long
            raise DataValidationError(
                f"column {name!r}: a value is not one of the declared categories (rule: "
                "categorical values must be declared in the schema)") from None
    return raw.astype(str)


def _code_table(
    distinct: Sequence[str],
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    tokens: frozenset[str],
    active: bool,
    first_row: Callable[[int], int],
    line_offset: int | None,
) -> tuple[Codes, list[int]]:
    """Code of each distinct label string, and the positions of the missing ones.

    A declared label is its code; else a missing token is missing (an error unless the
    column's policy accepts missing cells); else an integer written as a float (``"1.0"``)
    is the integer label's code; anything else is an undeclared category (an error).
    The loop runs over distinct values only.
    """
    lookup = {label: code for code, label in enumerate(column.labels)}
    table = np.zeros(len(distinct), dtype=dtype)
    missing: list[int] = []
    for k, value in enumerate(distinct):
        code = lookup.get(value)
        if code is None:
            if value in tokens:
                if not active:
                    _refuse_missing(column.name,
                                    f"value {value!r} at {_where(first_row(k), line_offset)}")
                missing.append(k)
                continue
            alt = integral_label(value)
            code = None if alt is None else lookup.get(alt)
            if code is None:
                _raise_unknown(column, value, first_row(k), line_offset)
                continue  # pragma: no cover - _raise_unknown raises
        table[k] = code
    return table, missing


def encode_labels(
    raw: ArrayLike,
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
    tokens: frozenset[str] = DEFAULT_MISSING_TOKENS,
    active: bool = False,
    native: NDArray[np.bool_] | None = None,
) -> tuple[Codes, NDArray[np.bool_] | None]:
    """Codes of the labels in ``raw`` (1-D), mapped via the unique values only, and the
    mask of missing entries (``None`` when there are none). Missing entries get code 0
    (the caller applies the column's policy); without an accepting policy they raise."""
    arr = np.asarray(raw)
    nat = _missing_mask(arr) if native is None else native
    if nat.any():
        if not active:
            row = int(np.argmax(nat))
            _refuse_missing(column.name, f"{arr[row]!r} at {_where(row, line_offset)}")
        present_rows = np.flatnonzero(~nat)
        present = arr[present_rows]
    else:
        present_rows = None
        present = arr
    labels = _label_strings(present, column.name, line_offset)
    uniques, inverse = np.unique(labels, return_inverse=True)
    inverse = inverse.reshape(-1)

    def first_row(k: int) -> int:
        row = int(np.argmax(inverse == k))
        return row if present_rows is None else int(present_rows[row])

    table, missing_ids = _code_table(uniques.tolist(), column, dtype, tokens, active,
                                     first_row, line_offset)
    codes = np.asarray(table[inverse], dtype=dtype)
    token_miss = _flag(missing_ids, len(table), inverse)
    if present_rows is None:
        return codes, token_miss
    out = np.zeros(arr.shape[0], dtype=dtype)
    out[present_rows] = codes
    mask = nat.copy()
    if token_miss is not None:
        mask[present_rows] |= token_miss
    return out, mask


def _flag(ids: list[int], size: int, inverse: NDArray[np.intp]) -> NDArray[np.bool_] | None:
    """Rows whose distinct-value id is in ``ids`` (``None`` when ``ids`` is empty)."""
    if not ids:
        return None
    flags = np.zeros(size, dtype=bool)
    flags[ids] = True
    out: NDArray[np.bool_] = flags[inverse]
    return out


def encode_label_strings(
    values: Sequence[str],
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
    tokens: frozenset[str] = DEFAULT_MISSING_TOKENS,
    active: bool = False,
) -> tuple[Codes, NDArray[np.bool_] | None]:
    """Codes of a column given as a list of label strings (the CSV path), and the mask of
    missing cells (``None`` when there are none).

    Distinct values are numbered with one C-level dict pass (``dict.fromkeys``), the
    row ids are gathered with ``np.fromiter``, and the category lookup runs over the
    distinct values only.
    """
    ids_of = {value: k for k, value in enumerate(dict.fromkeys(values))}
    n = len(values)
    ids = np.fromiter(map(ids_of.__getitem__, values), dtype=np.intp, count=n)
    table, missing_ids = _code_table(list(ids_of), column, dtype, tokens, active,
                                     lambda k: int(np.argmax(ids == k)), line_offset)
    return np.asarray(table[ids], dtype=dtype), _flag(missing_ids, len(table), ids)


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


def _sentinels(tokens: frozenset[str]) -> NDArray[np.float64]:
    """The missing tokens that read as finite numbers (``"-999"``), as floats."""
    out = []
    for token in tokens:
        try:
            value = float(token)
        except ValueError:
            continue
        if np.isfinite(value):
            out.append(value)
    return np.asarray(sorted(out), dtype=np.float64)


def _numeric_missing(values: Floats, tokens: frozenset[str], active: bool,
                     name: str, line_offset: int | None,
                     prior: NDArray[np.bool_] | None) -> NDArray[np.bool_] | None:
    """Missing entries of parsed floats: ``prior`` (tokens, nulls), NaN, and numbers equal
    to a numeric token. Raises if any and the column's policy does not accept them."""
    mask = np.isnan(values) if prior is None else prior | np.isnan(values)
    sentinels = _sentinels(tokens)
    if sentinels.size:
        mask |= np.isin(values, sentinels)
    if not mask.any():
        return None
    if not active:
        row = int(np.argmax(mask))
        _refuse_missing(name, f"{values[row]!r} at {_where(row, line_offset)}")
    return mask


def parse_float_strings(
    values: Sequence[str],
    column: Continuous,
    *,
    line_offset: int | None = None,
    tokens: frozenset[str] = DEFAULT_MISSING_TOKENS,
    active: bool = False,
) -> tuple[Floats, NDArray[np.bool_] | None]:
    """Float values of a column given as strings (the CSV path), and the mask of missing
    cells (token texts, NaN, numeric sentinels; ``None`` when there are none). Missing
    entries hold NaN. No bounds check."""
    n = len(values)
    try:
        parsed = np.fromiter(map(float, values), dtype=np.float64, count=n)
        return parsed, _numeric_missing(parsed, tokens, active, column.name, line_offset, None)
    except ValueError:
        pass
    is_token = np.fromiter(map(tokens.__contains__, values), dtype=bool, count=n)
    if is_token.any() and not active:
        row = int(np.argmax(is_token))
        _refuse_missing(column.name, f"value {values[row]!r} at {_where(row, line_offset)}")
    out = np.full(n, np.nan)
    rows = np.flatnonzero(~is_token)
    present = list(itertools.compress(values, (~is_token).tolist())) if is_token.any() \
        else values
    try:
        out[rows] = np.fromiter(map(float, present), dtype=np.float64, count=len(present))
    except ValueError:
        for k, item in enumerate(present):
            try:
                float(item)
            except ValueError:
                row = int(rows[k])
                detail = debug_detail(f"value {item!r} at {_where(row, line_offset)}")
                if item in MISSING_TOKENS:
                    raise DataValidationError(
                        f"column {column.name!r}: {_MISSING_RULE}" + detail) from None
                raise DataValidationError(
                    f"column {column.name!r}: a value is not a number (rule: continuous "
                    "columns hold numbers)" + detail) from None
    return out, _numeric_missing(out, tokens, active, column.name, line_offset, is_token)


def validate_codes(
    raw: ArrayLike,
    column: Categorical | Ordinal,
    dtype: np.dtype[np.unsignedinteger[Any]],
    *,
    line_offset: int | None = None,
    active: bool = False,
    native: NDArray[np.bool_] | None = None,
) -> tuple[Codes, NDArray[np.bool_] | None]:
    """Check pre-encoded integer codes against the column's cardinality; NaN (or a
    ``native`` null) is a missing code, accepted when the column's policy does."""
    arr = np.asarray(raw)
    name = column.name
    mask = native if native is not None and native.any() else None
    if mask is not None:
        if not active:
            _refuse_missing(name, f"null at {_where(int(np.argmax(mask)), line_offset)}")
        arr = np.where(mask, 0, arr) if arr.dtype.kind != "O" else _fill_objects(arr, mask)
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
            if not active:
                row = int(np.argmax(bad))
                raise DataValidationError(
                    f"column {name!r}: {_MISSING_RULE}"
                    + debug_detail(f"nan at {_where(row, line_offset)}"))
            mask = bad if mask is None else mask | bad
            arr = np.where(bad, 0.0, arr)
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
    return arr.astype(dtype), mask


def _fill_objects(arr: NDArray[Any], mask: NDArray[np.bool_]) -> NDArray[Any]:
    out = arr.copy()
    out[mask] = 0
    return out


def encode_continuous(
    raw: ArrayLike,
    column: Continuous,
    *,
    line_offset: int | None = None,
    tokens: frozenset[str] = DEFAULT_MISSING_TOKENS,
    active: bool = False,
    native: NDArray[np.bool_] | None = None,
) -> tuple[Floats, NDArray[np.bool_] | None]:
    """Float values of a continuous column (no bounds check), and the mask of missing
    entries (nulls, NaN, token texts, numeric sentinels; ``None`` if none). Missing entries
    hold NaN; without an accepting policy they raise."""
    arr = np.asarray(raw)
    name = column.name
    if arr.dtype.kind in "US" or arr.dtype.kind == "O":
        if arr.dtype.kind in "US":
            text = arr.astype(str, copy=False)
            prior = np.isin(text, list(tokens))
        else:
            prior = _missing_mask(arr) if native is None else native.copy()
            strings = _object_strings(arr, prior)
            if strings is not None:
                prior |= np.isin(strings, list(tokens))
        if prior.any():
            if not active:
                row = int(np.argmax(prior))
                _refuse_missing(name, f"{arr[row]!r} at {_where(row, line_offset)}")
            arr = arr.copy() if arr.dtype.kind == "O" else arr.astype(object)
            arr[prior] = np.nan
        try:
            values = arr.astype(np.float64)
        except (TypeError, ValueError, ArithmeticError):
            values = _floats_of_objects(arr, name, line_offset)
        return values, _numeric_missing(values, tokens, active, name, line_offset,
                                        prior if prior.any() else None)
    if arr.dtype.kind in "iuf" and arr.dtype.kind != "b":
        values = arr.astype(np.float64)
        known = native if native is not None and native.any() else None
        if known is not None:
            values[known] = np.nan
        return values, _numeric_missing(values, tokens, active, name, line_offset, known)
    raise DataValidationError(
        f"column {name!r}: continuous values must be numeric, got dtype {arr.dtype}"
    )


def _object_strings(arr: NDArray[Any], missing: NDArray[np.bool_]) -> NDArray[np.str_] | None:
    """The entries of an object array as text (missing ones as ``""`` placeholders), to
    compare with the missing tokens; ``None`` when an entry cannot be written out."""
    filled = arr.copy()
    filled[missing] = ""
    try:
        out: NDArray[np.str_] = filled.astype(str)
    except (ValueError, TypeError, ArithmeticError):
        return None
    out[missing] = ""
    return out


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
        what = "infinite, " if np.isinf(values[row]) else ""
        raise DataValidationError(
            f"column {name!r}: a value is {what}outside the declared bounds "
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


def _bin_codes(values: Floats, column: Continuous, dtype: np.dtype[np.unsignedinteger[Any]],
               miss: NDArray[np.bool_] | None, policy: MissingPolicy | None) -> Codes:
    """Bin codes of in-bounds values: bin ``k`` holds ``edges[k] <= x < edges[k + 1]``
    (the last bin includes ``upper``); a ``category`` policy's missing rows get code
    ``bins``. The edges are public (:func:`dpcg.data.schema.bin_edges`)."""
    edges = column.edges
    assert edges is not None
    assert column.bins is not None
    codes = np.searchsorted(np.asarray(edges[1:-1]), values, side="right").astype(dtype)
    if miss is not None and policy is not None and policy.policy == "category":
        codes[miss] = column.bins
    return codes


# ---------------------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------------------


class Dataset:
    """A validated table: a schema plus encoded, read-only column-major arrays.

    Build one with :meth:`from_csv`, :meth:`from_numpy`, :meth:`from_codes`,
    :meth:`from_pandas` or :meth:`from_parquet`; the constructor itself trusts its
    arguments.
    """

    __slots__ = ("_cont", "_disc", "_n", "_slots", "n_public", "schema")

    def __init__(
        self,
        schema: Schema,
        discrete: Codes | None,
        continuous: Floats | None,
        n: int,
        *,
        n_public: bool = True,
    ) -> None:
        self.schema = schema
        self._n = n
        #: False when a ``drop_rows`` missing policy deleted rows: ``n`` then depends on
        #: the data and must not be treated as public (private runs refuse such a dataset:
        #: :func:`dpcg.data.checks.require_public_n`).
        self.n_public = n_public
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
        return Dataset(schema, disc, cont, self._n, n_public=self.n_public)

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
        return Dataset(self.schema, disc, cont, int(idx.size), n_public=self.n_public)

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def from_codes(cls, codes: ArrayLike, schema: Schema) -> Dataset:
        """An all-discrete dataset from a ``(p, n)`` array of integer codes (validated)."""
        if not isinstance(schema, Schema):
            raise DataValidationError(f"schema must be a Schema, got {type(schema).__name__}")
        if not schema.is_discrete:
            raise DataValidationError("from_codes needs an all-discrete schema")
        if schema.has_transforms:
            loaded = schema.loaded()
            if loaded.names != schema.names or loaded.cardinalities != schema.cardinalities:
                raise DataValidationError(
                    "from_codes takes the codes of a schema without missing categories, "
                    "indicators or bins (pass schema.loaded(): codes are already loaded "
                    "data)")
            schema = loaded
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
            validate_codes(arr[j], col, dtype)[0]  # type: ignore[arg-type]
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
        allow_row_deletion: bool = False,
        missing_masks: Sequence[NDArray[np.bool_] | None] | None = None,
    ) -> Dataset:
        """A dataset from one 1-D array per schema column (labels, or codes if ``encoded``).

        The columns are those the schema declares; the dataset's schema is
        :meth:`Schema.loaded` (bins, missing categories and indicator columns applied).
        ``allow_row_deletion`` permits the ``drop_rows`` missing policy (non-private runs
        only: it makes ``n`` depend on the data). ``missing_masks`` (one boolean mask or
        ``None`` per column) marks entries a reader already knows are null.
        """
        if not isinstance(schema, Schema):
            raise DataValidationError(f"schema must be a Schema, got {type(schema).__name__}")
        if len(columns) != len(schema):
            raise DataValidationError(
                f"got {len(columns)} columns but the schema declares {len(schema)}: "
                f"{list(schema.names)}"
            )
        deleting = schema.deletes_rows
        if deleting and not allow_row_deletion:
            # Decided from the schema alone, before any value is read.
            raise DataValidationError(
                f"column(s) {list(deleting)}: missing policy 'drop_rows' deletes rows, which "
                "makes n depend on the data (rule: n is public; a private run never deletes "
                "rows); declare 'impute' (with an 'indicator') or 'category' instead, or "
                "load with allow_row_deletion=True for a non-private analysis "
                "(docs/privacy/missing-values.md)")
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
        loaded = schema.loaded()
        cards = [c for c in loaded.cardinalities if c is not None]
        dtype = code_dtype(cards) if cards else np.dtype(np.uint8)
        disc: list[Codes] = []
        cont: list[Floats] = []
        clipped: dict[str, int] = {}
        drop: NDArray[np.bool_] | None = None
        for j, (data, col) in enumerate(zip(arrays, schema, strict=True)):
            tokens, policy = schema.missing_rule(j)
            active = policy is not None and policy.active
            native = None if missing_masks is None else missing_masks[j]
            miss: NDArray[np.bool_] | None
            if isinstance(col, Continuous):
                if not isinstance(data, np.ndarray):
                    values, miss = parse_float_strings(
                        data, col, line_offset=line_offset, tokens=tokens, active=active)
                else:
                    values, miss = encode_continuous(
                        data, col, line_offset=line_offset, tokens=tokens, active=active,
                        native=native)
                if miss is not None:
                    assert policy is not None
                    # impute: the declared value; otherwise a placeholder (the row is
                    # dropped, or re-coded as the missing bin)
                    fill = policy.value if isinstance(policy.value, int | float) else col.lower
                    values[miss] = float(fill)
                values, n_clipped = check_bounds(values, col, clip=clip,
                                                 line_offset=line_offset)
                if n_clipped:
                    clipped[col.name] = n_clipped
                if col.bins is None:
                    cont.append(values)
                else:
                    disc.append(_bin_codes(values, col, dtype, miss, policy))
            else:
                if encoded:
                    codes, miss = validate_codes(data, col, dtype, line_offset=line_offset,
                                                 active=active, native=native)
                elif not isinstance(data, np.ndarray):
                    codes, miss = encode_label_strings(data, col, dtype, line_offset=line_offset,
                                                       tokens=tokens, active=active)
                else:
                    codes, miss = encode_labels(data, col, dtype, line_offset=line_offset,
                                                tokens=tokens, active=active, native=native)
                if miss is not None:
                    assert policy is not None
                    if policy.policy == "category":
                        codes[miss] = col.cardinality
                    elif policy.policy == "impute":
                        codes[miss] = col.labels.index(str(policy.value))
                disc.append(codes)
            if policy is not None and policy.indicator is not None:
                disc.append(np.zeros(n, dtype=dtype) if miss is None else miss.astype(dtype))
            if policy is not None and policy.policy == "drop_rows" and miss is not None:
                drop = miss if drop is None else drop | miss
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
        if drop is not None:
            keep = ~drop
            disc = [block[keep] for block in disc]
            cont = [block[keep] for block in cont]
            n = int(np.count_nonzero(keep))
            if n < MIN_ROWS:
                raise DataValidationError(
                    f"fewer than {MIN_ROWS} rows remain after deleting the rows with missing "
                    f"values in column(s) {list(deleting)} (rule: a dataset has at least "
                    f"{MIN_ROWS} rows)")
        if n < MIN_ROWS:
            raise DataValidationError(
                f"the table has fewer than {MIN_ROWS} rows (rule: a dataset has at least "
                f"{MIN_ROWS} rows: every statistic needs two; n is public)")
        return cls(
            loaded,
            np.ascontiguousarray(np.stack(disc)) if disc else None,
            np.ascontiguousarray(np.stack(cont)) if cont else None,
            int(n),
            n_public=not deleting,
        )

    @classmethod
    def from_numpy(
        cls, array: ArrayLike, schema: Schema, *, encoded: bool = False, clip: bool = False,
        allow_row_deletion: bool = False,
    ) -> Dataset:
        """A dataset from an ``(n, p)`` table (rows x columns, in schema order).

        With ``encoded=False`` discrete entries are category labels (strings; integers
        are matched by their decimal form, integer-valued floats too). With
        ``encoded=True`` they are integer codes, validated against the cardinalities.
        Continuous entries are numbers in both cases.
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
            [arr[:, j] for j in range(arr.shape[1])], schema, encoded=encoded, clip=clip,
            allow_row_deletion=allow_row_deletion,
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
        allow_row_deletion: bool = False,
    ) -> Dataset:
        """Read a CSV file (see :func:`dpcg.data.loaders.read_csv`)."""
        columns, first_line = csv_columns(
            path, check_schema(schema), header=header, delimiter=delimiter)
        with in_file(path):
            return cls.from_columns(columns, schema, clip=clip, line_offset=first_line,
                                    allow_row_deletion=allow_row_deletion)

    @classmethod
    def from_pandas(cls, df: Any, schema: Schema, *, clip: bool = False,
                    allow_row_deletion: bool = False) -> Dataset:
        """Read a pandas DataFrame (see :func:`dpcg.data.loaders.read_pandas`)."""
        columns, masks = pandas_columns(df, check_schema(schema))
        return cls.from_columns(columns, schema, clip=clip, missing_masks=masks,
                                allow_row_deletion=allow_row_deletion)

    @classmethod
    def from_parquet(
        cls, path: str | os.PathLike[str], schema: Schema, *, clip: bool = False,
        allow_row_deletion: bool = False,
    ) -> Dataset:
        """Read a Parquet file (see :func:`dpcg.data.loaders.read_parquet`)."""
        columns, masks = parquet_columns(path, check_schema(schema))
        with in_file(path):
            return cls.from_columns(columns, schema, clip=clip, missing_masks=masks,
                                    allow_row_deletion=allow_row_deletion)

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
