"""Where a private run's statistics are counted: public options -> a table engine.

Private discovery runs on every registered table engine (:mod:`dpcg.stats.engine`):
``numpy`` (in memory), ``duckdb`` (embedded, out of core) and ``spark`` (distributed).
:func:`resolve_engine` turns what a user gives -- an engine name, a data path or Parquet
glob, ``FILE.duckdb:TABLE``, a Spark master URL, a DuckDB memory limit, an open DuckDB
connection or relation, a Spark DataFrame, or an engine already built -- into the object
the run reads: a :class:`dpcg.data.Dataset` (the ``numpy`` engine) or a
:class:`~dpcg.stats.engine.TableEngine`.

Guarantees (PRIVACY.md; docs/scale.md):

* The engine validates the data against the declared schema when it is built (one
  aggregate query: values outside the declared categories, NULLs, wrong types; the
  column and the rule are named, never a value, a row number or a count), i.e. before
  the run opens a session: nothing is charged on bad data.
* ``n`` is counted once, by the engine, and is the public size (replace-one).
* Only ``accounting`` draws noise; Priv-PC's subsample rows come from an ``accounting``
  primitive and the engine only selects them (:meth:`TableEngine.subset`).
* The ledger records which engine computed the statistics: the run's description
  (hashed with the run record) ends with ``engine=NAME`` (:func:`run_description`); a
  description without it is the in-memory ``numpy`` engine (as in older ledgers).

Which engine by default (:func:`default_engine_name`) is a *public* decision: a Parquet
glob or directory (or ``FILE.duckdb:TABLE``) goes to DuckDB, and so does a file larger than
:data:`RAM_SHARE` of the machine's memory; everything else to ``numpy``. File sizes and
the amount of RAM are not data values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.errors import AlgorithmError, DataValidationError
from dpcg.stats.engine import DEFAULT_ENGINE, TableEngine, engine_names, get_engine

__all__ = [
    "RAM_SHARE",
    "check_engine_algorithm",
    "default_engine_name",
    "engine_name_of",
    "resolve_engine",
    "run_description",
]

#: A data file larger than this share of physical memory is read by DuckDB by default
#: (``DPCG_ENGINE_RAM_SHARE`` overrides it).
RAM_SHARE = 0.25

_PARQUET = (".parquet", ".parq", ".pq")


def _ram_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def _ram_share() -> float:
    raw = os.environ.get("DPCG_ENGINE_RAM_SHARE")
    if raw is None:
        return RAM_SHARE
    try:
        share = float(raw)
    except ValueError:
        raise DataValidationError(
            f"DPCG_ENGINE_RAM_SHARE: expected a number in (0, 1], got {raw!r}") from None
    if not 0 < share <= 1:
        raise DataValidationError(f"DPCG_ENGINE_RAM_SHARE: expected a number in (0, 1], got "
                                  f"{raw!r}")
    return share


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _is_parquet(text: str) -> bool:
    low = text.lower()
    return low.endswith(_PARQUET) or (_is_glob(text) and ".parq" in low) or (
        Path(text).is_dir())


def _duckdb_table(text: str) -> tuple[str, str] | None:
    """``FILE.duckdb:TABLE`` -> ``(FILE.duckdb, TABLE)``."""
    for ext in (".duckdb:", ".db:", ".ddb:"):
        at = text.lower().rfind(ext)
        if at >= 0:
            cut = at + len(ext) - 1
            return text[:cut], text[cut + 1:]
    return None


def default_engine_name(data: str | os.PathLike[str], *, ram_share: float | None = None) -> str:
    """``duckdb`` for a Parquet glob or directory, a DuckDB table, or a file larger than
    ``ram_share`` (default :data:`RAM_SHARE`) of physical memory; ``numpy`` otherwise.
    Public: decided from the path, the file size and the RAM, never from data values."""
    text = str(data)
    if _duckdb_table(text) is not None or _is_glob(text) or Path(text).is_dir():
        return "duckdb"
    share = _ram_share() if ram_share is None else float(ram_share)
    ram = _ram_bytes()
    try:
        size = Path(text).stat().st_size
    except OSError:
        return DEFAULT_ENGINE
    if ram is not None and size > share * ram:
        return "duckdb"
    return DEFAULT_ENGINE


def engine_name_of(data: object) -> str:
    """The registry name of the engine that counts ``data``'s statistics."""
    if isinstance(data, TableEngine):
        return str(data.name)
    return DEFAULT_ENGINE


def run_description(algorithm: str, test: str, data: object) -> str:
    """The ledger run's description: ``dpcg ALGORITHM/TEST engine=NAME`` for an
    out-of-core engine; ``dpcg ALGORITHM/TEST`` (as in every ledger written before the
    engines) for the in-memory ``numpy`` engine, so its ledgers stay byte-identical."""
    name = engine_name_of(data)
    if name == DEFAULT_ENGINE:
        return f"dpcg {algorithm}/{test}"
    return f"dpcg {algorithm}/{test} engine={name}"


def check_engine_algorithm(data: object, algorithm: object) -> None:
    """A table engine feeds the discrete family only (contingency tables); refused before
    anything is charged otherwise."""
    from dpcg.private.common import DiscreteAlgorithm

    if isinstance(data, TableEngine) and not isinstance(algorithm, DiscreteAlgorithm):
        name = getattr(algorithm, "name", type(algorithm).__name__)
        raise AlgorithmError(f"engine: {name} needs the rows in memory (engine numpy); the "
                             f"{data.name} engine serves the discrete algorithms")


def _type_name(obj: object) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__name__}"


def _spark_session(master: str | None) -> Any:
    from dpcg.stats.engine_specs import local_spark

    return local_spark(master or "local[2]")


def _need_schema(schema: Schema | None, what: str) -> Schema:
    if not isinstance(schema, Schema):
        raise DataValidationError(f"{what} needs the declared schema (--schema FILE / "
                                  "schema=Schema(...))")
    return schema


def resolve_engine(
    data: object,
    engine: object = None,
    *,
    schema: Schema | None = None,
    spark_master: str | None = None,
    memory_limit: str | None = None,
    table: str | None = None,
) -> Dataset | TableEngine:
    """What a private run reads (module docstring).

    ``data``: a :class:`Dataset`, a :class:`TableEngine`, a path (CSV, Parquet file, glob or
    directory, ``FILE.duckdb:TABLE``), a DuckDB relation or a Spark DataFrame.
    ``engine``: ``None`` (chosen from ``data``), a registered name (``numpy``, ``duckdb``,
    ``spark``) or an open DuckDB connection (``data`` is then a table name or a relation of
    it). ``schema`` is required for everything that is not already a Dataset or an engine.
    """
    name: str | None = None
    connection: Any = None
    if isinstance(engine, str):
        if engine not in engine_names():
            raise AlgorithmError(f"engine: unknown table engine {engine!r}; choose from "
                                 f"{list(engine_names())}")
        name = engine
    elif engine is not None:
        if _type_name(engine).startswith("duckdb") and hasattr(engine, "execute"):
            connection, name = engine, "duckdb"
        else:
            raise AlgorithmError(f"engine: expected an engine name, a DuckDB connection or "
                                 f"None, got {type(engine).__name__}")
    if memory_limit is not None and name not in (None, "duckdb"):
        raise AlgorithmError("memory_limit: only the duckdb engine takes a memory limit")
    if spark_master is not None and name not in (None, "spark"):
        raise AlgorithmError("spark_master: only the spark engine takes a master URL")
    if name is None and spark_master is not None:
        name = "spark"
    if isinstance(data, TableEngine):
        if name is not None and name != data.name:
            raise AlgorithmError(f"engine: got a {data.name} engine and engine={name!r}")
        return data
    if isinstance(data, Dataset):
        return _from_dataset(data, name or DEFAULT_ENGINE, spark_master, memory_limit)
    tname = _type_name(data)
    if tname.startswith("pyspark") and hasattr(data, "sparkSession"):
        if name not in (None, "spark"):
            raise AlgorithmError(f"engine: a Spark DataFrame runs on spark, not {name!r}")
        from dpcg.stats.spark_engine import SparkEngine

        frame: Any = data
        return SparkEngine.from_dataframe(frame, _need_schema(schema, "a Spark DataFrame"))
    if tname.startswith("duckdb") and "Relation" in tname:
        from dpcg.stats.duckdb_engine import DuckDBEngine

        if connection is None:
            raise AlgorithmError("engine: a DuckDB relation needs its connection "
                                 "(engine=connection)")
        relation: Any = data
        return DuckDBEngine.from_relation(relation, _need_schema(schema, "a DuckDB relation"),
                                          connection, memory_limit=memory_limit)
    if connection is not None:
        if not isinstance(data, str):
            raise AlgorithmError("data: with engine=<DuckDB connection>, give a table name "
                                 "or a relation")
        from dpcg.stats.duckdb_engine import DuckDBEngine

        return DuckDBEngine.from_table(connection, data, _need_schema(schema, "a DuckDB table"),
                                       memory_limit=memory_limit)
    if isinstance(data, str | os.PathLike):
        return _from_path(str(data), name, _need_schema(schema, "--data"), spark_master,
                          memory_limit, table)
    raise AlgorithmError(f"data: expected a Dataset, a table engine, a path, a DuckDB "
                         f"relation or a Spark DataFrame, got {type(data).__name__}")


def _from_dataset(ds: Dataset, name: str, spark_master: str | None,
                  memory_limit: str | None) -> Dataset | TableEngine:
    """A dataset already in memory on engine ``name`` (``memory_limit`` is moot here)."""
    if name == DEFAULT_ENGINE:
        return ds
    cards = ds.cardinalities
    if any(c is None for c in cards):
        raise AlgorithmError(f"engine: the {name} engine counts discrete columns only; the "
                             "dataset has continuous columns")
    ints = [int(c) for c in cards if c is not None]
    if name == "spark" and spark_master is not None:
        from dpcg.stats.engine_specs import codes_schema
        from dpcg.stats.spark_engine import SparkEngine

        arr, schema = codes_schema(ds.codes, ints, ds.names)
        spark = _spark_session(spark_master)
        ddl = ", ".join(f"`{n.replace('`', '``')}` long" for n in schema.names)
        df = spark.createDataFrame([tuple(r) for r in arr.T.tolist()], ddl)
        return SparkEngine.from_dataframe(df, schema, where="dataset")
    return get_engine(name).from_codes(ds.codes, ints, ds.names)


def _from_path(text: str, name: str | None, schema: Schema, spark_master: str | None,
               memory_limit: str | None, table: str | None) -> Dataset | TableEngine:
    db = _duckdb_table(text) if table is None else (text, table)
    chosen = name or default_engine_name(text)
    if chosen == DEFAULT_ENGINE:
        if db is not None or _is_glob(text) or (_is_parquet(text) and Path(text).is_dir()):
            raise AlgorithmError(f"engine: {text} is read by the duckdb or spark engine, "
                                 "not numpy")
        from dpcg.data.loaders import load_table

        return load_table(Path(text), schema)
    if chosen == "duckdb":
        from dpcg.stats.duckdb_engine import DuckDBEngine

        if db is not None:
            return DuckDBEngine.from_table(db[0], db[1], schema, memory_limit=memory_limit)
        if _is_glob(text) or _is_parquet(text):
            target = str(Path(text) / "*.parquet") if Path(text).is_dir() else text
            return DuckDBEngine.from_parquet(target, schema, memory_limit=memory_limit)
        return DuckDBEngine.from_csv(text, schema, memory_limit=memory_limit,
                                     delimiter="\t" if text.lower().endswith(".tsv") else ",")
    if chosen == "spark":
        from dpcg.stats.spark_engine import SparkEngine

        if db is not None:
            raise AlgorithmError("engine: a DuckDB table is read by the duckdb engine")
        spark = _spark_session(spark_master)
        if _is_glob(text) or _is_parquet(text):
            return SparkEngine.from_parquet(spark, text, schema)
        if not Path(text).is_file():
            raise DataValidationError(f"cannot read {text}: no such file")
        sep = "\t" if text.lower().endswith(".tsv") else ","
        df = spark.read.option("header", "true").option("sep", sep).csv(text).coalesce(1)
        return SparkEngine.from_dataframe(df, schema, where=text)
    raise AlgorithmError(f"engine: {chosen!r} cannot read files")
