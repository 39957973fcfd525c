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


#: Tests that the fast lane (``bash .ci/run --fast``: ``-m "not slow"``) leaves to the
#: full lane, besides those marked ``slow`` in their own files: every test that starts or
#: uses a Spark JVM (the ``spark`` cluster, ``spark_local`` and ``local_spark_session``
#: fixtures, and every case
#: parametrised with the ``spark`` engine), and the functions below, each several
#: seconds on a quiet 2-core machine (measured with ``--durations``; the full lane, which
#: CI runs, still runs all of them). A prefix of a node id, without parameters.
FULL_LANE_ONLY: tuple[str, ...] = (
    "audits/tests/test_sensitivity_audit.py::test_krr_fit_is_at_most_half_the_lemma_a_range",
    "audits/tests/test_sensitivity_audit.py::test_mutant_spec_is_flagged_by_search_alone",
    "tests/stats/test_g2_distance.py::test_value_does_not_depend_on_how_the_search_probes",
    "tests/private/test_bench_speed.py::test_speed_rows_cover_every_score_and_side",
    "tests/ledger/test_postgres.py::test_concurrent_first_runs_exactly_the_lifetime_admitted",
    "tests/stats/test_sparse_tables.py::test_many_strata_of_many_categories_stay_sparse",
    "tests/pc/test_blocks.py::test_blocks_only_for_side_effect_free_testers",
    "tests/pc/test_blocks.py::test_block_runs_give_the_serial_run",
    "tests/ledger/test_refunds.py::test_random_run_sequences_keep_the_filter_invariant",
    "tests/pc/test_fast_tables.py::test_many_queries_on_one_instance_equal_bincount_tables",
    "tests/ledger/test_certificate.py::test_every_byte_flip_of_the_file_is_caught",
    "tests/continuous/test_grouped.py::test_non_private_statistic_holds_its_level",
    "tests/pc/test_parallel.py::test_two_workers_give_the_serial_run",
    "tests/private/test_engine_equality.py::test_priv_pc_scans_per_round_not_per_test",
    "tests/accounting/test_exact_gumbel.py::test_the_refinement_alone_gives_the_law",
    "tests/accounting/test_exact_gumbel.py::test_refined_releases_have_the_exact_law",
    "tests/continuous/test_twice.py::test_non_private_twice_statistic_holds_its_level",
    "tests/ledger/test_format.py::test_hashed_text_is_the_canonical_json_of_the_entry",
)

_SPARK_FIXTURES = frozenset({"spark", "spark_local", "local_spark_session"})


def _uses_spark(item: pytest.Item) -> bool:
    if _SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and any(
        isinstance(v, str) and v == "spark" for v in callspec.params.values())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark :data:`FULL_LANE_ONLY` and every Spark test ``slow`` (see above)."""
    slow = pytest.mark.slow
    for item in items:
        if _uses_spark(item) or item.nodeid.startswith(FULL_LANE_ONLY):
            item.add_marker(slow)
