"""DuckDB table engine: contingency tables counted where the data live, out of core.

:class:`DuckDBEngine` reads a Parquet glob, a CSV file, a table of a DuckDB database (by
name) or an existing DuckDB relation, and answers batches of ``(x, y, S)`` queries with
the exact :class:`~dpcg.stats.contingency.StrataTable`\\ s that
:func:`~dpcg.stats.contingency.contingency_table` returns on the same data (bit for bit).
Only aggregates leave DuckDB; no row reaches Python. Memory is bounded by DuckDB's
``memory_limit`` (spilling to its temporary directory beyond it).

Public facts (PRIVACY.md): ``n`` (counted once, replace-one), the declared
``cardinalities`` and ``names``. Everything else stays inside the engine until a table is
handed to a primitive of ``accounting``.

Counting strategy for one ``tables(queries)`` call (the output never depends on it):

1. *Joint cache.* The first batch asks DuckDB for the joint counts of all discrete
   columns (``GROUP BY`` every column, codes in the smallest unsigned type,
   ``LIMIT joint_limit + 1``). If at most ``joint_limit`` distinct rows exist they are
   kept (codes + counts, ``p + 8`` bytes per distinct row) and every later query of every
   batch is a NumPy marginal of it: one scan for the whole run. This is the "widest
   marginal" of the batch, taken once. ``joint_limit`` defaults to a value derived from
   DuckDB's ``memory_limit`` (:func:`derived_joint_limit`, at least :data:`JOINT_LIMIT`),
   so the process holds about DuckDB's limit plus a cache no larger than it.
2. *Grouping sets.* Otherwise each batch's distinct column sets are counted with
   ``GROUP BY GROUPING SETS``, at most ``sets_per_scan`` sets per query (one scan each).

Which branch runs affects speed and :attr:`DuckDBEngine.scans` only; it is a benchmark
counter, not a release.

Row order (for :meth:`DuckDBEngine.subset`): rows are numbered ``0..n-1`` once,

* Parquet: files in increasing path order (the sorted glob expansion), rows in file order
  within a file (DuckDB's ``file_row_number``); position = rows of earlier files +
  ``file_row_number``;
* a DuckDB table: its ``rowid`` order (insertion order); if the table has gaps in
  ``rowid`` (deleted rows), or the source is a CSV file or a relation, it is copied once
  into a temporary table in scan order and that table's ``rowid`` is used.

``subset(rows)`` keeps the rows at those positions (a semi-join with the selected
positions); see docs/privacy/engine-subsample.md for why a uniform without-replacement
index set gives a uniform without-replacement sample of rows.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpcg.data.schema import Schema
from dpcg.data.sql_validate import (
    quote_ident,
    raise_violations,
    validation_plan,
)
from dpcg.engines.grouped import (
    JOINT_LIMIT,
    MAX_UNION,
    SETS_PER_SCAN,
    GroupedEngine,
    arrow_columns,
    check_subset_rows,
    code_columns,
    violations_of,
)
from dpcg.errors import DataValidationError, MissingDependencyError, StatisticInputError

if TYPE_CHECKING:  # the optional dependency is imported lazily on purpose
    import duckdb

__all__ = [
    "JOINT_LIMIT", "MAX_UNION", "SETS_PER_SCAN", "DuckDBEngine", "derived_joint_limit",
    "open_duckdb", "parse_size",
]

_ids = itertools.count()


def _duckdb() -> Any:
    try:
        import duckdb  # optional extra: deferred so the core install stays light
    except ImportError:
        raise MissingDependencyError(
            "the DuckDB engine needs the optional packages 'duckdb' and 'pyarrow'; install "
            "them with `pip install 'dpcg[duckdb]'`"
        ) from None
    return duckdb


def _pyarrow() -> Any:
    try:
        import pyarrow  # optional extra (see _duckdb)
    except ImportError:
        raise MissingDependencyError(
            "the DuckDB engine needs the optional package 'pyarrow'; install it with "
            "`pip install 'dpcg[duckdb]'`"
        ) from None
    return pyarrow


#: DuckDB errors whose text names files, tables or columns (never data values); the text
#: of any other DuckDB error (e.g. a conversion error quoting a value) is not repeated.
_NAMING_ERRORS = ("IOException", "CatalogException", "BinderException", "HTTPException")


def _read_error(exc: Exception, where: str) -> DataValidationError:
    """A :class:`DataValidationError` for a DuckDB failure reading ``where``."""
    kind = type(exc).__name__
    if kind in _NAMING_ERRORS:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
        return DataValidationError(f"DuckDB could not read {where}: {first}")
    return DataValidationError(f"DuckDB could not read {where} ({kind})")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _Root:
    """What subsets share with the engine they came from: the connection, the numbered
    source and the codes expressions."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        raw_view: str,
        numbered_view: str,
        code_sql: dict[int, str],
        where: str,
        own_connection: bool,
    ) -> None:
        self.con = con
        self.raw_view = raw_view
        self.numbered_view = numbered_view
        self.code_sql = code_sql
        self.where = where
        self.own_connection = own_connection


class DuckDBEngine(GroupedEngine):
    """Contingency tables of a table that DuckDB reads (see the module docstring).

    Build one with :meth:`from_parquet`, :meth:`from_csv`, :meth:`from_table`,
    :meth:`from_relation` or :func:`open_duckdb`. The constructor validates the data
    against the schema with one aggregate query before anything else (no budget is ever
    spent on data that do not conform).
    """

    def __init__(
        self,
        root: _Root,
        schema: Schema,
        n: int,
        codes_view: str,
        positions: NDArray[np.int64] | None,
        *,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> None:
        self._root = root
        self.schema = schema
        self.n = int(n)
        self.names: tuple[str, ...] = schema.names
        self._codes_view = codes_view
        self._positions = positions
        self._init_counting(schema.cardinalities, joint_limit, sets_per_scan)
        #: SQL statements that read the data (validation, n, counts, subset selection).
        self.scans = 0

    name = "duckdb"

    # -- construction ------------------------------------------------------------------
    @staticmethod
    def _connect(
        connection: duckdb.DuckDBPyConnection | None,
        memory_limit: str | None,
        threads: int | None,
        temp_directory: str | os.PathLike[str] | None = None,
    ) -> tuple[duckdb.DuckDBPyConnection, bool]:
        duckdb = _duckdb()
        own = connection is None
        con = duckdb.connect(":memory:") if connection is None else connection
        try:
            if memory_limit is not None:
                con.execute(f"SET memory_limit = {_sql_string(str(memory_limit))}")
            if threads is not None:
                if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
                    raise StatisticInputError(f"threads must be a positive int, got {threads!r}")
                con.execute(f"SET threads = {int(threads)}")
            if temp_directory is not None:
                con.execute(f"SET temp_directory = {_sql_string(str(temp_directory))}")
            con.execute("SET preserve_insertion_order = true")
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StatisticInputError(
                f"invalid DuckDB setting (memory_limit={memory_limit!r}, threads={threads!r}, "
                f"temp_directory={temp_directory!r}): {first}"
            ) from None
        return con, own

    @classmethod
    def _finish(
        cls,
        con: duckdb.DuckDBPyConnection,
        own: bool,
        schema: Schema,
        raw_view: str,
        numbered_view: str,
        where: str,
        file_column: str | None,
        n: int | None,
        joint_limit: int | None,
        sets_per_scan: int,
    ) -> DuckDBEngine:
        if not isinstance(schema, Schema):
            raise DataValidationError(
                f"schema must be a dpcg.data.Schema, got {type(schema).__name__}"
            )
        described = con.execute(f"DESCRIBE SELECT * FROM {raw_view}").fetchall()
        types = {str(row[0]): str(row[1]) for row in described}
        scans = _validate(con, schema, raw_view, types, where, file_column)
        code_sql = code_columns(schema, types, where, "duckdb")
        root = _Root(con, raw_view, numbered_view, code_sql, where, own)
        codes_view = _codes_view(root, raw_view)
        if n is None:
            n = int(con.execute(f"SELECT count(*) FROM {raw_view}").fetchall()[0][0])
            scans += 1
        # counted as loaded: missing categories, indicators and bins applied (the codes)
        engine = cls(
            root, schema.loaded(), n, codes_view, None, joint_limit=joint_limit,
            sets_per_scan=sets_per_scan,
        )
        engine.scans += scans
        return engine

    @classmethod
    def from_parquet(
        cls,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        schema: Schema,
        *,
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
        connection: duckdb.DuckDBPyConnection | None = None,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> DuckDBEngine:
        """A Parquet file, glob (``'lake/*.parquet'``) or list of files/globs.

        ``memory_limit`` (e.g. ``"2GB"``), ``threads`` and ``temp_directory`` (where DuckDB
        spills beyond the memory limit; DuckDB's default is ``.tmp`` in the working
        directory) are DuckDB settings, applied to the connection (a given ``connection``
        is changed for its whole session)."""
        patterns = [str(path)] if isinstance(path, str | os.PathLike) else [str(p) for p in path]
        con, own = cls._connect(connection, memory_limit, threads, temp_directory)
        where = patterns[0] if len(patterns) == 1 else ", ".join(patterns)
        try:
            return cls._open_parquet(con, own, patterns, where, schema, joint_limit, sets_per_scan)
        except _duckdb().Error as exc:
            raise _read_error(exc, where) from None

    @classmethod
    def _open_parquet(
        cls,
        con: duckdb.DuckDBPyConnection,
        own: bool,
        patterns: list[str],
        where: str,
        schema: Schema,
        joint_limit: int | None,
        sets_per_scan: int,
    ) -> DuckDBEngine:
        files: list[str] = []
        for pattern in patterns:
            listed = con.execute("SELECT file FROM glob(?)", [pattern]).fetchall()
            found = [str(r[0]) for r in listed]
            if not found:
                raise DataValidationError(f"no Parquet file matches {pattern}")
            files.extend(found)
        files = sorted(set(files))
        file_list = "[" + ", ".join(_sql_string(f) for f in files) + "]"
        meta = con.execute(
            f"SELECT file_name, sum(num_rows) FROM parquet_file_metadata({file_list}) "
            "GROUP BY file_name"
        ).fetchall()
        rows_of = {str(f): int(c) for f, c in meta}
        offsets: list[tuple[str, int]] = []
        total = 0
        for f in files:
            offsets.append((f, total))
            total += rows_of.get(f, 0)
        k = next(_ids)
        raw = f"__dpcg_raw_{k}"
        numbered = f"__dpcg_numbered_{k}"
        off = f"__dpcg_offsets_{k}"
        values = ", ".join(f"({_sql_string(f)}, {o})" for f, o in offsets)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {off}(f VARCHAR, o BIGINT)")
        con.execute(f"INSERT INTO {off} VALUES {values}")
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * FROM read_parquet({file_list}, "
            "filename = true, union_by_name = true)"
        )
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {numbered} AS SELECT p.*, "
            f"o.o + p.file_row_number AS __dpcg_row FROM read_parquet({file_list}, "
            f"filename = true, file_row_number = true, union_by_name = true) p "
            f"JOIN {off} o ON p.filename = o.f"
        )
        return cls._finish(
            con, own, schema, raw, numbered, where, "filename", total, joint_limit, sets_per_scan
        )

    @classmethod
    def _from_sql(
        cls,
        con: duckdb.DuckDBPyConnection,
        own: bool,
        select_sql: str,
        schema: Schema,
        where: str,
        joint_limit: int | None,
        sets_per_scan: int,
        table: str | None = None,
    ) -> DuckDBEngine:
        k = next(_ids)
        raw = f"__dpcg_raw_{k}"
        numbered = f"__dpcg_numbered_{k}"
        if table is not None:
            count, top = con.execute(f"SELECT count(*), max(rowid) FROM {table}").fetchall()[0]
            if count == 0 or top == count - 1:
                con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * FROM {table}")
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW {numbered} AS "
                    f"SELECT *, rowid AS __dpcg_row FROM {table}"
                )
                engine = cls._finish(
                    con, own, schema, raw, numbered, where, None, int(count), joint_limit,
                    sets_per_scan,
                )
                engine.scans += 1
                return engine
            select_sql = f"SELECT * FROM {table} ORDER BY rowid"
        copy = f"__dpcg_copy_{k}"
        con.execute(f"CREATE OR REPLACE TEMP TABLE {copy} AS {select_sql}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * FROM {copy}")
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {numbered} AS SELECT *, rowid AS __dpcg_row FROM {copy}"
        )
        engine = cls._finish(
            con, own, schema, raw, numbered, where, None, None, joint_limit, sets_per_scan
        )
        engine.scans += 1
        return engine

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        schema: Schema,
        *,
        delimiter: str = ",",
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
        connection: duckdb.DuckDBPyConnection | None = None,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> DuckDBEngine:
        """A CSV file with a header line; every field is read as text (as the in-memory
        CSV reader does) and copied once into a temporary table (which spills to disk
        beyond ``memory_limit``). For data larger than RAM prefer Parquet."""
        where = str(path)
        if not Path(path).is_file():
            raise DataValidationError(f"cannot read {where}: no such file")
        con, own = cls._connect(connection, memory_limit, threads, temp_directory)
        sql = (
            f"SELECT * FROM read_csv({_sql_string(where)}, header = true, all_varchar = true, "
            f"delim = {_sql_string(delimiter)})"
        )
        try:
            return cls._from_sql(con, own, sql, schema, where, joint_limit, sets_per_scan)
        except _duckdb().Error as exc:
            raise _read_error(exc, where) from None

    @classmethod
    def from_table(
        cls,
        database: duckdb.DuckDBPyConnection | str | os.PathLike[str],
        table: str,
        schema: Schema,
        *,
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> DuckDBEngine:
        """A table (or view) of a DuckDB database, given as an open connection or a
        database file (opened read-only). ``table`` may be qualified (``schema.table``);
        each part is quoted."""
        duckdb = _duckdb()
        if isinstance(database, str | os.PathLike):
            if not Path(database).is_file():
                raise DataValidationError(f"cannot read {database}: no such DuckDB database file")
            try:
                con = duckdb.connect(str(database), read_only=True)
            except duckdb.Error as exc:
                raise _read_error(exc, str(database)) from None
            own = True
            where = f"{database}:{table}"
        else:
            con = database
            own = False
            where = f"table {table}"
        con, _ = cls._connect(con, memory_limit, threads, temp_directory)
        qualified = ".".join(quote_ident(part, "duckdb") for part in table.split("."))
        try:
            kind = con.execute(
                "SELECT table_type FROM information_schema.tables WHERE table_name = ?",
                [table.split(".")[-1]],
            ).fetchall()
        except duckdb.Error as exc:  # pragma: no cover - catalogue always readable
            raise DataValidationError(f"cannot read {where}: {exc}") from None
        if not kind:
            raise DataValidationError(f"{where}: no such table or view")
        is_table = str(kind[0][0]).upper() == "BASE TABLE"
        try:
            return cls._from_sql(
                con,
                own,
                f"SELECT * FROM {qualified}",
                schema,
                where,
                joint_limit,
                sets_per_scan,
                table=qualified if is_table else None,
            )
        except duckdb.Error as exc:
            raise _read_error(exc, where) from None

    @classmethod
    def from_relation(
        cls,
        relation: duckdb.DuckDBPyRelation,
        schema: Schema,
        connection: duckdb.DuckDBPyConnection | None = None,
        *,
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | os.PathLike[str] | None = None,
        joint_limit: int | None = None,
        sets_per_scan: int = SETS_PER_SCAN,
    ) -> DuckDBEngine:
        """An existing relation of ``connection`` (default: DuckDB's default connection,
        the one ``duckdb.sql(...)`` uses), copied once into a temporary table in scan
        order, which fixes the row order. A relation of another connection needs that
        connection (refused otherwise, naming the fix)."""
        k = next(_ids)
        view = f"__dpcg_rel_{k}"
        given = connection is not None
        if connection is None:
            connection = _duckdb().default_connection()
        con, _ = cls._connect(connection, memory_limit, threads, temp_directory)
        try:
            try:
                relation.create_view(view, replace=True)
            except _duckdb().Error:
                if not given:
                    raise
                # a read-only database accepts temporary views only: the relation's own
                # SQL on the connection the caller says it belongs to
                con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {relation.sql_query()}")
            visible = con.execute(
                "SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [view]
            ).fetchall()[0][0]
            if not visible:
                raise StatisticInputError(
                    "the DuckDB relation belongs to another connection than the one given "
                    "(or the default one): pass its connection (engine=connection)"
                )
            return cls._from_sql(
                con, False, f"SELECT * FROM {view}", schema, "relation", joint_limit,
                sets_per_scan,
            )
        except _duckdb().Error as exc:
            raise _read_error(exc, "relation") from None

    # -- the TableEngine contract -----------------------------------------------------
    @property
    def where(self) -> str:
        """The source (file, glob or table name): public, named in errors."""
        return self._root.where

    def subset(self, rows: NDArray[np.int64]) -> DuckDBEngine:
        """The engine restricted to the rows at positions ``rows`` of this engine's row
        order (strictly increasing, as drawn by ``accounting``)."""
        absolute = check_subset_rows(rows, self.n, self._positions)
        pa = _pyarrow()
        root = self._root
        k = next(_ids)
        sel = f"__dpcg_sel_{k}"
        root.con.register(sel, pa.table({"pos": pa.array(absolute, type=pa.int64())}))
        raw = f"__dpcg_subset_{k}"
        root.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * EXCLUDE (__dpcg_row) FROM "
            f"{root.numbered_view} WHERE __dpcg_row IN (SELECT pos FROM {sel})"
        )
        codes_view = _codes_view(root, raw)
        return DuckDBEngine(
            root,
            self.schema,
            int(absolute.size),
            codes_view,
            np.array(absolute, dtype=np.int64),
            joint_limit=self._joint_limit,
            sets_per_scan=self._sets_per_scan,
        )

    def close(self) -> None:
        """Close the connection if the engine opened it."""
        if self._root.own_connection:
            self._root.con.close()

    # -- counting (the strategy: dpcg.engines.grouped.GroupedEngine) --------------------
    def _fetch(self, sql: str) -> dict[str, NDArray[Any]]:
        self.scans += 1
        try:
            relation = self._root.con.sql(sql)
            # DuckDB 2 names it to_arrow_table; 1.x has arrow() (both: a pyarrow Table).
            fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
            table = fetch()
        except _duckdb().Error as exc:
            raise _read_error(exc, self.where) from None
        return arrow_columns(table)

    def _default_joint_limit(self) -> int:
        """Derived from DuckDB's ``memory_limit`` (:func:`derived_joint_limit`)."""
        rows = self._root.con.execute("SELECT current_setting('memory_limit')").fetchall()
        return derived_joint_limit(parse_size(str(rows[0][0])), len(self._discrete()))

    def _fetch_joint(self, columns: list[int], limit: int) -> dict[str, NDArray[Any]]:
        # grouped (and fetched) in the smallest unsigned type holding the codes: a
        # distinct row costs p + 8 bytes, not 4p + 8 (alarm at 10^8 rows: 6.5 M rows)
        names = ", ".join(
            f"CAST(c{j} AS {_code_sql_type(int(self._declared[j] or 0))}) AS c{j}"
            for j in columns
        )
        return self._fetch(
            f"SELECT {names}, count(*) AS n FROM {self._codes_view} GROUP BY ALL LIMIT {limit}"
        )

    def _fetch_sets(
        self, chunk: list[tuple[int, ...]], union: list[int]
    ) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
        names = ", ".join(f"c{j}" for j in union)
        groups = ", ".join("(" + ", ".join(f"c{j}" for j in s) + ")" for s in chunk)
        got = self._fetch(
            f"SELECT GROUPING({names}) AS g, {names}, count(*) AS n "
            f"FROM {self._codes_view} GROUP BY GROUPING SETS ({groups})"
        )
        return got, got["g"].astype(np.int64)


def _code_sql_type(cardinality: int) -> str:
    """DuckDB's smallest unsigned integer type holding the codes ``0..cardinality-1``
    (the same widths as :func:`~dpcg.engines.grouped.small_codes`)."""
    return "UTINYINT" if cardinality <= 256 else "USMALLINT" if cardinality <= 65536 else "BIGINT"


_SIZE_UNITS = {
    "b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def parse_size(text: str) -> int:
    """Bytes of a DuckDB size setting as DuckDB prints it (``'953.6 MiB'``, ``'1.8 GiB'``)."""
    parts = text.strip().replace(" ", "")
    i = 0
    while i < len(parts) and (parts[i].isdigit() or parts[i] == "."):
        i += 1
    unit = parts[i:].lower() or "b"
    if i == 0 or unit not in _SIZE_UNITS:
        raise StatisticInputError(f"cannot read the DuckDB size setting {text!r}")
    return int(float(parts[:i]) * _SIZE_UNITS[unit])


def derived_joint_limit(memory_bytes: int, p: int) -> int:
    """The joint cache's row limit for a DuckDB ``memory_limit`` of ``memory_bytes``.

    A cached distinct row costs ``p + 8`` bytes (codes and its count), held twice while it
    is fetched (Arrow, then NumPy), plus 16 bytes of key and weight per row while a
    marginal is taken: ``2 (p + 8) + 16`` bytes. The limit keeps that within
    ``memory_limit`` (so the process stays within about twice the limit: DuckDB's own
    memory plus the cache), and never goes below :data:`JOINT_LIMIT`.
    """
    per_row = 2 * (p + 8) + 16
    return max(JOINT_LIMIT, int(memory_bytes) // per_row)


def _codes_view(root: _Root, raw: str) -> str:
    k = next(_ids)
    view = f"__dpcg_codes_{k}"
    cols = ", ".join(f"{sql} AS c{j}" for j, sql in sorted(root.code_sql.items()))
    if not cols:
        cols = "1 AS __dpcg_none"
    root.con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {cols} FROM {raw}")
    return view


def _validate(
    con: duckdb.DuckDBPyConnection,
    schema: Schema,
    raw_view: str,
    types: dict[str, str],
    where: str,
    file_column: str | None,
) -> int:
    """Run the validation plan; raise on any violation. Returns the number of scans."""
    plan = validation_plan(schema, types, where, "duckdb")
    raise_violations(plan.catalogue)
    if not plan.checks:
        return 0
    aggs = ", ".join(sql for _, _, sql in plan.checks)
    if file_column is not None:
        rows = con.execute(
            f"SELECT {quote_ident(file_column, 'duckdb')}, {aggs} FROM {raw_view} "
            f"GROUP BY 1 ORDER BY 1"
        ).fetchall()
        hits = [(str(row[0]), row[1:]) for row in rows]
    else:
        (row,) = con.execute(f"SELECT {aggs} FROM {raw_view}").fetchall()
        hits = [(where, row)]
    raise_violations(violations_of(plan.checks, hits))
    return 1


def open_duckdb(
    source: Any,
    schema: Schema,
    *,
    table: str | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
) -> DuckDBEngine:
    """A DuckDB engine for ``source``: a ``.parquet`` path or glob, a ``.csv`` file, a
    ``.duckdb``/``.db`` database file or an open connection (with ``table=``), or a DuckDB
    relation (with ``connection=``)."""
    duckdb = _duckdb()
    opts: dict[str, Any] = {
        "memory_limit": memory_limit,
        "threads": threads,
        "temp_directory": temp_directory,
    }
    if isinstance(source, duckdb.DuckDBPyRelation):
        if connection is None:
            raise StatisticInputError("a DuckDB relation needs connection= (its connection)")
        return DuckDBEngine.from_relation(source, schema, connection, **opts)
    if isinstance(source, duckdb.DuckDBPyConnection):
        if table is None:
            raise StatisticInputError("a DuckDB connection needs table= (the table name)")
        return DuckDBEngine.from_table(source, table, schema, **opts)
    if isinstance(source, str | os.PathLike):
        text = str(source).lower()
        if table is not None or text.endswith((".duckdb", ".db")):
            if table is None:
                raise StatisticInputError("a DuckDB database file needs table= (the table name)")
            return DuckDBEngine.from_table(source, table, schema, **opts)
        if text.endswith((".csv", ".tsv")):
            delim = "\t" if text.endswith(".tsv") else ","
            return DuckDBEngine.from_csv(
                source, schema, delimiter=delim, connection=connection, **opts
            )
        if text.endswith((".parquet", ".pq")) or "*" in text:
            return DuckDBEngine.from_parquet(source, schema, connection=connection, **opts)
    raise StatisticInputError(
        f"cannot tell how DuckDB should read {source!r}: use a .parquet path or glob, a .csv "
        "file, a DuckDB database (with table=), a connection (with table=) or a relation"
    )
