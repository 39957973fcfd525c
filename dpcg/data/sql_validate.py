"""Schema validation and category encoding expressed in SQL (shared by the DuckDB and
Spark table engines).

The engines never pull rows to the driver. Instead this module writes, from the public
schema and the public column *types* of the source (its catalogue, not its rows):

* one ``code`` expression per discrete column that maps a declared category to its code
  ``0..c-1`` (``CASE ... WHEN label THEN code``), ``NULL`` for anything else;
* one aggregate query whose every output is a boolean per ``(column, rule)`` (optionally
  per file): "some row violates this rule". Nothing else -- no value, no row number, no
  count -- comes back, so the error raised from it (:class:`~dpcg.errors.DataValidationError`)
  names the column, the rule and the file only.

Rules (:data:`RULES`):

* ``missing_column`` -- a declared column is not in the source (catalogue check, no scan);
* ``type`` -- the column's type cannot hold the declared kind (catalogue check), or a
  text column declared continuous holds a value that is not a number;
* ``null`` -- a NULL (missing value);
* ``category`` -- a value of a discrete column is not one of the declared categories;
* ``non_finite`` -- NaN or +-inf in a continuous column;
* ``bounds`` -- a continuous value outside the declared ``[lower, upper]``.

Matching of values to categories follows :mod:`dpcg.data.dataset`: text columns match the
label strings exactly; integer and floating columns match the labels that are decimal
integers (``"3"`` matches ``3`` and ``3.0``), so a numeric value with no integer label is
outside the declared categories. Boolean, date and nested types are ``type`` errors for
every kind of column. A text value that is not a declared label but an integer written
as a float (``"1.0"``) matches the integer label (``"1"``), as in memory
(:func:`dpcg.data.dataset.integral_label`).

Missing values (:class:`~dpcg.data.schema.MissingPolicy`): for a column whose policy
accepts them, a cell is missing when it is NULL, NaN, one of the column's missing tokens
(:meth:`~dpcg.data.schema.Schema.missing_rule`; a numeric token also matches that number
in a numeric column of a continuous declaration), exactly as the in-memory loaders read
it; the ``null`` rule is then not checked and the other rules look at the present cells
only. :func:`loaded_code_columns` gives the code of every discrete column of the
*loaded* schema (:meth:`~dpcg.data.schema.Schema.loaded`): a missing category, an
imputed label, an indicator column, the bins of a binned continuous column. The engines
never delete rows (``n`` stays public): a ``drop_rows`` policy is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from dpcg.data.schema import (
    Categorical,
    Column,
    Continuous,
    MissingPolicy,
    Ordinal,
    Schema,
)
from dpcg.errors import DataValidationError

__all__ = [
    "RULES",
    "Dialect",
    "TypeClass",
    "Violation",
    "classify_type",
    "code_expression",
    "loaded_code_columns",
    "missing_expression",
    "quote_ident",
    "raise_violations",
    "validation_plan",
]

RULES = ("missing_column", "type", "null", "category", "non_finite", "bounds")

Dialect = Literal["duckdb", "spark"]
TypeClass = Literal["text", "integer", "float", "other"]

_INTEGER = re.compile(
    r"^(TINYINT|SMALLINT|INTEGER|INT|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|"
    r"UHUGEINT|INT1|INT2|INT4|INT8|LONG|SHORT|BYTE|INT16|INT32|INT64|INT128|UINT8|UINT16|"
    r"UINT32|UINT64)$"
)
_FLOAT = re.compile(r"^(FLOAT|DOUBLE|REAL|FLOAT4|FLOAT8|DECIMAL(\(\d+,\s*\d+\))?)$")
_TEXT = re.compile(r"^(VARCHAR|STRING|TEXT|CHAR(\(\d+\))?|VARCHAR\(\d+\)|ENUM\(.*\))$", re.S)


def classify_type(type_name: str) -> TypeClass:
    """``text``, ``integer``, ``float`` or ``other`` for a DuckDB or Spark SQL type name."""
    name = type_name.strip().upper()
    if _INTEGER.match(name):
        return "integer"
    if _FLOAT.match(name):
        return "float"
    if _TEXT.match(name):
        return "text"
    return "other"


def quote_ident(name: str, dialect: Dialect) -> str:
    """A quoted SQL identifier (``"x"`` for DuckDB, backticks for Spark)."""
    if dialect == "duckdb":
        return '"' + name.replace('"', '""') + '"'
    return "`" + name.replace("`", "``") + "`"


def _string_literal(text: str, dialect: Dialect) -> str:
    if dialect == "spark":
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + text.replace("'", "''") + "'"


#: A decimal integer in canonical form (the form :func:`integral_label` produces).
_CANONICAL_INT = "0|-?[1-9][0-9]*"


def _integer_label(label: str) -> int | None:
    if re.fullmatch(r"[+-]?\d+", label):
        return int(label)
    return None


def code_expression(
    column: Categorical | Ordinal, source_type: TypeClass, dialect: Dialect
) -> str:
    """SQL expression giving the code ``0..c-1`` of the column's value, NULL if the value
    is not a declared category (or is NULL).

    A numeric column whose labels are exactly ``"0" .. "c-1"`` is its own code (a range
    check, no ``CASE``).
    """
    col = quote_ident(column.name, dialect)
    labels = column.labels
    if source_type == "text":
        whens = " ".join(
            f"WHEN {_string_literal(label, dialect)} THEN {code}"
            for code, label in enumerate(labels)
        )
        integral = [(code, label) for code, label in enumerate(labels)
                    if re.fullmatch(_CANONICAL_INT, label)]
        if not integral:
            return f"(CASE {col} {whens} END)"
        # "1.0" (not a declared label) reads as the integer label "1", as in memory
        alt = (f"regexp_extract({col}, "
               f"{_string_literal('^(' + _CANONICAL_INT + ')[.]0+$', dialect)}, 1)")
        inner = " ".join(f"WHEN {_string_literal(label, dialect)} THEN {code}"
                         for code, label in integral)
        return f"(CASE {col} {whens} ELSE (CASE {alt} {inner} END) END)"
    if source_type in ("integer", "float"):
        numeric = [(code, _integer_label(label)) for code, label in enumerate(labels)]
        if all(value == code for code, value in numeric):
            c = len(labels)
            if source_type == "integer":
                return f"(CASE WHEN {col} >= 0 AND {col} < {c} THEN CAST({col} AS INTEGER) END)"
            return (
                f"(CASE WHEN {col} >= 0 AND {col} < {c} AND {col} = FLOOR({col}) "
                f"THEN CAST({col} AS INTEGER) END)"
            )
        whens = " ".join(
            f"WHEN {value} THEN {code}" for code, value in numeric if value is not None
        )
        if not whens:
            return "(CAST(NULL AS INTEGER))"
        return f"(CASE {col} {whens} END)"
    raise DataValidationError(  # pragma: no cover - callers check the type first
        f"column {column.name!r}: rule 'type' violated (type cannot hold categories)"
    )


def _finite(expr: str, dialect: Dialect) -> str:
    if dialect == "duckdb":
        return f"isfinite({expr})"
    return f"(NOT isnan({expr}) AND abs({expr}) != double('infinity'))"


def _is_nan(expr: str, dialect: Dialect) -> str:
    """SQL "``expr`` is NaN". DuckDB (2.0.1) folds ``isnan(x)`` to false from a Parquet
    column's min/max statistics, which leave NaN out; "not finite and not infinite" is
    evaluated on the values (tests/data/test_missing_engines.py)."""
    if dialect == "duckdb":
        return f"(NOT isfinite({expr}) AND NOT isinf({expr}))"
    return f"isnan({expr})"


def _as_double(expr: str, source_type: TypeClass, dialect: Dialect) -> str:
    if source_type == "text":
        return f"TRY_CAST({expr} AS DOUBLE)"
    return f"CAST({expr} AS DOUBLE)"


def _bound(value: float) -> str:
    if not math.isfinite(value):  # pragma: no cover - Continuous rejects it
        raise DataValidationError("bounds must be finite")
    return repr(float(value))


@dataclass(frozen=True)
class Violation:
    """A violated ``(column, rule)``, optionally in one file of the source."""

    column: str
    rule: str
    where: str


@dataclass(frozen=True)
class ValidationPlan:
    """Catalogue violations found without a scan, and the boolean aggregates to run.

    ``checks[k] = (column, rule, sql)``: ``sql`` is a boolean aggregate (``bool_or``)
    that is true iff some row violates ``rule`` in ``column``.
    """

    catalogue: tuple[Violation, ...]
    checks: tuple[tuple[str, str, str], ...]
    types: Mapping[str, TypeClass]


def validation_plan(
    schema: Schema,
    source_types: Mapping[str, str],
    where: str,
    dialect: Dialect,
) -> ValidationPlan:
    """Catalogue checks (missing columns, impossible types) and the per-row checks.

    ``source_types`` maps the source's column names to their SQL type names (public
    catalogue facts). Columns of the source that the schema does not declare are ignored
    (a warehouse table may carry more columns than the analysis uses).
    """
    deleting = schema.deletes_rows
    if deleting:
        raise DataValidationError(
            f"column(s) {list(deleting)}: missing policy 'drop_rows' deletes rows, which "
            "makes n depend on the data; the table engines never delete rows (rule: n is "
            "public): declare 'impute' (with an 'indicator') or 'category' instead")
    catalogue: list[Violation] = []
    checks: list[tuple[str, str, str]] = []
    types: dict[str, TypeClass] = {}
    for j, column in enumerate(schema):
        if column.name not in source_types:
            catalogue.append(Violation(column.name, "missing_column", where))
            continue
        tclass = classify_type(source_types[column.name])
        types[column.name] = tclass
        if tclass == "other":
            catalogue.append(Violation(column.name, "type", where))
            continue
        tokens, policy = schema.missing_rule(j)
        missing = missing_expression(column, tokens, policy, tclass, dialect)
        checks.extend(_row_checks(column, tclass, dialect, missing))
    return ValidationPlan(tuple(catalogue), tuple(checks), types)


def missing_expression(
    column: Column,
    tokens: frozenset[str],
    policy: MissingPolicy | None,
    source_type: TypeClass,
    dialect: Dialect,
) -> str | None:
    """SQL boolean (never NULL): "this cell is missing", for a column whose policy accepts
    missing cells; ``None`` for a column without one (``refuse``). The same cells as in
    memory: NULL; NaN; a token text (text columns); a number equal to a numeric token
    (numeric columns; for a discrete column, an integer token such as ``"-1"``)."""
    if policy is None or not policy.active:
        return None
    col = quote_ident(column.name, dialect)
    parts = [f"{col} IS NULL"]
    numbers = sorted({v for v in (_number(t) for t in tokens) if v is not None})
    if source_type == "text":
        if tokens:
            listed = ", ".join(_string_literal(t, dialect) for t in sorted(tokens))
            parts.append(f"{col} IN ({listed})")
        if isinstance(column, Continuous):
            value = _as_double(col, source_type, dialect)
            parts.append(_is_nan(value, dialect))
            if numbers:
                parts.append(f"{value} IN ({', '.join(_bound(v) for v in numbers)})")
    else:
        value = f"CAST({col} AS DOUBLE)"
        if source_type == "float":
            parts.append(_is_nan(value, dialect))
        if not isinstance(column, Continuous):
            numbers = [v for v in numbers if v == int(v)]
        if numbers:
            parts.append(f"{value} IN ({', '.join(_bound(v) for v in numbers)})")
    return f"COALESCE(({' OR '.join(parts)}), FALSE)"


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _row_checks(column: Column, tclass: TypeClass, dialect: Dialect,
                missing: str | None = None) -> list[tuple[str, str, str]]:
    col = quote_ident(column.name, dialect)
    name = column.name
    present = "TRUE" if missing is None else f"NOT {missing}"
    out = [] if missing is not None else [(name, "null", f"bool_or({col} IS NULL)")]
    if isinstance(column, Continuous):
        value = _as_double(col, tclass, dialect)
        if tclass == "text":
            out.append((name, "type",
                        f"bool_or({present} AND {col} IS NOT NULL AND {value} IS NULL)"))
        out.append(
            (name, "non_finite",
             f"bool_or({present} AND {value} IS NOT NULL AND NOT {_finite(value, dialect)})")
        )
        out.append(
            (
                name,
                "bounds",
                f"bool_or({present} AND {value} IS NOT NULL AND {_finite(value, dialect)} AND "
                f"({value} < {_bound(column.lower)} OR {value} > {_bound(column.upper)}))",
            )
        )
    else:
        code = code_expression(column, tclass, dialect)
        out.append((name, "category",
                    f"bool_or({present} AND {col} IS NOT NULL AND {code} IS NULL)"))
    return out


def loaded_code_columns(
    schema: Schema, source_types: Mapping[str, str], where: str, dialect: Dialect
) -> dict[int, str]:
    """The SQL code (``0..c-1``) of every discrete column of ``schema.loaded()``, by its
    position there: declared categories, the missing category or the imputed label, the
    0/1 indicator columns, and the bins of a binned continuous column (public edges from
    the declared bounds; a value ``x`` is in bin ``k`` when ``edges[k] <= x <
    edges[k + 1]``, as in memory). Run after :func:`validation_plan` passed."""
    tclasses = validation_plan(schema, dict(source_types), where, dialect).types
    out: dict[int, str] = {}
    pos = 0
    for j, column in enumerate(schema):
        tokens, policy = schema.missing_rule(j)
        tclass = tclasses[column.name]
        missing = missing_expression(column, tokens, policy, tclass, dialect)
        if isinstance(column, Continuous):
            if column.bins is not None:
                out[pos] = _bin_expression(column, tclass, dialect, missing, policy)
        else:
            code = code_expression(column, tclass, dialect)
            if missing is not None and policy is not None and policy.policy != "drop_rows":
                fill = column.cardinality if policy.policy == "category" \
                    else column.labels.index(str(policy.value))
                code = f"(CASE WHEN {missing} THEN {fill} ELSE {code} END)"
            out[pos] = code
        pos += 1
        if policy is not None and policy.indicator is not None:
            assert missing is not None
            out[pos] = f"(CASE WHEN {missing} THEN 1 ELSE 0 END)"
            pos += 1
    return out


def _bin_expression(column: Continuous, tclass: TypeClass, dialect: Dialect,
                    missing: str | None, policy: MissingPolicy | None) -> str:
    edges = column.edges
    assert edges is not None
    assert column.bins is not None
    value = _as_double(quote_ident(column.name, dialect), tclass, dialect)
    cases = " ".join(f"WHEN {value} < {_bound(e)} THEN {k}"
                     for k, e in enumerate(edges[1:-1]))
    head = ""
    if missing is not None and policy is not None:
        if policy.policy == "category":
            head = f"WHEN {missing} THEN {column.bins} "
        elif policy.policy == "impute":
            assert isinstance(policy.value, int | float)
            k = sum(1 for e in edges[1:-1] if e <= float(policy.value))
            head = f"WHEN {missing} THEN {k} "
    return f"(CASE {head}{cases} ELSE {column.bins - 1} END)"


_RULE_TEXT = {
    "missing_column": "the column is declared in the schema but not in the source",
    "type": "the column's type or a value cannot be read as the declared kind",
    "null": "a value is missing (NULL)",
    "category": "a value is not one of the declared categories",
    "non_finite": "a value is NaN or infinite",
    "bounds": "a value lies outside the declared bounds",
}


def raise_violations(violations: Sequence[Violation]) -> None:
    """Raise one :class:`DataValidationError` naming every violated (column, rule, file).

    The message names columns, rules and files only -- never a value, a row number or a
    count -- because it leaves the engine before any budget is charged.
    """
    if not violations:
        return
    seen: list[Violation] = []
    for v in violations:
        if v not in seen:
            seen.append(v)
    shown = seen[:20]
    lines = [
        f"column {v.column!r}: rule {v.rule!r} violated in {v.where} ({_RULE_TEXT[v.rule]})"
        for v in shown
    ]
    more = "" if len(seen) == len(shown) else f"; and {len(seen) - len(shown)} more"
    raise DataValidationError(
        "the data do not conform to the schema (nothing was charged): "
        + "; ".join(lines)
        + more
    )
