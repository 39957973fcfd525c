"""Private discovery on every registered table engine (dpcg.engines.base): for the same
data and noise seed, numpy, duckdb and spark (local) give identical graphs, identical
results and identical ledgers -- apart from the engine recorded with the run -- for every
discrete private algorithm, and the ledger names the engine and verifies."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.ledger import Ledger
from dpcg.data import Categorical, Dataset, Schema
from dpcg.engines.base import engine_names, get_engine
from dpcg.engines.resolve import engine_name_of, resolve_engine
from dpcg.errors import AlgorithmError
from dpcg.private.common import DiscreteAlgorithm
from dpcg.private.registry import algorithms
from tests.engine_room import private_run
from tests.stats.test_engines import _engines

DISCRETE = tuple(n for n, a in algorithms().items() if isinstance(a, DiscreteAlgorithm))
_ENTRY = ("kind", "mechanism", "params", "sensitivity", "relation", "cost", "purpose",
          "seed_explicit", "data")
_ENGINE = re.compile(r" engine=[a-z0-9_-]+")


def _dataset() -> Dataset:
    rng = np.random.default_rng(17)
    n, cards = 1500, (2, 3, 2, 3, 2)
    codes = np.empty((len(cards), n), dtype=np.int64)
    codes[0] = rng.integers(0, 2, n)
    codes[1] = np.where(rng.random(n) < 0.7, codes[0], rng.integers(0, 3, n))
    codes[2] = rng.integers(0, 2, n)
    codes[3] = np.where(rng.random(n) < 0.6, (codes[1] + codes[2]) % 3, rng.integers(0, 3, n))
    codes[4] = np.where(rng.random(n) < 0.7, codes[3] % 2, rng.integers(0, 2, n))
    schema = Schema([Categorical(f"v{j}", [f"c{k}" for k in range(c)])
                     for j, c in enumerate(cards)])
    return Dataset.from_codes(codes.astype(np.uint8), schema)


_DS = _dataset()


def _run(algorithm: str, engine: str, tmp: Path) -> tuple[dict[str, Any], list[list[Any]], str]:
    data = resolve_engine(_DS, engine)
    assert engine_name_of(data) == engine
    path = tmp / f"{algorithm}-{engine}.sqlite"
    res = private_run(data, algorithm=algorithm, epsilon=2.0, seed=5, ledger=path,
                      dataset_id="eq", max_depth=2)
    out = res.to_json(include_tests=True)
    out.pop("ledger")
    out = json.loads(json.dumps(out, default=str))
    for key in ("seconds", "timing"):
        out.pop(key, None)
    con = sqlite3.connect(path)
    try:
        rows = [[_ENGINE.sub("", v) if isinstance(v, str) else v for v in r]
                for r in con.execute(f"SELECT {', '.join(_ENTRY)} FROM entries ORDER BY seq")]
        (desc,) = con.execute("SELECT description FROM runs").fetchone()
    finally:
        con.close()
    assert Ledger.open(path).verify().ok
    return out, rows, str(desc)


@pytest.fixture(scope="module")
def numpy_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("numpy-runs")
    return {a: _run(a, "numpy", tmp) for a in DISCRETE}


def _other_engines() -> list[object]:
    """Every engine but numpy; the slow ones (Spark: 10-75 s a run on a shared 2-core
    machine) in the full lane only (``slow``), the others in the fast lane too."""
    out: list[object] = []
    for slow in (False, True):
        for p in _engines(slow=slow):
            values, marks = p.values, list(p.marks)  # type: ignore[attr-defined]
            if values[0] == "numpy":
                continue
            out.append(pytest.param(*values, marks=[*marks, pytest.mark.slow] if slow
                                    else marks))
    return out


@pytest.mark.parametrize("engine", _other_engines())
@pytest.mark.parametrize("algorithm", DISCRETE)
def test_every_engine_gives_the_numpy_run(engine: str, algorithm: str, tmp_path: Path,
                                          numpy_runs: dict[str, Any]) -> None:
    want, want_rows, want_desc = numpy_runs[algorithm]
    got, rows, desc = _run(algorithm, engine, tmp_path)
    assert "engine=" not in want_desc  # numpy: the description of older ledgers
    assert desc.endswith(f"engine={engine}")
    assert got == want  # graph, tests, spent, guarantee, plan, mechanisms
    assert rows == want_rows  # every ledger entry (the engine field aside)
    assert len(rows) > 0


def test_the_registry_covers_three_engines() -> None:
    assert {"numpy", "duckdb", "spark"} <= set(engine_names())
    # every algorithm of the discrete family runs (and is compared above) on every engine
    assert {"laplace-pc", "svt-pc", "priv-pc", "em-pc", "curate", "hub-pc"} <= set(DISCRETE)


def test_a_continuous_algorithm_refuses_an_engine_uncharged(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    eng = get_engine("duckdb").from_codes(_DS.codes, [2, 3, 2, 3, 2], list(_DS.names))
    path = tmp_path / "l.sqlite"
    with pytest.raises(AlgorithmError, match="engine"):
        private_run(eng, algorithm="private-ci-pc", epsilon=1.0, ledger=path, dataset_id="x")
    if path.exists():
        con = sqlite3.connect(path)
        try:
            assert con.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
        finally:
            con.close()


def test_bad_engine_options_are_refused() -> None:
    with pytest.raises(AlgorithmError, match="unknown table engine"):
        resolve_engine(_DS, "no-such")
    with pytest.raises(AlgorithmError, match="memory_limit"):
        resolve_engine(_DS, "spark", memory_limit="1GB")


@pytest.mark.parametrize("algorithm", ["svt-pc", "curate", "em-pc"])
def test_streamed_tests_scan_once_per_batch_without_joint_counts(
        algorithm: str, tmp_path: Path, numpy_runs: dict[str, Any]) -> None:
    """Without the joint counts (data too large for them) every engine call is a scan.
    SVT-PC and CURATE announce a level's tests before streaming them and EM-PC asks for
    its level's tests in one call, so a run scans per batch of column sets, not per test,
    and gives the numpy run exactly."""
    pytest.importorskip("duckdb")
    from dpcg.engines.duckdb_engine import DuckDBEngine
    from tests.engines.gen import write_parquet

    glob = write_parquet(tmp_path, _DS.schema, _DS.codes.astype(np.int64), 1)
    engine = DuckDBEngine.from_parquet(glob, _DS.schema, joint_limit=0, threads=1)
    start = engine.scans
    res = private_run(engine, algorithm=algorithm, epsilon=2.0, seed=5,
                      ledger=tmp_path / "l.sqlite", dataset_id="eq", max_depth=2)
    scans = engine.scans - start
    got = json.loads(json.dumps(res.to_json(include_tests=True), default=str))
    want = numpy_runs[algorithm][0]
    for key in ("ledger", "seconds", "timing"):
        got.pop(key, None)
    assert got == want
    levels = len(res.pc.tests_by_level())
    assert engine.queries > 3 * levels  # tables the run asked for
    assert scans <= 2 * levels  # one or two scans a level (64 column sets per scan)


@pytest.mark.parametrize("options", [{}, {"select": 2.0}, {"plan_size": 400}],
                         ids=["per-test-then-pair", "selection-then-pair", "fixed-plan"])
def test_priv_pc_scans_per_round_not_per_test_without_joint_counts(
        options: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Priv-PC's sieve reads each round's subsample one test at a time and its examines
    read the full data one pair at a time. Without the joint counts each read used to be a
    scan (alarm at 100,000 rows: 3,759 scans); the tester announces a level's tests to
    the full data and the next pairs' tests to each round's subsample, so a run scans
    about once per round and per level, computes the same scores and gives the numpy run
    exactly: with the per-test-then-pair levels, after a level-0 selection with per-pair
    levels, and with a fixed plan (the engine's level starts). Every scan of the parent
    engine and of the subsample engines is counted."""
    pytest.importorskip("duckdb")
    from dpcg.datasets import load_network
    from dpcg.engines.duckdb_engine import DuckDBEngine
    from tests.engines.gen import write_parquet

    data = load_network("random:nodes=12,max_parents=2,card=2-3,seed=3,conc=1").sample(
        4000, 1)
    glob = write_parquet(tmp_path, data.schema, data.codes.astype(np.int64), 1)
    subset = DuckDBEngine.subset
    subsets: list[DuckDBEngine] = []

    def recorded(self: DuckDBEngine, rows: Any) -> DuckDBEngine:
        sub = subset(self, rows)
        subsets.append(sub)
        return sub

    monkeypatch.setattr(DuckDBEngine, "subset", recorded)
    engine = DuckDBEngine.from_parquet(glob, data.schema, joint_limit=0, threads=1)
    start = engine.scans
    res = private_run(engine, algorithm="priv-pc", epsilon=2.0, seed=5, **options)
    used = engine.scans - start + sum(sub.scans for sub in subsets)
    want = private_run(data, algorithm="priv-pc", epsilon=2.0, seed=5, **options)
    got_json = json.loads(json.dumps(res.to_json(include_tests=True), default=str))
    want_json = json.loads(json.dumps(want.to_json(include_tests=True), default=str))
    for key in ("seconds", "timing"):
        got_json.pop(key, None)
        want_json.pop(key, None)
    assert got_json == want_json
    rounds = int(res.to_json()["plan"]["used_rounds"])
    levels = len(res.pc.tests_by_level())
    sieve_tables = sum(sub.queries for sub in subsets)  # tables the sieves read
    # one scan per table read would be at least sieve_tables (302 here, with 121
    # rounds over 3 levels; 422 scans before the announcements); announced, a round's
    # subsample is counted in a scan or two (windows of 4-64 column sets) and a level's
    # full-data tables in a few scans
    # One scan per table read is at least sieve_tables plus one per examine (about one
    # per round): before the announcements these runs took 422, 123 and 380 scans. Now
    # a round's subsample is counted in a scan or two (windows of 4-64 column sets) and a
    # level's full-data tables, with the selection's, in a few: 139, 23 and 135.
    assert rounds >= 10
    assert used < (sieve_tables + rounds) // 2
    assert used <= rounds + rounds // 5 + 4 * levels + 8
