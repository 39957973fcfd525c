"""Table engines: where the contingency tables of a discrete dataset are counted.

Every statistic of the discrete private PC family is a function of the stratified
table of ``(x, y | S)`` (:class:`~dpcg.stats.contingency.StrataTable`). A
:class:`TableEngine` counts those tables where the data lives and hands back only the
small integer tables; scores (:mod:`dpcg.stats.scores`), sensitivities, thresholds,
noise, the filter and the ledger stay on the driver. The contract:

* **Public facts** (:attr:`TableEngine.n`, :attr:`TableEngine.cardinalities`,
  :attr:`TableEngine.names`): the number of rows, the *declared* number of categories
  of each column and the column names -- schema and size, nothing computed from the
  values.
* **Tables in batches** (:meth:`TableEngine.tables`): one call answers a list of
  ``(x, y, S)`` queries (a PC level, a Laplace-PC round) with exactly the tables of
  :func:`~dpcg.stats.contingency.contingency_table` (``int64`` counts, axes
  ``(stratum, x, y)``, observed strata only, in mixed-radix order of ``S`` with the
  first variable of ``S`` slowest), in the order of the queries; a repeated query gets
  an equal table. An out-of-core engine answers a batch in a few scans.
* **Subsamples** (:meth:`TableEngine.subset`): the same engine restricted to given row
  indices (a uniform without-replacement subsample of exact size ``m`` drawn by an
  ``accounting`` primitive, e.g.
  :meth:`accounting.mechanisms.SubsampledSVT.draw_subsample`). An engine never draws
  privacy randomness itself: it receives the rows. Its ``n`` is ``len(rows)``.

Queries are validated by the caller (:func:`dpcg.citests.base.validate_query`); an
engine may assume ``x != y``, indices in ``[0, p)`` and ``S`` disjoint from them.

Engines are found by name in a registry (:func:`register_engine`, :func:`get_engine`,
:func:`engine_names`): each :class:`EngineSpec` builds its engine from a ``(p, n)``
code array (:attr:`EngineSpec.from_codes`), which is how the conformance suite
(``tests/stats/test_engines.py``) tests every registered engine against
:func:`~dpcg.stats.contingency.contingency_table`. ``numpy`` (:class:`NumpyEngine`,
in memory) is the first engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from dpcg.engines.specs import duckdb_from_codes, spark_from_codes
from dpcg.errors import StatisticInputError
from dpcg.stats.bitset import BitsetTables
from dpcg.stats.contingency import (
    StrataTable,
    contingency_table,
    stratum_index,
    table_with_prefix,
)

__all__ = [
    "DEFAULT_ENGINE",
    "EngineSpec",
    "NumpyEngine",
    "Query",
    "TableEngine",
    "WarmsTables",
    "engine_names",
    "get_engine",
    "register_engine",
    "unregister_engine",
]

#: One CI query: ``(x, y, S)`` column indices (validated by the caller).
Query = tuple[int, int, tuple[int, ...]]

#: Row indices of a subsample (sorted ``int64``, drawn by an ``accounting`` primitive).
Rows = NDArray[np.int64]

#: The engine used when none is named.
DEFAULT_ENGINE = "numpy"


@runtime_checkable
class TableEngine(Protocol):
    """Counts the stratified contingency tables of one discrete dataset (module
    docstring: public facts, batched tables, subsamples from given rows)."""

    @property
    def name(self) -> str:
        """The registry name of the engine (recorded with the run)."""
        ...

    @property
    def n(self) -> int:
        """Number of rows (public: the declared size under replace-one)."""
        ...

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Declared number of categories of each column (public)."""
        ...

    @property
    def names(self) -> tuple[str, ...]:
        """Column names (public)."""
        ...

    def tables(self, queries: Sequence[Query]) -> list[StrataTable]:
        """The table of each query, in order (equal to
        :func:`~dpcg.stats.contingency.contingency_table` on the engine's rows)."""
        ...

    def subset(self, rows: Rows) -> TableEngine:
        """The same engine on the rows ``rows`` (indices into this engine's rows, drawn
        by an ``accounting`` primitive; public size ``len(rows)``)."""
        ...


@runtime_checkable
class WarmsTables(Protocol):
    """An engine for which counting many tables in one batch costs far less than counting
    them one at a time (each call a scan of data that live elsewhere: DuckDB, Spark).
    ``warm(queries)`` counts what the tables of ``queries`` need ahead of the
    :meth:`TableEngine.tables` calls that will ask for them one by one; the tables are
    the same either way."""

    def warm(self, queries: Sequence[Query]) -> None:
        """Prepare the tables of ``queries`` (replacing an earlier preparation)."""
        ...


@dataclass(frozen=True)
class EngineSpec:
    """A registered table engine.

    ``from_codes(codes, cardinalities, names)`` builds the engine on a ``(p, n)``
    integer code array whose codes lie in ``[0, cardinality)`` (checked by the caller),
    e.g. a :class:`dpcg.data.Dataset`'s ``codes``; engines reading data elsewhere
    (files, a database) add their own constructors, but every engine has this one, so
    that the conformance suite can compare it with
    :func:`~dpcg.stats.contingency.contingency_table` on the same data.
    """

    name: str
    from_codes: Callable[[NDArray[np.integer], Sequence[int], Sequence[str]], TableEngine]
    description: str


_ENGINES: dict[str, EngineSpec] = {}


def register_engine(spec: EngineSpec) -> None:
    """Add ``spec`` to the registry (a name may be registered once)."""
    if spec.name in _ENGINES:
        raise ValueError(f"table engine {spec.name!r} is already registered")
    _ENGINES[spec.name] = spec


def unregister_engine(name: str) -> None:
    """Remove an engine (tests registering a toy engine clean up with it)."""
    _ENGINES.pop(name, None)


def get_engine(name: str) -> EngineSpec:
    """The registered engine called ``name``; :class:`StatisticInputError` otherwise."""
    spec = _ENGINES.get(name)
    if spec is None:
        raise StatisticInputError(
            f"engine: unknown table engine {name!r}; choose from {engine_names()}")
    return spec


def engine_names() -> tuple[str, ...]:
    """Names of the registered engines, in registration order."""
    return tuple(_ENGINES)


class NumpyEngine:
    """The in-memory engine: a ``(p, n)`` code array.

    Small tables (decided from public quantities only: declared cardinalities, ``n``
    and which tables earlier queries cached) come from the bitset builder of
    :mod:`dpcg.stats.bitset`, the others from ``bincount``
    (:func:`~dpcg.stats.contingency.contingency_table`): the same tables either way.
    A subset gathers only the columns its queries touch, on first use.
    """

    name = "numpy"

    def __init__(self, codes: NDArray[np.integer], cardinalities: Sequence[int],
                 names: Sequence[str] | None = None) -> None:
        """``codes``: a ``(p, n)`` integer array with every code of column ``j`` in
        ``[0, cardinalities[j])`` (the caller's check: a :class:`dpcg.data.Dataset`
        validates on load)."""
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.dtype.kind not in "ui":
            raise StatisticInputError(
                f"codes: expected a (p, n) integer array, got shape {arr.shape} "
                f"dtype {arr.dtype}")
        cards = tuple(int(c) for c in cardinalities)
        if len(cards) != arr.shape[0]:
            raise StatisticInputError(
                f"cardinalities: got {len(cards)} for {arr.shape[0]} columns")
        self._init(np.ascontiguousarray(arr), None, None, cards,
                   _names(names, arr.shape[0]), int(arr.shape[1]))

    def _init(self, codes: NDArray[np.integer] | None, base: NDArray[np.integer] | None,
              rows: Rows | None, cards: tuple[int, ...], names: tuple[str, ...],
              n: int) -> None:
        self._codes = codes
        self._base = base  # subsets: the parent's codes
        self._rows = rows  # subsets: the row indices
        self._columns: dict[int, NDArray[np.integer]] = {}
        self._cards = cards
        self._names = names
        self._n = n
        self._bits: BitsetTables | None = None  # built on first use
        # the mixed-radix index of the last conditioning set's prefix S[:-1] (a function
        # of the public query sequence and the data; reused by the next query with the
        # same prefix, see table_with_prefix)
        self._prefix: tuple[tuple[int, ...], tuple[NDArray[np.intp], int]] | None = None

    # ------------------------------------------------------------ public facts
    @property
    def n(self) -> int:
        return self._n

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return self._cards

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    # ------------------------------------------------------------------ tables
    @property
    def codes(self) -> NDArray[np.integer]:
        """The ``(p, n)`` codes (for a subset: gathered on first access)."""
        if self._codes is None:
            assert self._base is not None
            assert self._rows is not None
            self._codes = np.ascontiguousarray(self._base[:, self._rows])
        return self._codes

    def column(self, j: int) -> NDArray[np.integer]:
        """Codes of column ``j`` (a subset gathers only the columns its tests touch)."""
        if self._codes is not None:
            own: NDArray[np.integer] = self._codes[j]
            return own
        col = self._columns.get(j)
        if col is None:
            assert self._base is not None
            assert self._rows is not None
            col = self._base[j][self._rows]
            self._columns[j] = col
        return col

    @property
    def bitsets(self) -> BitsetTables | None:
        """The bitset builder, once a query used it (``None`` before)."""
        return self._bits

    def table(self, x: int, y: int, S: tuple[int, ...]) -> StrataTable:
        """The stratified table of one (validated) query."""
        bits = self._bits
        if bits is None:
            bits = BitsetTables(None, self._cards, column=self.column)
            self._bits = bits
        if bits.usable(x, y, S):
            return bits.table(x, y, S)
        if self._codes is not None:
            if len(S) < 3:  # a prefix of at most one column saves nothing
                return contingency_table(self._codes, self._cards, x, y, S, check=False)
            head = S[:-1]
            cached = self._prefix
            if cached is None or cached[0] != head:
                cached = (head, stratum_index(self._codes, self._cards, head, check=False))
                self._prefix = cached
            return table_with_prefix(self._codes, self._cards, x, y, cached[1], S[-1])
        cols = (x, y, *S)  # only the columns of this test, in this order
        sub = np.stack([self.column(j) for j in cols])
        return contingency_table(sub, [self._cards[j] for j in cols], 0, 1,
                                 tuple(range(2, len(cols))), check=False)

    def tables(self, queries: Sequence[Query]) -> list[StrataTable]:
        table = self.table
        return [table(x, y, S) for x, y, S in queries]

    def subset(self, rows: Rows) -> NumpyEngine:
        idx = np.asarray(rows, dtype=np.int64)
        sub = NumpyEngine.__new__(NumpyEngine)
        sub._init(None, self.codes, idx, self._cards, self._names, int(idx.shape[0]))
        return sub


def _names(names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"X{j}" for j in range(p))
    out = tuple(str(v) for v in names)
    if len(out) != p:
        raise StatisticInputError(f"names: got {len(out)} for {p} columns")
    return out


register_engine(EngineSpec(
    name="numpy",
    from_codes=NumpyEngine,
    description="in memory: bitset tables for small tables, bincount for the others",
))

# The out-of-core engines (their optional packages load only when an engine is built).
register_engine(EngineSpec(
    name="duckdb",
    from_codes=duckdb_from_codes,
    description="embedded DuckDB, out of core: GROUP BY / GROUPING SETS, batched per round",
))
register_engine(EngineSpec(
    name="spark",
    from_codes=spark_from_codes,
    description="Spark DataFrame aggregations, batched per round; tables collected to the driver",
))
