"""``dpcg discover`` options of the table engines (``--engine``, ``--spark-master``,
``--memory-limit``, ``--duckdb-table``): see docs/scale.md and
:mod:`dpcg.private.engines` (which engine reads ``--data``, and what is public)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from dpcg.data.schema import Schema
from dpcg.errors import AlgorithmError
from dpcg.private.engines import default_engine_name, engine_name_of, resolve_engine
from dpcg.stats.engine import DEFAULT_ENGINE, TableEngine

__all__ = ["engine_for_args", "load_with_engine", "refuse_engine_options"]


def _given(args: argparse.Namespace) -> list[str]:
    names = (("engine", "--engine"), ("spark_master", "--spark-master"),
             ("memory_limit", "--memory-limit"), ("duckdb_table", "--duckdb-table"))
    return [flag for attr, flag in names if getattr(args, attr, None) is not None]


def refuse_engine_options(args: argparse.Namespace, why: str) -> None:
    """Engine options where no engine is used (``why``) are errors."""
    given = [f for f in _given(args)
             if not (f == "--engine" and getattr(args, "engine", None) == DEFAULT_ENGINE)]
    if given:
        raise AlgorithmError(f"{', '.join(given)}: {why}")


def _nonprivate_test(args: argparse.Namespace) -> str:
    from dpcg.cli.discover_args import DEFAULT_TEST

    return str(getattr(args, "test", None) or DEFAULT_TEST)


def _refuse_nonprivate_test(args: argparse.Namespace, name: str) -> None:
    """Non-private PC on a table engine: the tests the engines answer (ENGINE_TESTS)."""
    from dpcg.private.engines import ENGINE_TESTS

    test = _nonprivate_test(args)
    if test not in ENGINE_TESTS:
        raise AlgorithmError(f"--engine {name}: --test {test} reads the rows in memory; "
                             f"with --algorithm pc the table engines answer "
                             f"{', '.join(ENGINE_TESTS)} (or use --engine numpy)")


def engine_for_args(args: argparse.Namespace, schema: Schema,
                    private_discrete: bool, nonprivate: bool = False) -> TableEngine | None:
    """The engine that reads ``--data`` (``None``: the in-memory numpy path).
    ``nonprivate``: non-private PC (``--algorithm pc``), which runs on an engine when one
    is asked for explicitly and the test is one of ``ENGINE_TESTS``."""
    name = args.engine
    if name is None and args.duckdb_table is not None:
        name = "duckdb"
    if name is None and args.spark_master is not None:
        name = "spark"
    if name is None and private_discrete and all(c is not None for c in schema.cardinalities):
        name = default_engine_name(args.data)
    if name in (None, DEFAULT_ENGINE):
        refuse_engine_options(args, "the numpy engine reads --data in memory")
        return None
    if nonprivate:
        _refuse_nonprivate_test(args, str(name))
    elif not private_discrete:
        raise AlgorithmError(f"--engine {name}: the table engines serve the discrete "
                             "algorithms (and --algorithm pc); use --engine numpy for this run")
    got = resolve_engine(str(args.data), name, schema=schema, spark_master=args.spark_master,
                         memory_limit=args.memory_limit, table=args.duckdb_table)
    assert isinstance(got, TableEngine)
    return got


def load_with_engine(args: argparse.Namespace, algorithm: object,
                     load: Callable[[argparse.Namespace], tuple[Any, dict[str, Any], Any]]
                     ) -> tuple[Any, dict[str, Any], Any]:
    """``dpcg discover``'s data: ``load(args)`` (the in-memory path), or a table engine
    for ``--data`` (or for a bundled ``--dataset`` sample with ``--engine``). The engine
    validates the data against the schema here, before any budget is involved.
    Returns ``(Dataset or TableEngine, data info, truth)``."""
    private_discrete = False
    if algorithm is not None:
        # Deferred on purpose: the private family loads scipy.stats; a non-private run
        # (algorithm None) must not pay for it (CLI start-up, tests/cli/test_help.py).
        from dpcg.private.common import DiscreteAlgorithm

        private_discrete = isinstance(algorithm, DiscreteAlgorithm)
    if args.data is not None and args.dataset is None and args.schema is not None:
        if args.rows is not None or args.seed is not None:
            return load(args)  # its own error for --rows/--seed with --data
        if not private_discrete and not _given(args):
            return load(args)  # non-private, no engine option: in memory (a draft is fine)
        nonprivate = algorithm is None
        if nonprivate:
            from dpcg.api import load_schema  # a reviewed draft is fine: nothing is released

            schema = load_schema(args.schema, private=False)
        else:
            schema = Schema.from_json(args.schema)
        engine = engine_for_args(args, schema, private_discrete, nonprivate)
        if engine is not None:
            info = {"source": "file", "path": str(args.data), "schema": str(args.schema),
                    "rows": int(engine.n), "engine": engine.name}
            return engine, info, None
        return load(args)
    dataset, info, truth = load(args)
    name = args.engine
    if args.dataset is not None and name not in (None, DEFAULT_ENGINE):
        if algorithm is None:
            _refuse_nonprivate_test(args, str(name))
        elif not private_discrete:
            raise AlgorithmError(f"--engine {name}: the table engines serve the discrete "
                                 "algorithms (and --algorithm pc)")
        if args.memory_limit is not None or args.duckdb_table is not None:
            refuse_engine_options(argparse.Namespace(
                engine=None, spark_master=None, memory_limit=args.memory_limit,
                duckdb_table=args.duckdb_table), "apply to --data only")
        moved = resolve_engine(dataset, name, spark_master=args.spark_master)
        info = dict(info, engine=engine_name_of(moved))
        return moved, info, truth
    refuse_engine_options(args, "apply to private discrete runs on --data (or --dataset "
                                "with --engine)")
    return dataset, info, truth
