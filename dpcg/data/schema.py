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

Optional fields (docs/data.md, docs/privacy/missing-values.md) declare how missing cells
are read and what the loaders turn a column into; a schema without them loads exactly as
before:

* top level ``"missing_tokens": ["", "NA"]`` -- the cell texts that mean "missing" in
  every column (a column's declared label wins over a schema-wide token);
* per column ``"missing": {"policy": ..., "tokens": [...], ...}`` -- a
  :class:`MissingPolicy`: ``refuse`` (the default), ``category`` (missing becomes its
  own declared category, the last code), ``impute`` (a declared public value, optionally
  with a derived 0/1 ``indicator`` column), ``drop_rows`` (listwise deletion: ``n``
  becomes data-dependent, so it is refused unless the loader is told
  ``allow_row_deletion=True``, which only non-private runs may do);
* per continuous column ``"bins": K`` -- the loaders discretise the column into ``K``
  equal-width bins of its DECLARED bounds (an ordinal column of the loaded schema).

:meth:`Schema.loaded` is the schema of the loaded :class:`~dpcg.data.Dataset`: every
transform applied (bins, missing category, indicator columns), nothing else declared.
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

__all__ = ["DEFAULT_MISSING_TOKENS", "MAX_BINS", "MAX_WIDTH", "MIN_WIDTH", "POLICIES",
           "Categorical", "Column", "Continuous", "MissingPolicy", "Ordinal", "Schema",
           "bin_edges", "parse_json"]

ColumnKind = Literal["categorical", "ordinal", "continuous"]

#: The narrowest and widest ``upper - lower`` of a continuous column: the tests rescale
#: by ``2 / (upper - lower)`` and ``2 (x - lower)``, which must stay finite.
MIN_WIDTH = 1e-300
MAX_WIDTH = 1e300

#: Cell texts read as "missing" when a column declares no tokens of its own (and the
#: schema none for every column), unless they are one of the column's declared labels.
DEFAULT_MISSING_TOKENS = frozenset({"", "NA", "N/A", "NaN", "nan", "NAN", "null", "NULL",
                                    "None"})

#: The missing-value policies a column may declare (docs/privacy/missing-values.md).
POLICIES = ("refuse", "category", "impute", "drop_rows")

#: The most bins a continuous column may be cut into (the codes stay ``uint16``).
MAX_BINS = 65536

#: The label of the missing category when a ``category`` policy names none.
DEFAULT_MISSING_LABEL = "(missing)"


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


def _check_tokens(where: str, tokens: object) -> tuple[str, ...]:
    """A declared list of missing tokens: strings (the empty cell ``""`` included)."""
    if isinstance(tokens, str | bytes) or not isinstance(tokens, Sequence):
        raise SchemaError(f"{where}: missing tokens must be a list of strings, got {tokens!r}")
    out: list[str] = []
    for token in tokens:
        if not isinstance(token, str):
            raise SchemaError(f"{where}: missing tokens must be strings (the empty cell is "
                              f'""), got {token!r}')
        if token in out:
            raise SchemaError(f"{where}: duplicate missing token {token!r}")
        out.append(token)
    if not out:
        raise SchemaError(f"{where}: the list of missing tokens must not be empty (leave the "
                          "key out to use the defaults)")
    return tuple(out)


@dataclass(frozen=True)
class MissingPolicy:
    """How a column's missing cells are read (public: declared, never from the data).

    * ``policy`` -- one of :data:`POLICIES`:

      - ``"refuse"``: a missing cell is an error naming the column and the rule;
      - ``"category"``: missing cells become the declared category ``label`` (appended as
        the last code; discrete columns, or continuous columns with ``bins``);
      - ``"impute"``: missing cells become the declared public ``value`` (a declared label
        of a discrete column, a number within a continuous column's bounds), and with
        ``indicator`` a derived categorical column of that name (labels ``"0"``,
        ``"1"``: ``"1"`` = the cell was missing) is added right after the column;
      - ``"drop_rows"``: rows with a missing cell in this column are deleted (listwise
        deletion). ``n`` then depends on the data, so the loaders refuse it unless called
        with ``allow_row_deletion=True`` (non-private runs only).

    * ``tokens`` -- the cell texts that mean "missing" in this column (``""`` is the empty
      cell); ``None`` uses the schema's ``missing_tokens``, else
      :data:`DEFAULT_MISSING_TOKENS`. Native missing values (``None``, NaN, ``pd.NA``,
      Parquet/SQL NULL) are always missing. For a continuous column a token that is a
      number (``"-999"``) also matches that number in a numeric source.
    """

    policy: str = "refuse"
    tokens: tuple[str, ...] | None = None
    label: str | None = None
    value: str | float | None = None
    indicator: str | None = None

    def __init__(self, policy: str = "refuse", *, tokens: Sequence[str] | None = None,
                 label: str | None = None, value: str | int | float | None = None,
                 indicator: str | None = None) -> None:
        if policy not in POLICIES:
            raise SchemaError(f"unknown missing policy {policy!r}; expected one of "
                              f"{list(POLICIES)}")
        object.__setattr__(self, "policy", policy)
        object.__setattr__(self, "tokens",
                           None if tokens is None else _check_tokens("missing", tokens))
        if label is not None and policy != "category":
            raise SchemaError(f'missing policy {policy!r} takes no "label" (only "category")')
        if policy == "category":
            label = DEFAULT_MISSING_LABEL if label is None else label
            if not isinstance(label, str) or not label:
                raise SchemaError(f"the missing category's label must be a non-empty string, "
                                  f"got {label!r}")
        object.__setattr__(self, "label", label)
        if (value is None) != (policy != "impute"):
            raise SchemaError('missing policy "impute" needs a public "value" (and only it '
                              "takes one)")
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, str | int | float)):
            raise SchemaError(f"the imputed value must be a label or a number, got {value!r}")
        object.__setattr__(self, "value", value)
        if indicator is not None:
            if policy != "impute":
                raise SchemaError('an "indicator" column goes with missing policy "impute" '
                                  f"only, not {policy!r}")
            _check_name(indicator)
        object.__setattr__(self, "indicator", indicator)

    @property
    def active(self) -> bool:
        """True when missing cells are accepted (every policy but ``refuse``)."""
        return self.policy != "refuse"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy}
        if self.tokens is not None:
            out["tokens"] = list(self.tokens)
        if self.label is not None:
            out["label"] = self.label
        if self.value is not None:
            out["value"] = self.value
        if self.indicator is not None:
            out["indicator"] = self.indicator
        return out

    @classmethod
    def from_dict(cls, where: str, spec: object) -> MissingPolicy:
        if not isinstance(spec, Mapping):
            raise SchemaError(f'{where}: "missing" must be an object such as '
                              f'{{"policy": "category"}}, got {spec!r}')
        allowed = ("policy", "tokens", "label", "value", "indicator")
        extra = sorted(str(key) for key in spec if key not in allowed)
        if extra:
            raise SchemaError(f'{where}: unknown key(s) {extra} in "missing" (allowed: '
                              f"{list(allowed)})")
        if "policy" not in spec:
            raise SchemaError(f'{where}: "missing" needs a "policy", one of {list(POLICIES)}')
        indicator = spec.get("indicator")
        try:
            return cls(spec["policy"], tokens=spec.get("tokens"), label=spec.get("label"),
                       value=spec.get("value"), indicator=indicator)
        except SchemaError as exc:
            raise SchemaError(f"{where}: {exc}") from None


def _policy(name: str, missing: MissingPolicy | Mapping[str, Any] | None) -> MissingPolicy | None:
    if missing is None or isinstance(missing, MissingPolicy):
        return missing
    if isinstance(missing, Mapping):
        return MissingPolicy.from_dict(f"column {name!r}", missing)
    raise SchemaError(f"column {name!r}: missing must be a MissingPolicy or a dict, got "
                      f"{missing!r}")


def _check_discrete_policy(name: str, labels: tuple[str, ...],
                           missing: MissingPolicy | None) -> None:
    if missing is None:
        return
    where = f"column {name!r}"
    if missing.tokens is not None:
        clash = [t for t in missing.tokens if t in labels]
        if clash:
            raise SchemaError(f"{where}: missing token(s) {clash} are also declared labels "
                              "(rule: a cell is either a category or missing)")
    if missing.policy == "category" and missing.label in labels:
        raise SchemaError(f"{where}: the missing category's label {missing.label!r} is "
                          "already a declared label; choose another")
    if missing.policy == "impute" and str(missing.value) not in labels:
        raise SchemaError(f"{where}: the imputed value {missing.value!r} is not a declared "
                          "label (rule: a discrete column imputes one of its categories)")


def _indicator(missing: MissingPolicy | None) -> list[Column]:
    if missing is None or missing.indicator is None:
        return []
    return [Categorical(missing.indicator, ["0", "1"])]


def bin_edges(lower: float, upper: float, bins: int) -> tuple[float, ...]:
    """The ``bins + 1`` public edges of ``bins`` equal-width bins of ``[lower, upper]``.

    Computed from the declared bounds only (``lower + k (upper - lower) / bins``, the last
    edge exactly ``upper``). A value ``x`` falls in bin ``k`` when
    ``edges[k] <= x < edges[k + 1]`` (the last bin includes ``upper``).
    """
    width = upper - lower
    inner = [lower + k * width / bins for k in range(1, bins)]
    return (lower, *inner, upper)


def _bin_labels(edges: Sequence[float]) -> tuple[str, ...]:
    for digits in (4, 6, 10, 17):
        text = [format(x, f".{digits}g") for x in edges]
        labels = tuple(
            f"[{text[k]}, {text[k + 1]}{']' if k == len(edges) - 2 else ')'}"
            for k in range(len(edges) - 1))
        if len(set(text)) == len(text):
            return labels
    return tuple(f"bin{k}" for k in range(len(edges) - 1))  # pragma: no cover


@dataclass(frozen=True)
class Categorical:
    """A nominal column; the code of a value is its index in ``categories``."""

    name: str
    categories: tuple[str, ...]
    missing: MissingPolicy | None = None

    def __init__(self, name: str, categories: Sequence[str | int], *,
                 missing: MissingPolicy | Mapping[str, Any] | None = None) -> None:
        checked = _check_name(name)
        object.__setattr__(self, "name", checked)
        labels = _check_labels(checked, categories, "categories")
        object.__setattr__(self, "categories", labels)
        policy = _policy(checked, missing)
        _check_discrete_policy(checked, labels, policy)
        object.__setattr__(self, "missing", policy)

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

    def loaded(self) -> list[Column]:
        """The column(s) the loaders produce for this declaration."""
        if self.missing is None:
            return [self]
        labels = list(self.categories)
        if self.missing.policy == "category":
            assert self.missing.label is not None
            labels.append(self.missing.label)
        return [Categorical(self.name, labels), *_indicator(self.missing)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": "categorical",
                               "categories": list(self.categories)}
        if self.missing is not None:
            out["missing"] = self.missing.to_dict()
        return out


@dataclass(frozen=True)
class Ordinal:
    """An ordered discrete column; the code of a value is its rank in ``order``."""

    name: str
    order: tuple[str, ...]
    missing: MissingPolicy | None = None

    def __init__(self, name: str, order: Sequence[str | int], *,
                 missing: MissingPolicy | Mapping[str, Any] | None = None) -> None:
        checked = _check_name(name)
        object.__setattr__(self, "name", checked)
        labels = _check_labels(checked, order, "order")
        object.__setattr__(self, "order", labels)
        policy = _policy(checked, missing)
        _check_discrete_policy(checked, labels, policy)
        object.__setattr__(self, "missing", policy)

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

    def loaded(self) -> list[Column]:
        """The column(s) the loaders produce (a missing category is the last rank)."""
        if self.missing is None:
            return [self]
        labels = list(self.order)
        if self.missing.policy == "category":
            assert self.missing.label is not None
            labels.append(self.missing.label)
        return [Ordinal(self.name, labels), *_indicator(self.missing)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": "ordinal", "order": list(self.order)}
        if self.missing is not None:
            out["missing"] = self.missing.to_dict()
        return out


@dataclass(frozen=True)
class Continuous:
    """A real column with declared public bounds ``lower < upper`` (both finite).

    ``bins=K`` makes the loaders cut the column into ``K`` equal-width bins of the declared
    bounds (:func:`bin_edges`): the loaded schema has an :class:`Ordinal` column of that
    name instead. ``missing`` is a :class:`MissingPolicy` (``category`` needs ``bins``).
    """

    name: str
    lower: float
    upper: float
    missing: MissingPolicy | None = None
    bins: int | None = None

    def __init__(self, name: str, lower: float, upper: float, *,
                 missing: MissingPolicy | Mapping[str, Any] | None = None,
                 bins: int | None = None) -> None:
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
        if bins is not None and (isinstance(bins, bool) or not isinstance(bins, int)
                                 or not 2 <= bins <= MAX_BINS):
            raise SchemaError(f"column {checked!r}: bins must be an integer from 2 to "
                              f"{MAX_BINS}, got {bins!r}")
        if bins is not None and len(set(bin_edges(bounds[0], bounds[1], bins))) != bins + 1:
            raise SchemaError(f"column {checked!r}: {bins} bins of the declared bounds are "
                              "narrower than the float spacing (rule: the bin edges must "
                              "differ); declare fewer bins")
        object.__setattr__(self, "bins", bins)
        policy = _policy(checked, missing)
        if policy is not None:
            self._check_policy(policy)
        object.__setattr__(self, "missing", policy)

    def _check_policy(self, policy: MissingPolicy) -> None:
        where = f"column {self.name!r}"
        if policy.policy == "category" and self.bins is None:
            raise SchemaError(f'{where}: missing policy "category" needs a discrete column; '
                              'a continuous column takes "impute" (optionally with an '
                              '"indicator"), or "category" together with "bins"')
        if policy.policy == "impute":
            value = policy.value
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(float(value)) \
                    or not self.lower <= float(value) <= self.upper:
                raise SchemaError(f"{where}: the imputed value must be a number within the "
                                  f"declared bounds [{self.lower!r}, {self.upper!r}], got "
                                  f"{value!r}")
        if policy.tokens is not None:
            for token in policy.tokens:
                number = _token_number(token)
                if number is not None and self.lower <= number <= self.upper:
                    raise SchemaError(f"{where}: missing token {token!r} is a number within "
                                      "the declared bounds (rule: a cell is either a value or "
                                      "missing); choose a sentinel outside the bounds")

    @property
    def kind(self) -> ColumnKind:
        return "continuous"

    @property
    def is_discrete(self) -> bool:
        return False

    @property
    def cardinality(self) -> None:
        return None

    @property
    def edges(self) -> tuple[float, ...] | None:
        """The public bin edges (``bins`` is set), else ``None``."""
        return None if self.bins is None else bin_edges(self.lower, self.upper, self.bins)

    def loaded(self) -> list[Column]:
        """The column(s) the loaders produce: an :class:`Ordinal` of the bins (plus the
        missing category) when ``bins`` is set, the plain column otherwise; then the
        indicator column, if any."""
        if self.missing is None and self.bins is None:
            return [self]
        edges = self.edges
        first: Column
        if edges is None:
            first = Continuous(self.name, self.lower, self.upper)
        else:
            labels = list(_bin_labels(edges))
            if self.missing is not None and self.missing.policy == "category":
                assert self.missing.label is not None
                if self.missing.label in labels:
                    raise SchemaError(f"column {self.name!r}: the missing category's label "
                                      f"{self.missing.label!r} is a bin label; choose another")
                labels.append(self.missing.label)
            first = Ordinal(self.name, labels)
        return [first, *_indicator(self.missing)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": "continuous", "lower": self.lower,
                               "upper": self.upper}
        if self.bins is not None:
            out["bins"] = self.bins
        if self.missing is not None:
            out["missing"] = self.missing.to_dict()
        return out


def _token_number(token: str) -> float | None:
    """A missing token that reads as a finite number (a sentinel such as ``"-999"``)."""
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


Column = Categorical | Ordinal | Continuous

_KEYS: dict[str, tuple[str, ...]] = {
    "categorical": ("name", "type", "categories"),
    "ordinal": ("name", "type", "order"),
    "continuous": ("name", "type", "lower", "upper"),
}

#: Optional keys per column type (a schema without them loads exactly as before).
_OPTIONAL: dict[str, tuple[str, ...]] = {
    "categorical": ("missing",),
    "ordinal": ("missing",),
    "continuous": ("missing", "bins"),
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
    absent = [key for key in allowed if key not in spec]
    if absent:
        raise SchemaError(f"{where}: missing key(s) {absent} for type {kind!r}")
    extra = sorted(str(key) for key in spec
                   if key not in allowed and key not in _OPTIONAL[kind])
    if extra:
        raise SchemaError(f"{where}: unknown key(s) {extra} for type {kind!r}")
    missing: MissingPolicy | None = None
    if "missing" in spec:
        missing = MissingPolicy.from_dict(where, spec["missing"])
    if kind == "categorical":
        return Categorical(spec["name"], spec["categories"], missing=missing)
    if kind == "ordinal":
        return Ordinal(spec["name"], spec["order"], missing=missing)
    return Continuous(spec["name"], spec["lower"], spec["upper"], missing=missing,
                      bins=spec.get("bins"))


@dataclass(frozen=True)
class Schema:
    """An ordered, validated tuple of uniquely named columns."""

    columns: tuple[Column, ...]
    missing_tokens: tuple[str, ...] | None = None
    #: Columns of the file that are NOT analysed (an identifier, free text): their names
    #: are declared, their cells are never read.
    ignore: tuple[str, ...] = ()

    def __init__(self, columns: Sequence[Column], *,
                 missing_tokens: Sequence[str] | None = None,
                 ignore: Sequence[str] = ()) -> None:
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
        tokens = None if missing_tokens is None else _check_tokens("missing_tokens",
                                                                   missing_tokens)
        if isinstance(ignore, str) or not isinstance(ignore, list | tuple) or not all(
                isinstance(name, str) and name for name in ignore):
            raise SchemaError(f'"ignore" must be a list of column names, got {ignore!r}')
        both = sorted(set(ignore) & seen)
        if both:
            raise SchemaError(f'column(s) {both} are both declared and in "ignore" (rule: a '
                              "column is analysed or ignored)")
        if len(set(ignore)) != len(ignore):
            raise SchemaError('"ignore" names a column twice')
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "missing_tokens", tokens)
        object.__setattr__(self, "ignore", tuple(ignore))
        object.__setattr__(self, "_index", {col.name: j for j, col in enumerate(cols)})
        loaded = [out for col in cols for out in col.loaded()]
        names = [col.name for col in loaded]
        clash = sorted({name for name in names if names.count(name) > 1})
        if clash:
            raise SchemaError(f"indicator column name(s) {clash} clash with other columns "
                              "(rule: every loaded column has its own name)")
        if tokens is not None:
            for col in cols:
                if isinstance(col, Continuous) and (col.missing is None
                                                    or col.missing.tokens is None):
                    for token in tokens:
                        number = _token_number(token)
                        if number is not None and col.lower <= number <= col.upper:
                            raise SchemaError(
                                f"column {col.name!r}: schema-wide missing token {token!r} is "
                                "a number within the declared bounds (rule: a cell is either "
                                "a value or missing)")
        plain = all(len(c.loaded()) == 1 and c.loaded()[0] is c for c in cols)
        object.__setattr__(self, "_loaded", None if plain else loaded)

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
        return Schema([self.columns[j] for j in self.positions(columns)],
                      missing_tokens=self.missing_tokens)

    # -- missing values and transforms -------------------------------------------------
    @property
    def has_transforms(self) -> bool:
        """True when some column declares a missing policy or bins (the loaded schema
        then differs from this one)."""
        return self.__dict__["_loaded"] is not None

    def loaded(self) -> Schema:
        """The schema of the data the loaders produce: bins as :class:`Ordinal` columns,
        a missing category appended to its column's labels, indicator columns right after
        their column; no missing policies or bins left. ``self`` when there are none."""
        loaded: list[Column] | None = self.__dict__["_loaded"]
        if loaded is None:
            return self
        return Schema(loaded)

    def missing_rule(self, column: int | str) -> tuple[frozenset[str], MissingPolicy | None]:
        """The cell texts read as missing in ``column`` and its policy.

        Tokens: the column's own declared ``tokens``, else the schema's
        ``missing_tokens``, else :data:`DEFAULT_MISSING_TOKENS` -- minus the column's
        declared labels (a label is never missing). For a column without a policy (or
        ``refuse``), the defaults are always included so that the error says "missing".
        """
        j = self.positions([column])[0]
        col = self.columns[j]
        policy = col.missing
        declared = policy.tokens if policy is not None and policy.tokens is not None \
            else self.missing_tokens
        tokens = set(DEFAULT_MISSING_TOKENS if declared is None else declared)
        if policy is None or not policy.active:
            tokens |= DEFAULT_MISSING_TOKENS
        if not isinstance(col, Continuous):
            tokens -= set(col.labels)
        return frozenset(tokens), policy

    @property
    def deletes_rows(self) -> tuple[str, ...]:
        """Columns with the ``drop_rows`` policy (``n`` depends on the data with them)."""
        return tuple(c.name for c in self.columns
                     if c.missing is not None and c.missing.policy == "drop_rows")

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
        out: dict[str, Any] = {"columns": [col.to_dict() for col in self.columns]}
        if self.missing_tokens is not None:
            out["missing_tokens"] = list(self.missing_tokens)
        if self.ignore:
            out["ignore"] = list(self.ignore)
        return out

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
        extra = sorted(str(key) for key in data
                       if key not in ("columns", "missing_tokens", "ignore"))
        if extra:
            raise SchemaError(f"unknown top-level schema key(s) {extra}")
        columns = data["columns"]
        if not isinstance(columns, list):
            raise SchemaError(f'"columns" must be a list, got {type(columns).__name__}')
        return cls([_column_from_dict(i, spec) for i, spec in enumerate(columns)],
                   missing_tokens=data.get("missing_tokens"), ignore=data.get("ignore", ()))

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
