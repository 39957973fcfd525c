"""One resolution of a request's data to what a run reads: a :class:`Dataset` (in
memory, engine ``numpy``) or a :class:`TableEngine` (DuckDB, Spark), with the run's
public data description and, for a sample of a known network, its true DAG.

Everything here is decided from public facts: the arguments, paths and file sizes, the
declared schema; never from data values. The data are validated against the schema
when they are read or when an engine is built, before any budget is involved.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcg.data.dataset import Dataset
from dpcg.data.schema import Schema
from dpcg.engines.base import DEFAULT_ENGINE, TableEngine
from dpcg.errors import AlgorithmError, CITestError, DataValidationError, SchemaError
from dpcg.pipeline.request import DiscoverRequest, NetworkSpec

__all__ = ["Resolved", "Source", "Truth", "check_test_data", "load_schema", "resolve"]

#: What a run reads.
Source = Dataset | TableEngine
#: The true DAG of a network sample: (nodes, arcs).
Truth = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Resolved:
    """A request's data, resolved."""

    source: Source
    #: The public data description (``result.json``'s ``data``).
    info: dict[str, Any]
    truth: Truth | None = None

    @property
    def engine(self) -> str:
        return self.source.name if isinstance(self.source, TableEngine) else DEFAULT_ENGINE


# ------------------------------------------------------------------ schema


def load_schema(schema: object, *, private: bool) -> Schema:
    """The run's schema from a :class:`~dpcg.data.Schema`, its dict or a JSON file.

    A draft (``dpcg schema draft``: it still has its ``"_draft"`` field) is accepted for
    non-private PC only: nothing is released, so a schema computed from the data is
    harmless there. A private algorithm needs the owner's declared schema (the draft is
    refused, saying how to declare it)."""
    from collections.abc import Mapping

    from dpcg.data.draft import DRAFT_KEY
    from dpcg.data.schema import parse_json

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


# ------------------------------------------------------------------ in memory


def _network(req: DiscoverRequest, spec: NetworkSpec) -> Resolved:
    from dpcg.datasets import is_bif_path, load_bif_file, load_network

    if req.schema is not None:
        raise DataValidationError(f"{req.name('schema')} only applies to "
                                  f"{req.name('data')} (a network sample has its schema)")
    info: dict[str, Any]
    from dpcg.datasets.mixed_network import MIXED_PREFIX, mixed_network

    if spec.name.startswith(MIXED_PREFIX):  # a generated mixed network (public recipe)
        mixed = mixed_network(spec.name)
        info = {"source": "bundled", "dataset": mixed.name, "rows": spec.rows,
                "seed": spec.seed}
        arcs = tuple((str(a), str(b)) for a, b in mixed.dag_edges)
        return Resolved(mixed.sample(spec.rows, spec.seed), info, (mixed.names, arcs))
    if is_bif_path(spec.name):
        net, file_id = load_bif_file(spec.name)
        info = {"source": "bif", "dataset": spec.name, "id": file_id, "rows": spec.rows,
                "seed": spec.seed}
    else:
        net = load_network(spec.name)
        info = {"source": "bundled", "dataset": spec.name, "rows": spec.rows,
                "seed": spec.seed}
    dataset = net.sample(spec.rows, spec.seed)
    truth: Truth = (tuple(net.nodes), tuple((str(a), str(b)) for a, b in net.dag_edges))
    return Resolved(dataset, info, truth)


def _in_memory(req: DiscoverRequest) -> Resolved:
    from dpcg.data.draft import draft_schema
    from dpcg.data.loaders import load_table

    data, schema, private = req.data, req.schema, req.private
    if isinstance(data, Dataset):
        if schema is not None:
            raise SchemaError("schema: a Dataset carries its schema already; drop schema=")
        return Resolved(data, {"source": "dataset", "rows": int(data.n)})
    if private and schema is None:
        raise SchemaError(
            f"schema: algorithm {req.algorithm!r} is private and needs a DECLARED schema "
            "(the categories and bounds are public, so they must not come from the data): "
            f"pass {req.name('schema')} (a Schema, dict or JSON file; draft one with `dpcg "
            "schema draft FILE`, review it, then delete its \"_draft\" field)")
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.exists():
            raise DataValidationError(f"data: no such file {path}; pass a CSV/Parquet path, "
                                      "a pandas DataFrame, a NumPy array or a Dataset")
        declared = load_schema(schema, private=private) if schema is not None else \
            draft_schema(path, min_count=1).declared()
        ds = load_table(path, declared, clip=req.clip, allow_row_deletion=not private)
        info: dict[str, Any] = {"source": "file", "path": str(path), "rows": int(ds.n)}
        if req.spelling == "cli" and isinstance(schema, str | os.PathLike):
            info["schema"] = str(schema)
        return Resolved(ds, info)
    if _is_pandas(data):
        frame: Any = data
        if schema is not None:
            ds = Dataset.from_pandas(frame, load_schema(schema, private=private),
                                     clip=req.clip, allow_row_deletion=not private)
        else:
            names = [str(c) for c in frame.columns]
            cells = [np.asarray(frame[c].astype(str).to_numpy(), dtype=str)
                     for c in frame.columns]
            ds = Dataset.from_pandas(frame, _infer(names, cells, "the DataFrame"),
                                     clip=req.clip)
        return Resolved(ds, {"source": "dataframe", "rows": int(ds.n)})
    if isinstance(data, np.ndarray):
        if schema is not None:
            ds = Dataset.from_numpy(data, load_schema(schema, private=private), clip=req.clip,
                                    allow_row_deletion=not private)
            return Resolved(ds, {"source": "array", "rows": int(ds.n)})
        if data.ndim != 2:
            raise DataValidationError(f"data: expected a 2-D (n, p) array, got shape "
                                      f"{data.shape}")
        columns = req.columns
        if columns is None:
            raise SchemaError("data: a NumPy array needs column names (columns=[...]) or "
                              "schema=")
        if len(columns) != data.shape[1]:
            raise DataValidationError(f"columns: {len(columns)} names for an array with "
                                      f"{data.shape[1]} columns")
        cells = [np.asarray(data[:, j]).astype(str) for j in range(data.shape[1])]
        ds = Dataset.from_numpy(data, _infer([str(c) for c in columns], cells, "the array"),
                                clip=req.clip)
        return Resolved(ds, {"source": "array", "rows": int(ds.n)})
    raise DataValidationError(
        f"data: cannot use a {type(data).__name__}; pass a pandas DataFrame, a NumPy array "
        "(with schema= or columns=), a CSV/Parquet path, a dpcg.data.Dataset, a DuckDB "
        "relation or connection (with table=), or a Spark DataFrame")


# ------------------------------------------------------------------ engines


def _engine_options(req: DiscoverRequest) -> list[str]:
    return [req.name(n) for n in ("table", "spark_master", "memory_limit") if req.given(n)]


def _engine_name(req: DiscoverRequest, private_discrete: bool) -> object:
    """The engine the request asks for, or implies (``None``: in memory)."""
    from dpcg.engines.resolve import default_engine_name, is_engine_data

    engine = req.engine
    if engine is not None:
        return engine
    if is_engine_data(req.data):
        return "auto"
    if req.table is not None:
        return "duckdb"
    if req.spark_master is not None:
        return "spark"
    if req.memory_limit is not None:
        return "duckdb"
    data = req.data
    if isinstance(data, str | os.PathLike):
        text = str(data)
        if not Path(text).is_file():  # a glob, a directory, FILE.duckdb:TABLE
            name = default_engine_name(text)
            return None if name == DEFAULT_ENGINE else name
        if private_discrete:
            name = default_engine_name(text)
            return None if name == DEFAULT_ENGINE else name
    return None


def _source_kind(data: object) -> str:
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


def _on_engine(req: DiscoverRequest, engine: object) -> Resolved:
    from dpcg.engines.resolve import engine_name_of, resolve_engine

    given = [req.name(n) for n in ("columns", "clip") if req.given(n)]
    if given:
        raise AlgorithmError(f"{', '.join(given)}: apply to data read in memory (engine "
                             "numpy); a table engine reads the columns the schema declares "
                             "and never clips")
    data = req.data
    truth: Truth | None = None
    base: dict[str, Any] | None = None
    if isinstance(data, NetworkSpec):  # a network sample, moved to the engine
        if req.memory_limit is not None or req.table is not None:
            names = [req.name(n) for n in ("memory_limit", "table") if req.given(n)]
            raise AlgorithmError(f"{', '.join(names)}: apply to {req.name('data')} only")
        sample = _network(req, data)
        moved = resolve_engine(sample.source, engine, spark_master=req.spark_master)
        return Resolved(moved, dict(sample.info, engine=engine_name_of(moved)), sample.truth)
    declared = None
    if not isinstance(data, TableEngine | Dataset):
        if req.schema is None:
            raise SchemaError(
                "schema: a table engine reads the data where they live and needs their "
                f"DECLARED schema ({req.name('schema')}: a Schema, dict or JSON file; draft "
                "one with `dpcg schema draft FILE`)")
        declared = load_schema(req.schema, private=req.private)
    elif req.schema is not None:
        raise SchemaError("schema: a Dataset or a table engine carries its schema already; "
                          "drop schema=")
    got = resolve_engine(data, None if engine == "auto" else engine, schema=declared,
                         spark_master=req.spark_master, memory_limit=req.memory_limit,
                         table=req.table)
    if isinstance(got, Dataset):  # engine numpy
        info: dict[str, Any] = {"source": "dataset" if isinstance(data, Dataset) else "file",
                                "rows": int(got.n)}
        if isinstance(data, str | os.PathLike):
            info["path"] = str(data)
        return Resolved(got, info, truth)
    base = {"source": _source_kind(data)}
    if isinstance(data, str | os.PathLike):
        base["path"] = str(data)
        if req.spelling == "cli" and isinstance(req.schema, str | os.PathLike):
            base["schema"] = str(req.schema)
    base["rows"] = int(got.n)
    base["engine"] = engine_name_of(got)
    if req.table is not None:
        base["table"] = req.table
    return Resolved(got, base, truth)


def resolve(req: DiscoverRequest, *, private_discrete: bool) -> Resolved:
    """THE resolution of ``req``'s data (module docstring). ``private_discrete``: the run
    is a private algorithm of the discrete family (the only private runs the table
    engines serve). A private run's data must have a public ``n`` (no listwise
    deletion); every source has at least :data:`~dpcg.data.MIN_ROWS` rows."""
    resolved = _resolve(req, private_discrete)
    from dpcg.data import MIN_ROWS
    from dpcg.data.checks import require_public_n

    source = resolved.source
    if req.private and isinstance(source, Dataset):
        require_public_n(source)
    if int(source.n) < MIN_ROWS:  # n is public (declared size under replace-one)
        raise DataValidationError(f"data: fewer than {MIN_ROWS} rows (rule: a CI test needs "
                                  "at least two rows)")
    return resolved


def _resolve(req: DiscoverRequest, private_discrete: bool) -> Resolved:
    engine = _engine_name(req, private_discrete)
    if engine in (None, DEFAULT_ENGINE):
        if engine == DEFAULT_ENGINE and not isinstance(req.data, TableEngine):
            given = _engine_options(req)
            if given:
                raise AlgorithmError(f"{', '.join(given)}: engine='numpy' reads the data in "
                                     "memory; these options apply to the duckdb/spark "
                                     "engines")
        if isinstance(req.data, NetworkSpec):
            return _network(req, req.data)
        if isinstance(req.data, TableEngine):
            return _on_engine(req, "auto")
        return _in_memory(req)
    if req.private and not private_discrete:
        pc = "--algorithm pc" if req.spelling == "cli" else "algorithm 'pc'"
        raise AlgorithmError(f"{req.name('engine')} {engine}: the table engines serve the "
                             f"discrete algorithms (and {pc}); use {req.name('engine')} "
                             "numpy for this run")
    return _on_engine(req, engine)


def check_test_data(test: str, kind: str, resolved: Resolved, private: bool,
                    spelling: str = "python") -> None:
    """The test fits the data: a discrete test needs discrete columns, a continuous test
    continuous ones; the table engines count discrete columns, and non-private PC runs
    the tests of :data:`dpcg.citests.on_engine.ENGINE_TESTS` there."""
    from dpcg.citests.on_engine import ENGINE_TESTS

    who = f"--test {test}" if spelling == "cli" else f"test {test!r}"
    source = resolved.source
    if isinstance(source, TableEngine):
        name = source.name
        if kind == "continuous":
            raise CITestError(f"{who} needs continuous data; the {name} engine "
                              "counts discrete columns (choose a discrete test)")
        if not private and test not in ENGINE_TESTS:
            raise CITestError(f"{who} reads the rows in memory (engine numpy); on "
                              f"the {name} engine choose one of {list(ENGINE_TESTS)}")
        return
    if kind == "discrete" and not source.is_discrete:
        raise CITestError(f"{who} needs discrete data; the schema has continuous "
                          f"columns ({_continuous_hint(source)})")
    if kind == "continuous" and not source.is_continuous:
        raise CITestError(f"{who} needs continuous data; the schema has discrete "
                          f"columns ({_discrete_hint(source)})")


def _continuous_hint(source: Dataset) -> str:
    return ("choose a continuous or mixed test, or let the schema choose: leave the test "
            "out for pc, or use algorithm 'auto'; `dpcg discover --list`")


def _discrete_hint(source: Dataset) -> str:
    return ("choose a discrete or mixed test, or let the schema choose: leave the test "
            "out for pc, or use algorithm 'auto'; `dpcg discover --list`")
