"""Engine suites need the optional extras (skipped cleanly without them). The Spark
cluster is one per test session (master + 2 workers on 127.0.0.1), started on first use
by a Spark test and torn down at the end of the session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyarrow")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A SparkSession on a fresh standalone cluster (see tests/engines/spark_cluster.py)."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from tests.engines.spark_cluster import java_home, standalone_cluster

    if java_home() is None:  # pragma: no cover - CI has Java 17
        pytest.skip("Spark needs Java 17")
    base = tmp_path_factory.mktemp("spark")
    _stop_local_sessions()
    with standalone_cluster(base) as cluster:
        keys = ("JAVA_HOME", "SPARK_HOME", "SPARK_LOCAL_IP", "SPARK_CONF_DIR")
        saved = {k: os.environ.get(k) for k in (*keys, "PYSPARK_PYTHON")}
        os.environ.update({k: cluster.env[k] for k in keys})
        os.environ["PYSPARK_PYTHON"] = sys.executable
        session = (
            SparkSession.builder.master(cluster.url)
            .appName("dpcg-engine-tests")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.memory", "512m")
            .config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.cores.max", "2")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.local.dir", str(base / "local"))
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        try:
            assert session.sparkContext.master == cluster.url
            yield session
        finally:
            session.stop()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _stop_local_sessions() -> None:
    """Stop a Spark session an earlier test left active in this process (the
    ``local[1]`` sessions :func:`dpcg.engines.specs.local_spark` keeps, e.g. for the
    engine-equality suites), and forget it: ``getOrCreate`` would otherwise hand the
    cluster fixture that local session, whatever the order the tests run in."""
    from pyspark.sql import SparkSession

    from dpcg.engines import specs as engine_specs

    engine_specs.stop_local_spark()
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture(scope="module")
def local_spark_session() -> Iterator[Any]:
    """A small Spark session for the Python API tests: the session already active in this
    process if there is one (e.g. the standalone cluster of :func:`spark`), else a
    ``local[1]`` session that is stopped (and forgotten by
    :func:`dpcg.engines.specs.local_spark`) when the module ends, so that a later
    :func:`spark` fixture still starts its own cluster session."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from dpcg.engines import specs as engine_specs
    from tests.engines.spark_cluster import java_home

    if java_home() is None:  # pragma: no cover - CI has Java 17
        pytest.skip("Spark needs Java 17")
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    saved = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("JAVA_HOME", str(java_home()))
    session = engine_specs.local_spark("local[1]")
    try:
        yield session
    finally:
        engine_specs.stop_local_spark(session)
        if saved is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = saved
