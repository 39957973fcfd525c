"""Draft a schema from a data file, for the data owner to review (``dpcg schema draft``).

A declared schema is *public* (PRIVACY.md): its categories and bounds may be published,
and the private algorithms treat them as known to everyone. A draft computed from the
data is therefore **not** a schema yet: it lists every category the file contains and
bounds read off the data (rounded outward to a coarse round number), so a rare value or
an extreme bound can reveal a person. The data owner reviews it, widens it to what the
domain allows, and declares it by deleting the ``"_draft"`` field;
:meth:`dpcg.data.Schema.from_dict` refuses a file that still carries that field.

Inference per column (every decision is written into the draft's ``"_draft"`` notes):

* every value blank / ``NA`` / ... -> the column type is left as a ``TODO`` the schema
  loader refuses, so the owner must declare it;
* numbers, all integers spanning at most 100, at most ``max_integer_levels`` distinct ->
  categorical (labels as
  written in the file, in numeric order); ``ordinal`` if the column was named in
  ``ordinal``;
* numbers otherwise -> continuous, bounds rounded outward to one significant digit of
  the larger magnitude (``3.7 .. 97.2`` -> ``0 .. 100``);
* text (or numbers mixed with text), at most ``max_categories`` distinct -> categorical
  (sorted labels) or ordinal if asked; more distinct values -> ``TODO`` (an identifier or
  free text: drop it or declare its categories);
* a column with blank / ``NA`` / ... cells gets a drafted missing policy, marked for the
  owner's review (docs/privacy/missing-values.md): ``category`` (missing is its own
  category) for a discrete column, ``impute`` of the drafted bounds' midpoint with an
  ``indicator`` column for a continuous one -- never ``drop_rows``, which private runs
  refuse;
* with ``bins=K`` every continuous column is declared with ``"bins": K``: the loaders cut
  it into ``K`` equal-width bins of its DECLARED bounds (the edges are computed from
  ``lower``/``upper`` when the data are loaded, never from data quantiles), and a missing
  cell becomes its own bin.

Nothing here prints rows or counts: notes name the column and the rule only.
"""

from __future__ import annotations

import csv
import importlib
import io
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.dataset import MISSING_TOKENS, integral_label
from dpcg.data.schema import MAX_BINS, Schema, bin_edges
from dpcg.errors import DataValidationError, MissingDependencyError, SchemaError

__all__ = [
    "DRAFT_KEY",
    "DraftColumn",
    "SchemaDraft",
    "draft_from_columns",
    "draft_schema",
    "outward_bounds",
    "read_columns",
]

#: The top-level field that marks a schema as an unreviewed draft.
DRAFT_KEY = "_draft"

#: Placeholder type of a column the draft could not type (the schema loader refuses it).
TODO_TYPE = "TODO: categorical, ordinal or continuous"

WARNING = (
    "DRAFT computed from the data in {source}. It lists categories and bounds seen in the "
    "data and must be reviewed by the data owner. It is NOT public and must not be shared "
    "until the owner declares it: widen bounds to what the domain allows, add the "
    "categories the domain allows and drop or merge rare ones, then delete this "
    '"_draft" field. dpcg refuses to load a schema that still has it.'
)

HOW_TO_DECLARE = [
    "Bounds: replace the drafted bounds with bounds known without looking at the data "
    "(e.g. age 0 to 120, a percentage 0 to 100). Drafted bounds are the data's minimum and "
    "maximum rounded outward to one significant digit; a bound close to one person's "
    "value reveals that value.",
    "Categories: a declared category is public. List every category the domain allows "
    "(also ones not in this file) and remove or merge categories that only a few people "
    "have: a category present only because one person has it reveals that person.",
    "Columns marked TODO need a type: categorical (with categories), ordinal (with order) "
    "or continuous (with lower and upper).",
    'Missing values: a column with blank/NA cells has a drafted "missing" policy: '
    '"category" (missing is its own category, the last code) for a discrete column, '
    '"impute" (a public value you choose, here the middle of the drafted bounds) with an '
    '"indicator" column for a continuous one. Review the value, the label and the tokens; '
    '"refuse" makes missing cells an error, "drop_rows" deletes the rows (non-private '
    "runs only: n would depend on the data). See docs/data.md and "
    "docs/privacy/missing-values.md.",
    'Bins ("bins": K on a continuous column): K equal-width bins of the declared bounds, '
    "computed when the data are loaded; once you replace the bounds with domain bounds "
    "the bins follow them.",
    'When every column is reviewed, delete the "_draft" field: the file is then a '
    "declared schema (see docs/data.md).",
]


@dataclass(frozen=True)
class DraftColumn:
    """The drafted declaration of one column and the notes explaining it."""

    name: str
    spec: dict[str, Any]
    notes: tuple[str, ...] = ()
    rare: bool = False
    missing: bool = False
    todo: bool = False
    policy: bool = False


@dataclass(frozen=True)
class SchemaDraft:
    """A drafted schema: ``columns`` plus the warning header written into the file."""

    source: str
    columns: tuple[DraftColumn, ...]
    min_count: int
    extra_notes: tuple[str, ...] = field(default=())

    @property
    def rare_columns(self) -> tuple[str, ...]:
        """Columns with a category seen fewer than ``min_count`` times (names only)."""
        return tuple(c.name for c in self.columns if c.rare)

    @property
    def todo_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.todo)

    @property
    def missing_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.missing)

    @property
    def policy_columns(self) -> tuple[str, ...]:
        """Columns with a drafted missing policy (for the owner to review)."""
        return tuple(c.name for c in self.columns if c.policy)

    def to_dict(self) -> dict[str, Any]:
        """The draft in the schema JSON format, with the ``"_draft"`` header first."""
        notes = {c.name: list(c.notes) for c in self.columns if c.notes}
        header: dict[str, Any] = {
            "warning": WARNING.format(source=self.source),
            "how_to_declare": list(HOW_TO_DECLARE),
            "rare_category_threshold": self.min_count,
            "columns_with_rare_categories": list(self.rare_columns),
            "columns_to_type": list(self.todo_columns),
            "columns_with_missing_values": list(self.missing_columns),
            "missing_policies_to_review": list(self.policy_columns),
            "notes": notes,
        }
        if self.extra_notes:
            header["file_notes"] = list(self.extra_notes)
        return {DRAFT_KEY: header, "columns": [c.spec for c in self.columns]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def declared(self) -> Schema:
        """The schema as if the owner had declared it unchanged (for tests and previews).

        Raises :class:`~dpcg.errors.SchemaError` when a column is still ``TODO``.
        """
        body = {k: v for k, v in self.to_dict().items() if k != DRAFT_KEY}
        return Schema.from_dict(body)

    def terminal_lines(self) -> list[str]:
        """What ``dpcg schema draft`` prints on stderr: the warning and what to review."""
        lines = [
            f"dpcg schema draft: {WARNING.format(source=self.source)}",
        ]
        if self.rare_columns:
            lines.append(
                f"  columns with categories seen fewer than {self.min_count} times "
                f"(merge, drop or keep deliberately): {', '.join(self.rare_columns)}"
            )
        if self.todo_columns:
            lines.append(f"  columns you must type by hand (TODO): {', '.join(self.todo_columns)}")
        if self.missing_columns:
            lines.append(
                "  columns with blank/NA cells (a missing policy is drafted where the type "
                f"is known): {', '.join(self.missing_columns)}"
            )
        if self.policy_columns:
            lines.append(
                "  drafted missing policies to review (category / impute value / indicator): "
                f"{', '.join(self.policy_columns)}"
            )
        continuous = [c.name for c in self.columns if c.spec.get("type") == "continuous"]
        if continuous:
            lines.append(
                "  continuous columns whose drafted bounds come from the data (replace them "
                f"with domain bounds): {', '.join(continuous)}"
            )
        lines.append('  when reviewed, delete the "_draft" field to declare the schema.')
        return lines


# ---------------------------------------------------------------------------------
# bounds
# ---------------------------------------------------------------------------------
def outward_bounds(lo: float, hi: float) -> tuple[float, float]:
    """``[lo, hi]`` widened to multiples of one power of ten: the larger magnitude's.

    ``(3.7, 97.2) -> (0, 100)``, ``(-3.2, 41.5) -> (-10, 50)``,
    ``(12345, 987654) -> (0, 1000000)``; a constant column gets one step of width.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"outward_bounds needs finite lo <= hi, got {lo!r}, {hi!r}")
    magnitude = max(abs(lo), abs(hi))
    exponent = 0 if magnitude == 0.0 else math.floor(math.log10(magnitude))
    scale = 10.0**exponent
    k_lo = math.floor(lo / scale)
    k_hi = math.ceil(hi / scale)
    # guard against lo / scale rounding up past an integer (the bound must stay outside)
    while float(f"{k_lo}e{exponent}") > lo:
        k_lo -= 1
    while float(f"{k_hi}e{exponent}") < hi:
        k_hi += 1
    if k_hi == k_lo:
        k_hi += 1
    return float(f"{k_lo}e{exponent}"), float(f"{k_hi}e{exponent}")


def _number_text(value: float) -> int | float:
    """A bound as JSON: an int when it is integral (readable), a float otherwise."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


# ---------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------
def read_columns(path: str | os.PathLike[str]) -> tuple[list[str], list[NDArray[Any]]]:
    """The header and each column (a NumPy array of ``str``) of a CSV/TSV/Parquet file.

    Parquet nulls become ``""``. Raises :class:`~dpcg.errors.DataValidationError` for a
    file that cannot be read (missing, not UTF-8, malformed, empty, ragged rows).
    """
    where = str(path)
    p = Path(path)
    if not p.is_file():
        raise DataValidationError(f"cannot read {where}: no such file")
    suffix = p.suffix.lower()
    if suffix in {".parquet", ".pq"}:
        return _read_parquet(p)
    if suffix not in {".csv", ".tsv", ".txt"}:
        raise DataValidationError(
            f"cannot tell the format of {where}: use a .csv, .tsv or .parquet file"
        )
    delimiter = "\t" if suffix == ".tsv" else ","
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataValidationError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DataValidationError(f"{where} is not UTF-8 text; convert it to UTF-8") from None
    if "\x00" in text:
        raise DataValidationError(f"{where} contains NUL bytes: is it a binary file?")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise DataValidationError(
            f"{where}: malformed CSV at line {reader.line_num}: {exc}"
        ) from None
    while rows and not rows[-1]:
        rows.pop()
    if not rows:
        raise DataValidationError(f"{where}: empty file (no header line)")
    header = rows[0]
    width = len(header)
    body = rows[1:]
    if not body:
        raise DataValidationError(f"{where}: no data rows below the header")
    counts = np.fromiter(map(len, body), dtype=np.int64, count=len(body))
    ragged = counts != width
    if ragged.any():
        line = int(np.argmax(ragged)) + 2
        raise DataValidationError(
            f"{where}: line {line} has a different number of fields than the header "
            f"({width}); check the delimiter and the quoting"
        )
    _check_header(header, where)
    cells = list(itertools.chain.from_iterable(body))
    flat = np.array(cells, dtype=str).reshape(len(body), width)
    return header, [np.ascontiguousarray(flat[:, j]) for j in range(width)]


def _check_header(header: Sequence[str], where: str) -> None:
    seen: set[str] = set()
    for j, name in enumerate(header):
        if not name.strip():
            raise DataValidationError(f"{where}: header field {j + 1} is empty; name every column")
        if name in seen:
            raise DataValidationError(f"{where}: column {name!r} appears twice in the header")
        seen.add(name)


def _read_parquet(path: Path) -> tuple[list[str], list[NDArray[Any]]]:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise MissingDependencyError(
            "dpcg schema draft on Parquet needs the optional package 'pyarrow'; install it "
            "with `pip install pyarrow` (or convert the file to CSV)"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError types
        raise DataValidationError(f"cannot read Parquet file {path}: {exc}") from None
    header = [str(c) for c in table.column_names]
    _check_header(header, str(path))
    if table.num_rows == 0:
        raise DataValidationError(f"{path}: no data rows")
    columns = []
    for j in range(table.num_columns):
        chunked = table.column(j)
        values = np.asarray(chunked.to_numpy(zero_copy_only=False))
        if values.dtype.kind == "f":
            text = np.where(np.isnan(values), "", values.astype(str))
        else:
            text = values.astype(str)
        if chunked.null_count:
            nulls = np.asarray(chunked.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            text = np.where(nulls, "", text)
        columns.append(np.asarray(text, dtype=str))
    return header, columns


# ---------------------------------------------------------------------------------
# inference
# ---------------------------------------------------------------------------------
_MISSING = np.array(sorted(MISSING_TOKENS), dtype=str)


def _as_numbers(labels: NDArray[Any]) -> NDArray[np.float64] | None:
    """The labels as finite floats, or ``None`` if any label is not a finite number."""
    try:
        values = labels.astype(np.float64)
    except ValueError:
        return None
    if not np.isfinite(values).all():
        return None
    return values


def _is_number(label: str) -> bool:
    try:
        return math.isfinite(float(label))
    except ValueError:
        return False


def _draft_column(
    name: str,
    values: NDArray[Any],
    *,
    ordinal: bool,
    max_categories: int,
    max_integer_levels: int,
    min_count: int,
) -> DraftColumn:
    text = np.char.strip(np.asarray(values, dtype=str))
    missing_mask = np.isin(text, _MISSING)
    has_missing = bool(missing_mask.any())
    notes: list[str] = []
    if has_missing:
        notes.append("has blank/NA cells: a missing policy is drafted (review it)")
    present = np.asarray(values, dtype=str)[~missing_mask]
    if present.size == 0:
        notes.insert(0, "every cell is blank/NA: declare this column's type by hand")
        return DraftColumn(name, {"name": name, "type": TODO_TYPE}, tuple(notes),
                           missing=has_missing, todo=True)
    labels, counts = np.unique(present, return_counts=True)
    numbers = _as_numbers(labels)
    kind = "ordinal" if ordinal else "categorical"
    key = "order" if ordinal else "categories"
    rare = bool((counts < min_count).any())
    distinct = labels.size == present.size and present.size >= 10
    id_note = ("every value is distinct: an identifier? leave it out of the analysis (drop the "
               "column from the table and the schema)")
    rare_note = (f"has categories seen fewer than {min_count} times: merge or drop them, "
                 "or keep them deliberately (a declared category is public)")
    if numbers is not None:
        integral = bool(np.all(numbers == np.round(numbers)))
        narrow = float(numbers.max() - numbers.min()) <= 100.0
        if integral and labels.size <= max_integer_levels and narrow:
            order = np.argsort(numbers, kind="stable")
            # "1.0" (an integer written as a float, e.g. by pandas after a NaN) is drafted
            # as "1": the loaders read such a cell as the integer label
            canonical = [integral_label(str(x)) or str(x) for x in labels[order]]
            spec: dict[str, Any] = {"name": name, "type": kind,
                                    key: list(dict.fromkeys(canonical))}
            notes.append(f"integers with few distinct values: drafted as {kind} (labels as "
                         "written in the file, in numeric order); declare it continuous with "
                         "bounds if the values are quantities")
            if rare:
                notes.append(rare_note)
            return DraftColumn(name, spec, tuple(notes), rare=rare, missing=has_missing)
        lo, hi = outward_bounds(float(numbers.min()), float(numbers.max()))
        spec = {"name": name, "type": "continuous", "lower": _number_text(lo),
                "upper": _number_text(hi)}
        notes.append("numbers: drafted as continuous, bounds are the data's minimum and "
                     "maximum rounded outward; replace them with domain bounds")
        if ordinal:
            notes.append("asked for ordinal, but the column has too many distinct numbers; "
                         "drafted as continuous")
        if integral:
            notes.append("integers: if they are codes rather than quantities, declare the "
                         "column categorical with every code the domain allows")
        if integral and distinct:
            notes.append(id_note)
        return DraftColumn(name, spec, tuple(notes), missing=has_missing)
    if labels.size > max_categories:
        notes.insert(0, f"text with more than {max_categories} distinct values (an identifier "
                        "or free text?): list it in the schema's \"ignore\" (not analysed) or "
                        "declare its categories by hand")
        return DraftColumn(name, {"name": name, "type": TODO_TYPE}, tuple(notes),
                           missing=has_missing, todo=True)
    mixed = any(_is_number(str(label)) for label in labels)  # at most max_categories labels
    spec = {"name": name, "type": kind, key: [str(x) for x in labels]}
    if mixed:
        notes.append("mixes numbers and text: drafted as categorical over every label; check "
                     "for typos or a unit written into some cells")
    if ordinal:
        notes.append("ordinal: the drafted order is alphabetical; put the labels in their "
                     "real order")
    if distinct:
        notes.append(id_note)
    if rare:
        notes.append(rare_note)
    return DraftColumn(name, spec, tuple(notes), rare=rare, missing=has_missing)


def _with_policy(column: DraftColumn, values: NDArray[Any], taken: set[str],
                 bins: int | None) -> DraftColumn:
    """``column`` with its drafted missing policy (when it has blank/NA cells) and, for a
    continuous column, ``bins``; every addition is noted for the owner's review."""
    if column.todo:
        return column
    spec = dict(column.spec)
    notes = list(column.notes)
    continuous = spec.get("type") == "continuous"
    if continuous and bins is not None:
        spec["bins"] = bins
        edges = bin_edges(float(spec["lower"]), float(spec["upper"]), bins)
        notes.append(f"bins: {bins} equal-width bins of the declared bounds (edges "
                     f"{[_number_text(e) for e in edges]} for the drafted bounds; they are "
                     "computed from lower/upper at load time, never from data quantiles, "
                     "and follow the bounds you declare)")
    if not column.missing:
        return DraftColumn(column.name, spec, tuple(notes), rare=column.rare)
    text = np.asarray(values, dtype=str)
    seen = set(np.unique(text[np.isin(np.char.strip(text), _MISSING)]).tolist())
    policy: dict[str, Any]
    if continuous and bins is None:
        mid = (float(spec["lower"]) + float(spec["upper"])) / 2
        indicator = f"{column.name}_missing"
        while indicator in taken:
            indicator += "_"
        taken.add(indicator)
        policy = {"policy": "impute", "value": _number_text(mid), "indicator": indicator}
        notes.append(f"missing policy drafted: impute {policy['value']} (the middle of the "
                     f"drafted bounds) plus a 0/1 indicator column {indicator!r}; REVIEW: "
                     "choose a public value from the domain, not from the data")
    else:
        policy = {"policy": "category", "label": "(missing)"}
        labels = spec.get("categories") or spec.get("order") or []
        label = "(missing)"
        while label in labels:
            label = f"({label})"
        policy["label"] = label
        notes.append(f"missing policy drafted: missing cells become the category {label!r} "
                     "(the last code); REVIEW: or impute a declared category")
    if not seen <= MISSING_TOKENS:
        labels = set(spec.get("categories") or spec.get("order") or [])
        policy["tokens"] = sorted((MISSING_TOKENS | seen) - labels)
        notes.append("the missing tokens include text that is not a default token (e.g. "
                     "spaces): the drafted tokens list it; check it")
    spec["missing"] = policy
    return DraftColumn(column.name, spec, tuple(notes), rare=column.rare, missing=True,
                       policy=True)


def draft_from_columns(
    header: Sequence[str],
    columns: Sequence[NDArray[Any] | Sequence[str]],
    *,
    source: str = "the data",
    ordinal: Sequence[str] = (),
    max_categories: int = 30,
    max_integer_levels: int = 10,
    min_count: int = 5,
    bins: int | None = None,
) -> SchemaDraft:
    """Draft a schema from columns of cell text (one array or list per header name)."""
    if len(header) != len(columns):
        raise DataValidationError(
            f"draft: {len(header)} column names but {len(columns)} columns"
        )
    if isinstance(max_categories, bool) or not isinstance(max_categories, int) \
            or max_categories < 1:
        raise SchemaError(f"max_categories must be a positive integer, got {max_categories!r}")
    if isinstance(max_integer_levels, bool) or not isinstance(max_integer_levels, int) \
            or max_integer_levels < 1:
        raise SchemaError("max_integer_levels must be a positive integer, got "
                          f"{max_integer_levels!r}")
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise SchemaError(f"min_count must be a positive integer, got {min_count!r}")
    if bins is not None and (isinstance(bins, bool) or not isinstance(bins, int)
                             or not 2 <= bins <= MAX_BINS):
        raise SchemaError(f"bins must be an integer from 2 to {MAX_BINS}, got {bins!r}")
    unknown = sorted(set(ordinal) - set(header))
    if unknown:
        raise SchemaError(f"--ordinal names unknown column(s) {unknown}; the file has "
                          f"{list(header)}")
    wanted = set(ordinal)
    taken = set(header)
    drafted = tuple(
        _with_policy(
            _draft_column(name, np.asarray(col, dtype=str), ordinal=name in wanted,
                          max_categories=max_categories,
                          max_integer_levels=max_integer_levels, min_count=min_count),
            np.asarray(col, dtype=str), taken, bins)
        for name, col in zip(header, columns, strict=True)
    )
    return SchemaDraft(source=source, columns=drafted, min_count=min_count)


def draft_schema(
    path: str | os.PathLike[str],
    *,
    ordinal: Sequence[str] = (),
    max_categories: int = 30,
    max_integer_levels: int = 10,
    min_count: int = 5,
    bins: int | None = None,
) -> SchemaDraft:
    """Read ``path`` (CSV/TSV, or Parquet with pyarrow) and draft its schema (``bins``:
    declare every continuous column cut into that many equal-width bins of its bounds)."""
    header, columns = read_columns(path)
    return draft_from_columns(header, columns, source=Path(path).name, ordinal=ordinal,
                              max_categories=max_categories,
                              max_integer_levels=max_integer_levels, min_count=min_count,
                              bins=bins)


def is_draft(data: Mapping[str, Any]) -> bool:
    """True when a parsed schema JSON object still carries the draft marker."""
    return DRAFT_KEY in data
