"""The test modules that start a server: ``python -m tests.servers`` prints them.

``.ci/run`` runs the suite on two pytest-xdist workers without these modules, then these
in ONE process after it, so that a run starts one Spark standalone cluster (master + 2
workers: the session fixture ``spark`` of tests/engines/conftest.py) and one PostgreSQL
server (``pg_cluster``, tests/ledger/conftest.py), never one per worker. (pytest-xdist's
``--dist loadgroup`` would do this with ``xdist_group`` markers, but with pytest 9 its
group suffix on the node id has no effect: the groups are spread over the workers.)
Each server already takes free ports and its own temporary directory, so running them
beside the rest is safe; the second pass is about memory and start-up time. A new module
that uses the ``spark`` or ``pg_cluster`` fixture goes here (``tests/test_lanes.py``).
In-process ``local[1]`` Spark sessions stay in the parallel pass (one JVM per worker).
"""

from __future__ import annotations

#: Relative to the repository root.
SERVER_MODULES: tuple[str, ...] = (
    "tests/engines/test_api_engines.py",
    "tests/engines/test_equality.py",
    "tests/engines/test_spark_engine.py",
    "tests/ledger/test_pg_custody.py",
    "tests/ledger/test_pg_zcdp_lifetime.py",
    "tests/ledger/test_postgres.py",
)

if __name__ == "__main__":
    print("\n".join(SERVER_MODULES))
