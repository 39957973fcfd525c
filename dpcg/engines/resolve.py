"""Where a private run's statistics are counted: public options -> a table engine.

Private discovery runs on every registered table engine (:mod:`dpcg.engines.base`):
``numpy`` (in memory), ``duckdb`` (embedded, out of core) and ``spark`` (distributed).
:func:`resolve_engine` turns what a user gives -- an engine name, a data path or Parquet
glob, ``FILE.duckdb:TABLE``, a Spark master URL, a DuckDB memory limit, an open DuckDB
connection or relation, a Spark DataFrame, or an engine already built -- into the object
the run reads: a :class:`dpcg.data.Dataset` (the ``numpy`` engine) or a
:class:`~dpcg.engines.base.TableEngine`.

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

import math
import os
from pathlib import Path
from typing import Any

from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.engines.base import DEFAULT_ENGINE, TableEngine, engine_names, get_engine
from dpcg.errors import AlgorithmError, DataValidationError

__all__ = [
    "RAM_SHARE",
    "SPARK_CONNECT_TIMEOUT",
    "check_spark_master",
    "default_engine_name",
    "engine_name_of",
    "is_engine_data",
    "resolve_engine",
    "run_description",
]

#: A data file larger than this share of physical memory is read by DuckDB by default
#: (``DPCG_ENGINE_RAM_SHARE`` overrides it).
RAM_SHARE = 0.25

_PARQUET = (".parquet", ".parq", ".pq")

#: Seconds to wait for a ``spark://`` master to accept a TCP connection before the run
#: is refused (``DPCG_SPARK_CONNECT_TIMEOUT`` overrides it): an unreachable engine is a
#: pre-flight error, found before any budget is reserved.
SPARK_CONNECT_TIMEOUT = 5.0


def _ram_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def _env_number(variable: str, default: float, low: float, high: float,
                what: str) -> float:
    """The number in the environment variable ``variable`` (``default`` when unset),
    which must lie in ``(low, high]``; :class:`DataValidationError` otherwise."""
    raw = os.environ.get(variable)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low < value <= high:
        raise DataValidationError(f"{variable}: expected {what}, got {raw!r}")
    return value


def _ram_share() -> float:
    return _env_number("DPCG_ENGINE_RAM_SHARE", RAM_SHARE, 0.0, 1.0, "a number in (0, 1]")


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


def _type_name(obj: object) -> str:
    """``module.Class`` of ``obj``, without a leading underscore (DuckDB's connection
    lives in ``_duckdb``)."""
    t = type(obj)
    return f"{t.__module__.lstrip('_')}.{t.__name__}"


def _connect_timeout() -> float:
    return _env_number("DPCG_SPARK_CONNECT_TIMEOUT", SPARK_CONNECT_TIMEOUT, 0.0, math.inf,
                       "a positive number of seconds")


def check_spark_master(master: str, timeout: float | None = None) -> None:
    """Pre-flight: a ``spark://host:port[,host:port...]`` master must accept a TCP
    connection within ``timeout`` seconds (default :data:`SPARK_CONNECT_TIMEOUT`), else
    :class:`DataValidationError` naming the URL. Other masters (``local[*]``, ``yarn``,
    ``k8s://...``) are not probed here. Only the master's address is involved: public."""
    import socket

    if not master.startswith("spark://"):
        return
    wait = _connect_timeout() if timeout is None else float(timeout)
    hosts = master[len("spark://"):].split("/")[0].split(",")
    for hostport in hosts:
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise AlgorithmError(f"--spark-master {master}: expected spark://HOST:PORT")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=wait):
                return
        except OSError:
            continue
    raise DataValidationError(
        f"--spark-master {master}: the Spark master is unreachable (no TCP connection "
        f"within {wait:g} s); start the cluster or fix the URL (nothing was run or "
        "charged)")


def _spark_session(master: str | None) -> Any:
    from dpcg.engines.specs import local_spark

    url = master or "local[2]"
    check_spark_master(url)
    return local_spark(url)


def _check_local_source(text: str) -> None:
    """A local path or glob that matches nothing is refused before an engine starts."""
    if "://" in text.split("*")[0]:
        return  # a remote URI (s3://, hdfs://, ...): the engine reports it
    if _is_glob(text):
        import glob as _glob

        if not _glob.glob(text):
            raise DataValidationError(f"--data {text}: no file matches this glob")
    elif not Path(text).exists():
        raise DataValidationError(f"--data {text}: no such file or directory")


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
        from dpcg.engines.spark_engine import SparkEngine

        frame: Any = data
        return SparkEngine.from_dataframe(frame, _need_schema(schema, "a Spark DataFrame"))
    if tname.startswith("duckdb") and "Relation" in tname:
        from dpcg.engines.duckdb_engine import DuckDBEngine

        if name not in (None, "duckdb"):
            raise AlgorithmError(f"engine: a DuckDB relation runs on duckdb, not {name!r}")
        relation: Any = data
        return DuckDBEngine.from_relation(relation, _need_schema(schema, "a DuckDB relation"),
                                          connection, memory_limit=memory_limit)
    if tname.startswith("duckdb") and hasattr(data, "execute"):
        if connection is not None:
            raise AlgorithmError("data: a DuckDB connection is given twice (data= and "
                                 "engine=)")
        if name not in (None, "duckdb"):
            raise AlgorithmError(f"engine: a DuckDB connection runs on duckdb, not {name!r}")
        if table is None:
            raise AlgorithmError("table: a DuckDB connection needs the name of the table "
                                 "to read (table=\"events\")")
        from dpcg.engines.duckdb_engine import DuckDBEngine

        con: Any = data
        return DuckDBEngine.from_table(con, table, _need_schema(schema, "a DuckDB table"),
                                       memory_limit=memory_limit)
    if connection is not None:
        if not isinstance(data, str):
            raise AlgorithmError("data: with engine=<DuckDB connection>, give a table name "
                                 "or a relation")
        from dpcg.engines.duckdb_engine import DuckDBEngine

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
        from dpcg.engines.spark_engine import SparkEngine
        from dpcg.engines.specs import codes_schema

        arr, schema = codes_schema(ds.codes, ints, ds.names)
        spark = _spark_session(spark_master)
        ddl = ", ".join(f"`{n.replace('`', '``')}` long" for n in schema.names)
        df = spark.createDataFrame([tuple(r) for r in arr.T.tolist()], ddl)
        return SparkEngine.from_dataframe(df, schema, where="dataset")
    return get_engine(name).from_codes(ds.codes, ints, ds.names)


def _from_path(text: str, name: str | None, schema: Schema, spark_master: str | None,
               memory_limit: str | None, table: str | None) -> Dataset | TableEngine:
    db = _duckdb_table(text) if table is None else (text, table)
    chosen = name or ("duckdb" if db is not None else default_engine_name(text))
    if chosen == DEFAULT_ENGINE:
        if db is not None or _is_glob(text) or (_is_parquet(text) and Path(text).is_dir()):
            raise AlgorithmError(f"engine: {text} is read by the duckdb or spark engine, "
                                 "not numpy")
        from dpcg.data.loaders import load_table

        return load_table(Path(text), schema)
    if chosen == "duckdb":
        from dpcg.engines.duckdb_engine import DuckDBEngine

        if db is not None:
            if not Path(db[0]).is_file():
                raise DataValidationError(f"--data {db[0]}: no such DuckDB database file")
            return DuckDBEngine.from_table(db[0], db[1], schema, memory_limit=memory_limit)
        if _is_glob(text) or _is_parquet(text):
            target = str(Path(text) / "*.parquet") if Path(text).is_dir() else text
            return DuckDBEngine.from_parquet(target, schema, memory_limit=memory_limit)
        return DuckDBEngine.from_csv(text, schema, memory_limit=memory_limit,
                                     delimiter="\t" if text.lower().endswith(".tsv") else ",")
    if chosen == "spark":
        from dpcg.engines.spark_engine import SparkEngine

        if db is not None:
            raise AlgorithmError("engine: a DuckDB table is read by the duckdb engine")
        _check_local_source(text)
        spark = _spark_session(spark_master)
        if _is_glob(text) or _is_parquet(text):
            return SparkEngine.from_parquet(spark, text, schema)
        if not Path(text).is_file():
            raise DataValidationError(f"cannot read {text}: no such file")
        sep = "\t" if text.lower().endswith(".tsv") else ","
        df = spark.read.option("header", "true").option("sep", sep).csv(text).coalesce(1)
        return SparkEngine.from_dataframe(df, schema, where=text)
    raise AlgorithmError(f"engine: {chosen!r} cannot read files")


def is_engine_data(data: object) -> bool:
    """``data`` is read by an out-of-core engine whatever ``engine=`` says: a table engine,
    a DuckDB relation or connection, or a Spark DataFrame."""
    if isinstance(data, TableEngine):
        return True
    tname = _type_name(data)
    if tname.startswith("pyspark") and hasattr(data, "sparkSession"):
        return True
    return tname.startswith("duckdb") and ("Relation" in tname or hasattr(data, "execute"))
