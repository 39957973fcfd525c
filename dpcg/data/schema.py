"""Declared, public table schemas.

A :class:`Schema` is an ordered tuple of columns, each one of

* :class:`Categorical` -- a nominal variable with a declared, finite set of categories;
* :class:`Ordinal` -- a discrete variable whose categories have a declared order;
* :class:`Continuous` -- a real variable with declared public bounds ``lower < upper``
  (both finite, ``upper - lower`` between ``1e-300`` and ``1e300``).

Everything in a schema is *public*: it is declared by the analyst, never computed from
the data (PRIVACY.md). The category lists fix the integer encoding: the code of a value
is its position in ``categories`` (or ``order``).

Schemas round-trip through JSON::

    {"columns": [
        {"name": "smoker", "type": "categorical", "categories": ["yes", "no"]},
        {"name": "stage", "type": "ordinal", "order": ["I", "II", "III"]},
        {"name": "age", "type": "continuous", "lower": 0, "upper": 120}
    ]}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dpcg.errors import SchemaError

__all__ = ["MAX_WIDTH", "MIN_WIDTH", "Categorical", "Column", "Continuous", "Ordinal", "Schema",
           "parse_json"]

ColumnKind = Literal["categorical", "ordinal", "continuous"]

#: The narrowest and widest ``upper - lower`` of a continuous column: the tests rescale
#: by ``2 / (upper - lower)`` and ``2 (x - lower)``, which must stay finite.
MIN_WIDTH = 1e-300
MAX_WIDTH = 1e300


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise SchemaError(f"column name must be a non-empty string, got {name!r}")
    return name


def _check_labels(name: str, labels: object, what: str) -> tuple[str, ...]:
    """Validate a category list; ints are accepted and stored as their decimal string."""
    if isinstance(labels, str | bytes) or not isinstance(labels, Sequence):
        raise SchemaError(f"column {name!r}: {what} must be a list of labels, got {labels!r}")
    out: list[str] = []
    for label in labels:
        if isinstance(label, bool) or not isinstance(label, str | int):
            raise SchemaError(
                f"column {name!r}: {what} labels must be strings (or integers), got {label!r}"
            )
        try:
            text = str(label)
        except ValueError:  # an int too long for str()
            raise SchemaError(f"column {name!r}: a {what} label is an integer too long "
                              "to write out (rule: labels are short strings)") from None
        if text == "":
            raise SchemaError(f"column {name!r}: empty string is not a valid {what} label")
        out.append(text)
    if not out:
        raise SchemaError(f"column {name!r}: {what} must not be empty")
    seen: set[str] = set()
    for text in out:
        if text in seen:
            raise SchemaError(f"column {name!r}: duplicate {what} label {text!r}")
        seen.add(text)
    return tuple(out)


@dataclass(frozen=True)
class Categorical:
    """A nominal column; the code of a value is its index in ``categories``."""

    name: str
    categories: tuple[str, ...]

    def __init__(self, name: str, categories: Sequence[str | int]) -> None:
        checked = _check_name(name)
        object.__setattr__(self, "name", checked)
        object.__setattr__(self, "categories", _check_labels(checked, categories, "categories"))

    @property
    def kind(self) -> ColumnKind:
        return "categorical"

    @property
    def is_discrete(self) -> bool:
        return True

    @property
    def cardinality(self) -> int:
        return len(self.categories)

    @property
    def labels(self) -> tuple[str, ...]:
        """The category labels in code order."""
        return self.categories

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": "categorical", "categories": list(self.categories)}


@dataclass(frozen=True)
class Ordinal:
    """An ordered discrete column; the code of a value is its rank in ``order``."""

    name: str
    order: tuple[str, ...]

    def __init__(self, name: str, order: Sequence[str | int]) -> None:
        checked = _check_name(name)
        object.__setattr__(self, "name", checked)
        object.__setattr__(self, "order", _check_labels(checked, order, "order"))

    @property
    def kind(self) -> ColumnKind:
        return "ordinal"

    @property
    def is_discrete(self) -> bool:
        return True

    @property
    def cardinality(self) -> int:
        return len(self.order)

    @property
    def labels(self) -> tuple[str, ...]:
        """The category labels in code (rank) order."""
        return self.order

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": "ordinal", "order": list(self.order)}


@dataclass(frozen=True)
class Continuous:
    """A real column with declared public bounds ``lower < upper`` (both finite)."""

    name: str
    lower: float
    upper: float

    def __init__(self, name: str, lower: float, upper: float) -> None:
        checked = _check_name(name)
        bounds: list[float] = []
        for label, bound in (("lower", lower), ("upper", upper)):
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                raise SchemaError(
                    f"column {checked!r}: {label} bound must be a number, got {bound!r}"
                )
            try:
                value = float(bound)
            except OverflowError:  # an int beyond the float range
                raise SchemaError(
                    f"column {checked!r}: {label} bound must be finite, got an integer "
                    "beyond the float range"
                ) from None
            if not math.isfinite(value):
                raise SchemaError(
                    f"column {checked!r}: {label} bound must be finite, got {bound!r}"
                )
            bounds.append(value)
        if not bounds[0] < bounds[1]:
            raise SchemaError(
                f"column {checked!r}: bounds must satisfy lower < upper, got "
                f"lower={bounds[0]!r}, upper={bounds[1]!r}"
            )
        width = bounds[1] - bounds[0]
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            raise SchemaError(
                f"column {checked!r}: bounds must have a width upper - lower between "
                f"{MIN_WIDTH:g} and {MAX_WIDTH:g} (rule: rescaling a value to [-1, 1] by "
                "the bounds must not overflow); declare narrower (or wider) bounds"
            )
        object.__setattr__(self, "name", checked)
        object.__setattr__(self, "lower", bounds[0])
        object.__setattr__(self, "upper", bounds[1])

    @property
    def kind(self) -> ColumnKind:
        return "continuous"

    @property
    def is_discrete(self) -> bool:
        return False

    @property
    def cardinality(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": "continuous", "lower": self.lower, "upper": self.upper}


Column = Categorical | Ordinal | Continuous

_KEYS: dict[str, tuple[str, ...]] = {
    "categorical": ("name", "type", "categories"),
    "ordinal": ("name", "type", "order"),
    "continuous": ("name", "type", "lower", "upper"),
}


def _column_from_dict(index: int, spec: object) -> Column:
    if not isinstance(spec, Mapping):
        raise SchemaError(f"columns[{index}] must be an object, got {spec!r}")
    name = spec.get("name")
    kind = spec.get("type")
    where = f"columns[{index}] ({name!r})"
    if kind not in _KEYS:
        raise SchemaError(
            f"{where}: unknown column type {kind!r}; expected one of {sorted(_KEYS)}"
        )
    allowed = _KEYS[kind]
    missing = [key for key in allowed if key not in spec]
    if missing:
        raise SchemaError(f"{where}: missing key(s) {missing} for type {kind!r}")
    extra = sorted(str(key) for key in spec if key not in allowed)
    if extra:
        raise SchemaError(f"{where}: unknown key(s) {extra} for type {kind!r}")
    if kind == "categorical":
        return Categorical(spec["name"], spec["categories"])
    if kind == "ordinal":
        return Ordinal(spec["name"], spec["order"])
    return Continuous(spec["name"], spec["lower"], spec["upper"])


@dataclass(frozen=True)
class Schema:
    """An ordered, validated tuple of uniquely named columns."""

    columns: tuple[Column, ...]

    def __init__(self, columns: Sequence[Column]) -> None:
        if not isinstance(columns, list | tuple):
            raise SchemaError(f"columns must be a sequence of columns, got {columns!r}")
        cols = tuple(columns)
        if not cols:
            raise SchemaError("a schema needs at least one column")
        seen: set[str] = set()
        for col in cols:
            if not isinstance(col, Categorical | Ordinal | Continuous):
                raise SchemaError(
                    f"schema columns must be Categorical, Ordinal or Continuous, got {col!r}"
                )
            if col.name in seen:
                raise SchemaError(f"duplicate column name {col.name!r}")
            seen.add(col.name)
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "_index", {col.name: j for j, col in enumerate(cols)})

    # -- sequence protocol -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def __getitem__(self, key: int | str) -> Column:
        if isinstance(key, str):
            return self.columns[self.index(key)]
        return self.columns[key]

    # -- metadata ----------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(col.name for col in self.columns)

    @property
    def cardinalities(self) -> tuple[int | None, ...]:
        """Number of categories per column (``None`` for continuous columns)."""
        return tuple(col.cardinality for col in self.columns)

    @property
    def is_discrete(self) -> bool:
        """True if every column is categorical or ordinal."""
        return all(col.is_discrete for col in self.columns)

    @property
    def is_continuous(self) -> bool:
        """True if every column is continuous."""
        return not any(col.is_discrete for col in self.columns)

    def index(self, name: str) -> int:
        """Position of the column called ``name`` (:class:`SchemaError` if unknown)."""
        index: dict[str, int] = self.__dict__["_index"]
        try:
            return index[name]
        except (KeyError, TypeError):
            raise SchemaError(
                f"unknown column {name!r}; the schema has columns {list(self.names)}"
            ) from None

    def select(self, columns: Sequence[int | str]) -> Schema:
        """The sub-schema of the given columns (names or positions), in the given order."""
        return Schema([self.columns[j] for j in self.positions(columns)])

    def positions(self, columns: Sequence[int | str] | str) -> list[int]:
        """Positions of ``columns`` (names or indices); rejects unknowns and duplicates."""
        if isinstance(columns, str):
            columns = [columns]
        out: list[int] = []
        for key in columns:
            if isinstance(key, str):
                j = self.index(key)
            elif isinstance(key, int) and not isinstance(key, bool):
                if not -len(self.columns) <= key < len(self.columns):
                    raise SchemaError(
                        f"column index {key} out of range for {len(self.columns)} columns"
                    )
                j = key % len(self.columns)
            else:
                raise SchemaError(f"columns are selected by name or index, got {key!r}")
            if j in out:
                raise SchemaError(f"column {self.columns[j].name!r} selected twice")
            out.append(j)
        return out

    # -- JSON --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"columns": [col.to_dict() for col in self.columns]}

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int = 2) -> str:
        """The schema as JSON text; also written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent) + "\n"
        if path is not None:
            try:
                Path(path).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise SchemaError(f"cannot write schema file {path}: {exc}") from None
        return text

    @classmethod
    def from_dict(cls, data: object) -> Schema:
        if not isinstance(data, Mapping) or "columns" not in data:
            raise SchemaError('a schema must be a JSON object with a "columns" list')
        if "_draft" in data:
            raise SchemaError(
                'this schema is a draft computed from the data (it has a "_draft" field): the '
                "data owner must review every category and bound (see the field's advice), "
                'then delete the "_draft" field to declare the schema public'
            )
        extra = sorted(str(key) for key in data if key != "columns")
        if extra:
            raise SchemaError(f"unknown top-level schema key(s) {extra}")
        columns = data["columns"]
        if not isinstance(columns, list):
            raise SchemaError(f'"columns" must be a list, got {type(columns).__name__}')
        return cls([_column_from_dict(i, spec) for i, spec in enumerate(columns)])

    @classmethod
    def from_json(cls, source: str | os.PathLike[str]) -> Schema:
        """Read a schema from JSON text or from a JSON file.

        ``source`` is JSON text if it is a ``str`` starting with ``{``, otherwise a path.
        """
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text = source
            where = "schema JSON"
        else:
            path = Path(source)
            where = str(path)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise SchemaError(f"cannot read schema file {where}: {exc}") from None
            except UnicodeDecodeError:
                raise SchemaError(f"schema file {where} is not UTF-8 text (rule: a schema "
                                  "is a JSON file in UTF-8)") from None
        return cls.from_dict(parse_json(text, where))


def parse_json(text: str, where: str) -> object:
    """``json.loads(text)`` with every failure a :class:`SchemaError` naming ``where`` (a
    syntax error, an integer too long to convert, nesting too deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{where} is not valid JSON: {exc}") from None
    except (ValueError, RecursionError):
        raise SchemaError(f"{where} is not valid JSON (rule: numbers of at most 4300 "
                          "digits, nesting of reasonable depth)") from None
