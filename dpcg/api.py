"""``dpcg.discover``: the one Python entry point (every algorithm, every kind of data).

::

    import pandas as pd
    import dpcg
    df = pd.read_csv("survey.csv")
    res = dpcg.discover(df, test="g2")            # non-private PC: the schema is inferred
    print(res.graph.edges, res.to_json()["edges"])

A private algorithm needs a DECLARED schema (``schema=``: a :class:`~dpcg.data.Schema`,
its dict or a JSON file; draft one with ``dpcg schema draft FILE`` and review it) and
records every release in the ledger chosen by THE ledger policy of
:func:`dpcg.private.ledger.ledger_target` (the same as ``dpcg discover``): the durable
default ledger unless ``ledger=`` names another file, or ``ledger=dpcg.NO_LEDGER`` for a
throw-away in-memory experiment.

Data that do not fit in memory stay where they are (docs/scale.md): ``engine=`` counts
the contingency tables with DuckDB (out of core) or Spark (distributed) and only the
small tables reach Python::

    res = dpcg.discover("lake/*.parquet", engine="duckdb", schema="schema.json",
                        algorithm="laplace-pc", epsilon=1.0, dataset_id="lake",
                        memory_limit="2GB")
    res = dpcg.discover(con.sql("SELECT * FROM events"), schema=s)   # a DuckDB relation
    res = dpcg.discover(con, table="events", schema=s)                # a DuckDB table
    res = dpcg.discover(spark.read.parquet("s3://lake/"), schema=s)   # a Spark DataFrame

Every algorithm returns a :class:`DiscoveryResult`; :meth:`DiscoveryResult.to_json` is
the document ``dpcg discover`` writes to ``result.json`` (both are built by
:func:`result_document`). The expert layers (:mod:`dpcg.pc`, :mod:`dpcg.citests`,
:mod:`dpcg.private`) stay importable for finer control.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcg.errors import AlgorithmError, CITestError, DataValidationError, SchemaError

if TYPE_CHECKING:
    import networkx as nx

    from dpcg.data.dataset import Dataset
    from dpcg.data.schema import Schema
    from dpcg.graph import CPDAG
    from dpcg.pc.engine import PCResult

__all__ = [
    "DEFAULT",
    "NONPRIVATE",
    "NO_LEDGER",
    "DiscoveryResult",
    "discover",
    "result_document",
]

#: The non-private algorithm (PC-stable).
NONPRIVATE = "pc"
#: ``--test`` of non-private PC when none is given.
DEFAULT_TEST = "g2"


class _Default:
    """``ledger=DEFAULT``: the policy's default ledger (see :func:`discover`)."""

    def __repr__(self) -> str:
        return "dpcg.DEFAULT"


#: The ledger policy's default ledger (the one ``dpcg discover`` uses without --ledger).
DEFAULT: Any = _Default()
#: ``ledger=NO_LEDGER``: keep the run's entries in memory only (a throw-away experiment;
#: nothing durable; the CLI's ``--no-ledger``).
NO_LEDGER: None = None


def _json_default(obj: object) -> Any:
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def result_document(*, algorithm: str, test: str, alpha: float, max_depth: int | None,
                    data: Mapping[str, Any], pc: PCResult, extra: Mapping[str, Any],
                    truth: CPDAG | None = None, include_tests: bool = False,
                    load_seconds: float | None = None) -> dict[str, Any]:
    """THE shape of ``result.json`` (``dpcg discover --out``) and of
    :meth:`DiscoveryResult.to_json`: run description, graph, tests, timing, metrics
    against ``truth`` when known, and the private keys (``extra``; ``privacy: null`` for
    non-private PC)."""
    from dpcg.metrics import compare

    doc: dict[str, Any] = {"algorithm": algorithm, "test": test, "alpha": alpha,
                           "max_depth": max_depth, "data": dict(data)}
    doc.update(pc.to_json(include_tests=include_tests))
    if extra.get("privacy") is not None:
        # Wall-clock timings vary with the data: a side channel, never in the result of
        # a private run (only in ``dpcg discover --diagnostics FILE``, marked as not
        # protected; docs/privacy/threat-model.md).
        doc.pop("timing", None)
    elif load_seconds is not None:
        doc["timing"]["load_seconds"] = load_seconds
    if truth is not None:
        doc["metrics"] = compare(pc.cpdag, truth)
    doc.update(extra)
    # One JSON round trip: numpy scalars and tuples become plain JSON values.
    out: dict[str, Any] = json.loads(json.dumps(doc, default=_json_default))
    return out


@dataclass(frozen=True)
class DiscoveryResult:
    """What :func:`discover` returns, for every algorithm."""

    #: The learned CPDAG.
    cpdag: CPDAG
    #: The privacy guarantee of the run (``None`` for non-private ``pc``).
    guarantee: dict[str, Any] | None
    #: Where the run is recorded: ``{"path", "run_id", "dataset_id", ...}``, or ``None``
    #: (non-private, or ``ledger=NO_LEDGER``).
    ledger: dict[str, Any] | None
    #: The engine's result (tests, sepsets, timing).
    pc: PCResult
    document: dict[str, Any]

    @property
    def graph(self) -> nx.DiGraph:
        """The CPDAG as a ``networkx.DiGraph`` (an undirected edge is both arcs; each arc's
        ``kind`` is ``"directed"`` or ``"undirected"``)."""
        return self.cpdag.to_networkx()

    @property
    def algorithm(self) -> str:
        return str(self.document["algorithm"])

    def to_json(self) -> dict[str, Any]:
        """The document ``dpcg discover`` writes to ``result.json`` (a fresh copy)."""
        out: dict[str, Any] = json.loads(json.dumps(self.document))
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to ``path`` (readable by ``dpcg plot``/``dpcg report``)."""
        target = Path(path)
        target.write_text(json.dumps(self.document, indent=2) + "\n")
        return target

    def plot(self, path: str | os.PathLike[str] | None = None, *,
             truth: CPDAG | None = None) -> bytes:
        """Draw the CPDAG (needs the ``plot`` extra: matplotlib). With ``path`` (``.svg``
        or ``.png``) the picture is written there; the SVG/PNG bytes are returned."""
        from dpcg.viz.graph import draw_cpdag, write_picture

        if path is None:
            return draw_cpdag(self.cpdag, truth, title=self.algorithm)
        write_picture(self.cpdag, path, truth, title=self.algorithm)
        return Path(path).read_bytes()


# ------------------------------------------------------------------ data


def load_schema(schema: object, *, private: bool) -> Schema:
    """The run's schema from a :class:`~dpcg.data.Schema`, its dict or a JSON file.

    A draft (``dpcg schema draft``: it still has its ``"_draft"`` field) is accepted for
    non-private PC only: nothing is released, so a schema computed from the data is
    harmless there. A private algorithm needs the owner's declared schema (the draft is
    refused, saying how to declare it)."""
    from dpcg.data.draft import DRAFT_KEY
    from dpcg.data.schema import Schema, parse_json

    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, str | os.PathLike):
        try:
            text = Path(schema).read_text(encoding="utf-8")
        except OSError as exc:
            raise SchemaError(f"schema: cannot read {schema} ({exc.strerror or exc}); pass "
                              "the path of a schema JSON (draft one with `dpcg schema "
                              "draft FILE`)") from None
        except UnicodeDecodeError:
            raise SchemaError(f"schema: {schema} is not UTF-8 text (rule: a schema is a "
                              "JSON file in UTF-8)") from None
        schema = parse_json(text, f"schema: {schema}")
    if isinstance(schema, Mapping):
        if not private and DRAFT_KEY in schema:
            schema = {k: v for k, v in schema.items() if k != DRAFT_KEY}
        return Schema.from_dict(schema)
    raise SchemaError(f"schema: expected a dpcg.data.Schema, a dict or a JSON file path, got "
                      f"{type(schema).__name__}")


def _schema(schema: object, private: bool = True) -> Schema:
    return load_schema(schema, private=private)


def _infer(header: Sequence[str], columns: Sequence[Any], source: str) -> Schema:
    """A schema inferred from the data (non-private PC only: nothing is released)."""
    from dpcg.data.draft import draft_from_columns

    draft = draft_from_columns(header, columns, source=source, min_count=1)
    try:
        return draft.declared()
    except SchemaError as exc:
        raise SchemaError(f"schema: could not infer a schema from {source} ({exc}); pass "
                          "schema= (draft one with `dpcg schema draft FILE`)") from None


def _is_pandas(data: object) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "columns")


def _as_dataset(data: object, schema: object, columns: Sequence[str] | None,
                private: bool, algorithm: str, clip: bool) -> tuple[Dataset, dict[str, Any]]:
    import numpy as np

    from dpcg.data.dataset import Dataset
    from dpcg.data.draft import draft_schema
    from dpcg.data.loaders import load_table

    if isinstance(data, Dataset):
        if schema is not None:
            raise SchemaError("schema: a Dataset carries its schema already; drop schema=")
        return data, {"source": "dataset", "rows": int(data.n)}
    if private and schema is None:
        raise SchemaError(
            f"schema: algorithm {algorithm!r} is private and needs a DECLARED schema (the "
            "categories and bounds are public, so they must not come from the data): pass "
            "schema= (a Schema, dict or JSON file; draft one with `dpcg schema draft FILE`, "
            "review it, then delete its \"_draft\" field)")
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.exists():
            raise DataValidationError(f"data: no such file {path}; pass a CSV/Parquet path, "
                                      "a pandas DataFrame, a NumPy array or a Dataset")
        declared = _schema(schema, private) if schema is not None else draft_schema(
            path, min_count=1).declared()
        ds = load_table(path, declared, clip=clip)
        return ds, {"source": "file", "path": str(path), "rows": int(ds.n)}
    if _is_pandas(data):
        frame: Any = data
        if schema is not None:
            ds = Dataset.from_pandas(frame, _schema(schema, private), clip=clip)
        else:
            names = [str(c) for c in frame.columns]
            cells = [np.asarray(frame[c].astype(str).to_numpy(), dtype=str)
                     for c in frame.columns]
            ds = Dataset.from_pandas(frame, _infer(names, cells, "the DataFrame"), clip=clip)
        return ds, {"source": "dataframe", "rows": int(ds.n)}
    if isinstance(data, np.ndarray):
        if schema is not None:
            ds = Dataset.from_numpy(data, _schema(schema, private), clip=clip)
            return ds, {"source": "array", "rows": int(ds.n)}
        if data.ndim != 2:
            raise DataValidationError(f"data: expected a 2-D (n, p) array, got shape "
                                      f"{data.shape}")
        if columns is None:
            raise SchemaError("data: a NumPy array needs column names (columns=[...]) or "
                              "schema=")
        if len(columns) != data.shape[1]:
            raise DataValidationError(f"columns: {len(columns)} names for an array with "
                                      f"{data.shape[1]} columns")
        cells = [np.asarray(data[:, j]).astype(str) for j in range(data.shape[1])]
        ds = Dataset.from_numpy(data, _infer([str(c) for c in columns], cells, "the array"),
                                clip=clip)
        return ds, {"source": "array", "rows": int(ds.n)}
    raise DataValidationError(
        f"data: cannot use a {type(data).__name__}; pass a pandas DataFrame, a NumPy array "
        "(with schema= or columns=), a CSV/Parquet path, a dpcg.data.Dataset, a DuckDB "
        "relation or connection (with table=), or a Spark DataFrame")


#: ``dpcg.discover`` options that choose or configure a table engine.
_ENGINE_OPTIONS = ("engine", "table", "spark_master", "memory_limit")


def _wants_engine(data: object, engine: object, table: str | None,
                  spark_master: str | None, memory_limit: str | None,
                  private_discrete: bool) -> bool:
    """Is ``data`` read by an out-of-core engine (``duckdb``/``spark``)? Public: decided
    from the arguments, the path and the file size, never from data values."""
    from dpcg.private.engines import default_engine_name, is_engine_data
    from dpcg.stats.engine import DEFAULT_ENGINE

    if is_engine_data(data):
        return True
    if isinstance(engine, str):
        if engine != DEFAULT_ENGINE:
            return True
    elif engine is not None:
        return True  # a DuckDB connection
    if table is not None or spark_master is not None or memory_limit is not None:
        return engine != DEFAULT_ENGINE or _refuse_numpy_options(
            table, spark_master, memory_limit)
    if isinstance(data, str | os.PathLike) and engine is None:
        text = str(data)
        if not Path(text).is_file():  # a glob, a directory, FILE.duckdb:TABLE
            return default_engine_name(text) != DEFAULT_ENGINE
        return private_discrete and default_engine_name(text) != DEFAULT_ENGINE
    return False


def _refuse_numpy_options(table: str | None, spark_master: str | None,
                          memory_limit: str | None) -> bool:
    given = [n for n, v in (("table", table), ("spark_master", spark_master),
                            ("memory_limit", memory_limit)) if v is not None]
    raise AlgorithmError(f"{', '.join(given)}: engine='numpy' reads the data in memory; "
                         "these options apply to the duckdb/spark engines")


def _as_engine(data: object, schema: object, engine: object, table: str | None,
               spark_master: str | None, memory_limit: str | None,
               private: bool, columns: Sequence[str] | None = None,
               clip: bool = False) -> tuple[Any, dict[str, Any]]:
    """The table engine that reads ``data`` (it validates the data against the schema
    when it is built: before any budget is involved) and the run's data description."""
    from dpcg.data.dataset import Dataset
    from dpcg.private.engines import engine_name_of, resolve_engine
    from dpcg.stats.engine import TableEngine

    if columns is not None or clip:
        given = [n for n, v in (("columns", columns is not None), ("clip", clip)) if v]
        raise AlgorithmError(f"{', '.join(given)}: apply to data read in memory (engine "
                             "numpy); a table engine reads the columns the schema declares "
                             "and never clips")

    declared = None
    if not isinstance(data, TableEngine | Dataset):
        if schema is None:
            raise SchemaError(
                "schema: a table engine reads the data where they live and needs their "
                "DECLARED schema (schema=: a Schema, dict or JSON file; draft one with "
                "`dpcg schema draft FILE`)")
        declared = _schema(schema, private)
    elif schema is not None:
        raise SchemaError("schema: a Dataset or a table engine carries its schema already; "
                          "drop schema=")
    got = resolve_engine(data, engine, schema=declared, spark_master=spark_master,
                         memory_limit=memory_limit, table=table)
    name = engine_name_of(got)
    if isinstance(got, Dataset):  # engine numpy
        return got, {"source": "dataset" if isinstance(data, Dataset) else "file",
                     "rows": int(got.n)}
    info: dict[str, Any] = {"source": _source_kind(data), "rows": int(got.n),
                            "engine": name}
    if isinstance(data, str | os.PathLike):
        info["path"] = str(data)
        if table is not None:
            info["table"] = table
    elif table is not None:
        info["table"] = table
    return got, info


def _source_kind(data: object) -> str:
    from dpcg.stats.engine import TableEngine

    module = type(data).__module__.lstrip("_")
    if isinstance(data, str | os.PathLike):
        return "file"
    if isinstance(data, TableEngine):
        return "engine"
    if module.startswith("pyspark"):
        return "spark-dataframe"
    if "Relation" in type(data).__name__:
        return "duckdb-relation"
    if module.startswith("duckdb"):
        return "duckdb-table"
    return "dataset"


def _check_engine_test(name: str, kind: str, private: bool, engine_name: str) -> None:
    """Table engines count discrete columns; non-private PC runs the tests of
    :data:`dpcg.private.engines.ENGINE_TESTS` there."""
    from dpcg.private.engines import ENGINE_TESTS

    if kind == "continuous":
        raise CITestError(f"test {name!r} needs continuous data; the {engine_name} engine "
                          "counts discrete columns (choose a discrete test)")
    if not private and name not in ENGINE_TESTS:
        raise CITestError(f"test {name!r} reads the rows in memory (engine numpy); on the "
                          f"{engine_name} engine choose one of {list(ENGINE_TESTS)}")


# ------------------------------------------------------------------ discover


def _split_options(options: Mapping[str, object], params_cls: type | None,
                   test_cls: type, where: str) -> tuple[dict[str, object], dict[str, object]]:
    from dpcg.citests.registry import option_infos

    pfields = {i.name for i in option_infos(params_cls)} if params_cls is not None else set()
    tfields = {i.name for i in option_infos(test_cls)}
    unknown = sorted(set(options) - pfields - tfields)
    if unknown:
        raise AlgorithmError(
            f"{', '.join(unknown)}: not an option of {where} (its options: "
            f"{sorted(pfields | tfields) or 'none'}; `dpcg discover --help` lists them)")
    return ({k: v for k, v in options.items() if k in pfields},
            {k: v for k, v in options.items() if k in tfields and k not in pfields})


def discover(
    data: object,
    *,
    schema: object = None,
    algorithm: str = NONPRIVATE,
    test: str | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    alpha: float = 0.05,
    ledger: str | os.PathLike[str] | None = DEFAULT,
    dataset_id: str | None = None,
    lifetime_epsilon: float | None = None,
    lifetime_delta: float | None = None,
    noise_seed: int | None = None,
    max_depth: int | None = None,
    columns: Sequence[str] | None = None,
    clip: bool = False,
    engine: object = None,
    table: str | None = None,
    spark_master: str | None = None,
    memory_limit: str | None = None,
    **options: object,
) -> DiscoveryResult:
    """Learn a causal graph (CPDAG) from ``data``.

    ``data``: a pandas DataFrame, a NumPy array (with ``schema=`` or ``columns=``), a
    CSV/TSV/Parquet path, or a :class:`dpcg.data.Dataset`.

    ``algorithm="pc"`` (default) is non-private PC-stable with ``test`` (default
    ``"g2"``); the schema is inferred when none is given (nothing is released, so the
    data may shape it). Any other ``algorithm`` (``laplace-pc``, ``svt-pc``, ``priv-pc``,
    ``em-pc``, ``curate``, ``private-ci-pc``; ``dpcg discover --list``) is private: it
    needs ``schema=`` (declared, never inferred) and ``epsilon`` (the run's TOTAL budget;
    ``delta`` defaults to the algorithm's), and follows the CLI's ledger policy:
    ``ledger=DEFAULT`` records the run in the default durable ledger, a path records it
    there, ``ledger=dpcg.NO_LEDGER`` (``None``) keeps it in memory only. A recorded run
    needs ``dataset_id`` (the declared id the lifetime budget belongs to);
    ``lifetime_epsilon``/``lifetime_delta`` set the lifetime of a new id.

    ``engine`` chooses where the contingency tables are counted (docs/scale.md):
    ``"numpy"`` (in memory), ``"duckdb"`` (embedded, out of core; ``memory_limit="2GB"``)
    or ``"spark"`` (``spark_master="spark://host:7077"``, default ``local[2]``), or an open
    DuckDB connection whose relation ``data`` is. Without it, the engine follows from
    ``data``: a DuckDB relation (of the default connection, or of ``engine=con``) or a
    DuckDB connection with ``table="name"`` (or a path ``"wh.duckdb"`` with ``table=``, or
    ``"wh.duckdb:name"``) runs on DuckDB, a ``pyspark.sql.DataFrame`` on its own Spark
    session, a Parquet glob or directory on DuckDB; a private discrete algorithm also
    sends a file larger than a quarter of the RAM to DuckDB. An engine needs ``schema=``
    (declared; a draft is fine for non-private PC) and validates the data against it
    before anything is charged (wrong types, NULLs, values outside the schema: the column
    and the rule are named, never a value, a row or a count). Engines serve the
    discrete algorithms and non-private PC with ``g2``, ``chi2`` or a score test; the
    result, the ledger policy and the guarantee are those of the numpy engine (the ledger
    run's description ends with ``engine=NAME``). DuckDB and Spark are optional extras
    (``dpcg[duckdb]``, ``dpcg[spark]``), imported only when used.

    ``**options`` are the algorithm's ``Params`` fields and the test's option fields
    (the same as the ``dpcg discover`` flags, with ``_`` for ``-``); one that belongs to
    neither is an error.
    """
    from dpcg.citests.registry import TestContext, get_test, make_options
    from dpcg.pc.engine import pc_stable
    from dpcg.private.registry import algorithms, get_algorithm

    if not isinstance(alpha, float | int) or not 0.0 < alpha < 1.0:
        raise CITestError(f"alpha must be in (0, 1), got {alpha!r}")
    if max_depth is not None and max_depth < 0:
        raise AlgorithmError(f"max_depth must be >= 0, got {max_depth}")
    private = algorithm != NONPRIVATE
    if private and algorithm not in algorithms():
        raise AlgorithmError(f"algorithm: unknown {algorithm!r}; choose from "
                             f"{[NONPRIVATE, *sorted(algorithms())]}")
    if not private:
        given = [name for name, v in (("epsilon", epsilon), ("delta", delta),
                                      ("dataset_id", dataset_id),
                                      ("lifetime_epsilon", lifetime_epsilon),
                                      ("lifetime_delta", lifetime_delta),
                                      ("noise_seed", noise_seed)) if v is not None]
        if ledger is not DEFAULT and ledger is not None:
            given.append("ledger")
        if given:
            raise AlgorithmError(f"{', '.join(given)}: only apply to a private algorithm "
                                 f"({', '.join(algorithms())}), not to pc")
        requested = DEFAULT_TEST if test is None else test
        spec = get_test(requested)
        _, topts = _split_options(options, None, spec.options, f"pc with test {requested!r}")
        t0 = time.perf_counter()
        test_options = make_options(spec.options, topts)
        tester: Any
        if _wants_engine(data, engine, table, spark_master, memory_limit, False):
            from dpcg.private.engines import engine_tester

            source, info = _as_engine(data, schema, engine, table, spark_master,
                                      memory_limit, False, columns, clip)
            load_seconds = time.perf_counter() - t0
            if "engine" in info:
                _check_engine_test(spec.name, spec.data, False, info["engine"])
                tester = engine_tester(source, spec.name, float(alpha), test_options)
            else:
                _check_data(spec.name, spec.data, source)
                tester = spec.make(TestContext(source, float(alpha), test_options))
        else:
            source, info = _as_dataset(data, schema, columns, False, algorithm, clip)
            load_seconds = time.perf_counter() - t0
            _check_data(spec.name, spec.data, source)
            tester = spec.make(TestContext(source, float(alpha), test_options))
        res = pc_stable(tester, tuple(source.names), max_depth=max_depth)
        doc = result_document(algorithm=NONPRIVATE, test=requested, alpha=float(alpha),
                              max_depth=max_depth, data=info, pc=res,
                              extra={"privacy": None}, load_seconds=load_seconds)
        return DiscoveryResult(res.cpdag, None, None, res, doc)

    from accounting.costs import Budget
    from dpcg.private.contract import RunSettings
    from dpcg.private.ledger import IN_MEMORY, ledger_target
    from dpcg.private.run import discover_private

    algo = get_algorithm(algorithm)
    if epsilon is None:
        raise AlgorithmError(f"epsilon: algorithm {algorithm!r} is private and needs "
                             "epsilon= (the run's TOTAL privacy budget)")
    if ledger is not None and ledger is not DEFAULT and not isinstance(
            ledger, str | os.PathLike):
        raise AlgorithmError(
            f"ledger: expected the path of a ledger file (str or os.PathLike), "
            f"dpcg.DEFAULT or dpcg.NO_LEDGER (None), got a {type(ledger).__name__}")
    requested = algo.default_test if test is None else test
    get_test(requested)
    spec = get_test(algo.resolve_test(requested))
    popts, topts = _split_options(options, algo.params, spec.options,
                                  f"algorithm {algorithm!r} with test {requested!r}")
    params = make_options(algo.params, popts, AlgorithmError)
    test_options = make_options(spec.options, topts)
    run_delta = algo.default_delta if delta is None else delta
    # the run's numbers, validated before the ledger target (and its budget) is built
    RunSettings(epsilon=epsilon, delta=run_delta, test=requested, alpha=alpha,
                noise_seed=noise_seed, max_depth=max_depth)
    if ledger is None:
        lifetime = [n for n, v in (("dataset_id", dataset_id),
                                   ("lifetime_epsilon", lifetime_epsilon),
                                   ("lifetime_delta", lifetime_delta)) if v is not None]
        if lifetime:
            raise AlgorithmError(f"ledger=NO_LEDGER: {', '.join(lifetime)} only apply to a "
                                 "run recorded in a ledger")
        target = IN_MEMORY
    else:
        if dataset_id is None:
            raise AlgorithmError(
                "dataset_id: a private run is recorded in the ledger under the dataset's "
                "declared id; pass dataset_id=\"...\" (or ledger=dpcg.NO_LEDGER for a "
                "throw-away experiment)")
        target = ledger_target(
            budget=Budget(epsilon, run_delta), path=None if ledger is DEFAULT else Path(ledger),
            dataset_id=dataset_id, lifetime_epsilon=lifetime_epsilon,
            lifetime_delta=lifetime_delta)
    t0 = time.perf_counter()
    from dpcg.private.common import DiscreteAlgorithm

    dataset: Any
    if _wants_engine(data, engine, table, spark_master, memory_limit,
                     isinstance(algo, DiscreteAlgorithm)):
        if not isinstance(algo, DiscreteAlgorithm):
            raise AlgorithmError(f"engine: {algo.name} needs the rows in memory (engine "
                                 "numpy); the duckdb/spark engines serve the discrete "
                                 "algorithms")
        dataset, info = _as_engine(data, schema, engine, table, spark_master, memory_limit,
                                   True, columns, clip)
        if "engine" in info:
            _check_engine_test(spec.name, spec.data, True, info["engine"])
        else:
            _check_data(spec.name, spec.data, dataset)
    else:
        dataset, info = _as_dataset(data, schema, columns, True, algorithm, clip)
        _check_data(spec.name, spec.data, dataset)
    load_seconds = time.perf_counter() - t0
    private_res = discover_private(
        dataset, algo, epsilon=epsilon, delta=run_delta, test=requested, alpha=float(alpha),
        noise_seed=noise_seed, max_depth=max_depth, params=params, test_options=test_options,
        ledger=target)
    doc = result_document(algorithm=algo.name, test=requested, alpha=float(alpha),
                          max_depth=max_depth, data=info, pc=private_res.pc,
                          extra=private_res.extra(), load_seconds=load_seconds)
    return DiscoveryResult(private_res.cpdag, private_res.guarantee, private_res.ledger,
                           private_res.pc, doc)


def _check_data(name: str, kind: str, dataset: Dataset) -> None:
    if kind == "discrete" and not dataset.is_discrete:
        raise CITestError(f"test {name!r} needs discrete data; the schema has continuous "
                          "columns (choose a continuous test: `dpcg discover --list`)")
    if kind == "continuous" and not dataset.is_continuous:
        raise CITestError(f"test {name!r} needs continuous data; the schema has discrete "
                          "columns (choose a discrete test: `dpcg discover --list`)")
