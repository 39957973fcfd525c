"""Suite-wide isolation: no test ever writes the real per-user ledger.

A private CLI run without ``--ledger`` records in the per-user default ledger
(``accounting.ledger.default_ledger_path``: ``$DPCG_LEDGER``, else the XDG data
directory). Every test gets ``$DPCG_LEDGER`` pointing into its own temporary directory
(inherited by the CLI subprocesses a test starts); a test about the default location
itself overrides or removes it with ``monkeypatch``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_default_ledger(tmp_path_factory: pytest.TempPathFactory,
                             monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("default-ledger") / "ledger.sqlite"
    monkeypatch.setenv("DPCG_LEDGER", str(path))
    return path


#: Test modules that start a server or a JVM, by the one resource they share. Under
#: ``pytest -n 2 --dist loadgroup`` (``.ci/run``) each group runs on ONE worker, so the
#: suite never starts two Spark clusters (master + 2 workers, ~1.5 GB) or two
#: PostgreSQL servers at once, and the in-process ``local[1]`` Spark sessions of the
#: engine suites share that worker's JVM. Each server already takes a free port and its
#: own temporary directory (tests/engines/spark_cluster.py, tests/ledger/pgcluster.py).
#: Without xdist the marker does nothing.
SERVER_GROUPS: dict[str, tuple[str, ...]] = {
    "spark": ("tests/data/test_missing_engines.py", "tests/engines/test_api_engines.py",
              "tests/engines/test_cli_engines.py", "tests/engines/test_equality.py",
              "tests/engines/test_spark_engine.py", "tests/hardening/test_allow_list.py",
              "tests/hardening/test_preflight_engines.py",
              "tests/private/test_engine_equality.py", "tests/stats/test_engines.py"),
    "postgres": ("tests/ledger/test_pg_custody.py", "tests/ledger/test_postgres.py"),
}
_GROUP_OF = {path: group for group, paths in SERVER_GROUPS.items() for path in paths}
_ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            rel = Path(str(item.path)).resolve().relative_to(_ROOT).as_posix()
        except ValueError:
            continue
        group = _GROUP_OF.get(rel)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
