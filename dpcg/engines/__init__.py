"""Table engines: where a discrete dataset's contingency tables are counted.

* :mod:`dpcg.engines.base`: the :class:`TableEngine` protocol, the in-memory
  :class:`NumpyEngine` and the engine registry (:func:`register_engine`,
  :func:`get_engine`, :func:`engine_names`).
* :mod:`dpcg.engines.duckdb_engine` (embedded, out of core) and
  :mod:`dpcg.engines.spark_engine` (a cluster): the same tables bit for bit, counted by
  ``GROUP BY`` queries where the data live (optional extras ``duckdb``/``spark``).
* :mod:`dpcg.engines.grouped`: from grouped counts to exact strata tables (the shared
  part of the two SQL engines).
* :mod:`dpcg.engines.specs`: how each registered engine is built from codes (the
  conformance suite's entry point) and the out-of-core engines' lazy imports.
* :mod:`dpcg.engines.resolve`: what a user gives (an engine name, a path, a Parquet glob,
  ``FILE.duckdb:TABLE``, a Spark master, a connection or DataFrame) -> the object a run
  reads; which engine by default is a public decision.

Layer: above :mod:`dpcg.stats` (engines count :class:`~dpcg.stats.contingency.StrataTable`
s), below :mod:`dpcg.citests` (tests read tables from an engine). Docs: ``docs/scale.md``.
"""

from __future__ import annotations

from dpcg.engines.base import (
    DEFAULT_ENGINE,
    EngineSpec,
    NumpyEngine,
    TableEngine,
    engine_names,
    get_engine,
    register_engine,
)

__all__ = [
    "DEFAULT_ENGINE",
    "EngineSpec",
    "NumpyEngine",
    "TableEngine",
    "engine_names",
    "get_engine",
    "register_engine",
]
