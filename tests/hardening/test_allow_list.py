"""The release allow-list (issue 19, item 1; docs/privacy/threat-model.md).

Every field of a private run's ``result.json`` (all six private algorithms of the
registry, on every table engine that serves them), every line ``dpcg discover`` prints
for a private run, and every ledger column (and every key of an entry's ``data``) must be
either PUBLIC (declared schema, ``n``, hyper-parameters, the guarantee, names, the plan
fixed from public information, declared budgets) or RELEASED (the output of a charged
primitive, or post-processing of such outputs and public information). Anything else
fails the test, which is how a new field gets reviewed before it ships.

Engines (docs/scale.md): the five discrete algorithms run on ``duckdb`` (a Parquet file)
and on ``spark`` (``local[1]``, one JVM for the module); ``private-ci-pc`` needs its
rows in memory and is refused on both with :class:`~dpcg.errors.AlgorithmError`, before
any ledger row is written.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dpcg.cli import main
from dpcg.errors import AlgorithmError
from dpcg.private.common import DiscreteAlgorithm
from dpcg.private.registry import algorithms
from tests.hardening.helpers import PRIVATE, cli, continuous_table, raw, row_counts, source_args

PUBLIC = "public"
RELEASED = "released (charged primitive or post-processing of its outputs)"

#: result.json paths (``[]`` = any list element). Patterns are fnmatch globs.
RESULT_FIELDS: dict[str, str] = {
    "algorithm": PUBLIC, "test": PUBLIC, "private_test": PUBLIC, "alpha": PUBLIC,
    "max_depth": PUBLIC, "message": RELEASED,  # a function of budget_exhausted + spent
    "data.source": PUBLIC, "data.dataset": PUBLIC, "data.seed": PUBLIC,
    "data.path": PUBLIC, "data.schema": PUBLIC, "data.rows": PUBLIC,  # n is public
    "nodes[]": PUBLIC,
    "edges.directed[]": RELEASED, "edges.directed[][]": RELEASED,
    "edges.undirected[]": RELEASED, "edges.undirected[][]": RELEASED,
    "sepsets[].x": RELEASED, "sepsets[].y": RELEASED, "sepsets[].S[]": RELEASED,
    "tests.count": RELEASED, "tests.by_level.*": RELEASED,
    "tests.records[].x": RELEASED, "tests.records[].y": RELEASED,
    "tests.records[].S[]": RELEASED, "tests.records[].level": RELEASED,
    "tests.records[].statistic": RELEASED,  # the noisy output (or null)
    "tests.records[].pvalue": RELEASED, "tests.records[].independent": RELEASED,
    "budget_exhausted": RELEASED, "levels_completed": RELEASED,
    "orientation_conflicts[]": RELEASED, "orientation_conflicts[][]": RELEASED,
    "sepsets_unreleased": RELEASED,  # a count of pairs a released selection removed
    # against the PUBLIC true graph of a bundled network: post-processing
    "metrics.*": RELEASED,
    "privacy.*": PUBLIC, "guarantee.*": PUBLIC,
    "spent.*": RELEASED, "spent.exact.*": RELEASED,  # declared costs of admitted releases
    "mechanisms.*": RELEASED,  # admitted releases by kind
    "ledger.path": PUBLIC, "ledger.run_id": PUBLIC, "ledger.dataset_id": PUBLIC,
    # lifetime less the charges of closed runs' admitted mechanisms (refunds by realized
    # spend): post-processing of admitted releases
    "ledger.remaining_lifetime.*": RELEASED,
    "ledger.registered_lifetime.*": PUBLIC,
    # a run limit reached: decided for a private run from its count of answered tests
    # through a public cost model (docs/memory.md): post-processing of releases
    "stopped.*": RELEASED,  # the lifetime this run declared for a new id
    "auto.*": PUBLIC,  # --algorithm auto: chosen from the schema kind, n and the budget
    # the plan: fixed before the session opens from params, settings and the schema ...
    "plan.rule": PUBLIC, "plan.test": PUBLIC, "plan.alpha": PUBLIC, "plan.max_depth": PUBLIC,
    "plan.plan_size": PUBLIC, "plan.test_epsilon": PUBLIC, "plan.epsilon_per_test": PUBLIC,
    "plan.rho_per_test": PUBLIC, "plan.rho_total": PUBLIC, "plan.sensitivity*": PUBLIC,
    "plan.bandwidth": PUBLIC, "plan.lam": PUBLIC, "plan.m": PUBLIC, "plan.n": PUBLIC,
    "plan.residual_bound": PUBLIC, "plan.mechanism": PUBLIC, "plan.cutoff": PUBLIC,
    "plan.groups": PUBLIC,  # privgcm: an option, else the constant DEFAULT_GROUPS
    "plan.fit": PUBLIC, "plan.residual_clip": PUBLIC,  # privgcm: constants (or options)
    "plan.tweak": PUBLIC, "plan.beta1": PUBLIC, "plan.beta2": PUBLIC,
    "plan.coin_epsilon": PUBLIC, "plan.epsilon_*": PUBLIC, "plan.epsilon_per_level[]": PUBLIC,
    "plan.horizon": PUBLIC, "plan.positive": PUBLIC, "plan.subsample_rate": PUBLIC,
    "plan.budget_split": PUBLIC, "plan.screen": PUBLIC,  # laplace-pc: an option, a rule of p
    "plan.select_k": PUBLIC, "plan.select_epsilon": PUBLIC,  # laplace-pc: rules of public
    "plan.select_test.*": PUBLIC,  # facts (p, n, the budget, the options)
    "plan.screened": PUBLIC, "plan.screen_k": PUBLIC,  # the screened selection's plan:
    "plan.screen_epsilon": PUBLIC,  # the same rules of public facts
    "plan.release": PUBLIC, "plan.sepset_share": PUBLIC,  # laplace-pc: an option, a constant
    "plan.sieve_asks": PUBLIC,  # priv-pc: an option, else the constant PRIV_PC_SIEVE_ASKS
    "plan.route": PUBLIC, "plan.releases_planned": PUBLIC,  # cov-pc: --test, the constant 1
    "plan.dimension": PUBLIC, "plan.sigma": PUBLIC,  # cov-pc: rules of the schema, n, budget
    "plan.null_draws": PUBLIC,  # cov-pc: an option
    "plan.null": PUBLIC,  # cov-pc: an option (--null delta|simulated)
    # marginal-pc: the budget's rho, level 0's tables (one per pair, a share of rho), the
    # options and constants (docs/privacy/algorithm-marginal-pc.md)
    "plan.rho": PUBLIC, "plan.level0_*": PUBLIC, "plan.sets_per_pair": PUBLIC,
    "plan.max_cells": PUBLIC, "plan.draws": PUBLIC, "plan.max_noise": PUBLIC,
    # marginal-pc's level 0 (an option, or the rule of p and the budget) and its
    # selection's plan: options and rules of public facts ("Level 0 by a private selection")
    "plan.level0": PUBLIC, "plan.select_by": PUBLIC, "plan.select_steps": PUBLIC,
    "plan.select_rho": PUBLIC, "plan.kept_tables": PUBLIC, "plan.select_score": PUBLIC,
    # hub-pc: options (docs/privacy/algorithm-hub-pc.md)
    "plan.neighbours": PUBLIC, "plan.select_share": PUBLIC, "plan.margin": PUBLIC,
    "plan.node_select": PUBLIC,  # priv-pc: an option
    # priv-pc: its hub switch's plan (the options, constants and budget shares) and the
    # option margin (docs/privacy/algorithm-priv-pc.md, "The hub switch")
    "plan.hub_switch.*": PUBLIC,
    # ... and what the run used (a function of the released decisions)
    "plan.releases": RELEASED, "plan.used_*": RELEASED,
    "plan.orders[].order": RELEASED, "plan.orders[].edges": RELEASED,
    "plan.orders[].epsilons[]": RELEASED,
}

#: What a run on an out-of-core engine adds to ``result.json``: the engine's name, a
#: public option (``--engine``, or the public default chosen from the path and file size).
ENGINE_RESULT_FIELDS: dict[str, str] = {"data.engine": PUBLIC}

#: The description of a ledger run (``runs.description`` and the run-open entry's
#: ``data.description``, both PUBLIC): the algorithm, the test, and for an out-of-core
#: engine ``engine=NAME`` (public, as above); nothing else may be appended.
RUN_DESCRIPTION = re.compile(r"dpcg (?P<algorithm>[\w-]+)/(?P<test>[\w-]+)"
                             r"( engine=(?P<engine>duckdb|spark))?")

#: The engines of the registry besides ``numpy`` and the algorithms each serves.
ENGINES = ("duckdb", "spark")
DISCRETE = tuple(n for n in PRIVATE if isinstance(algorithms()[n], DiscreteAlgorithm))
#: Spark: one JVM for the module; Priv-PC's subsampled sieve starts many small jobs, so
#: it runs level 0 only there (level 1 on duckdb).
SPARK_DEPTH = {"priv-pc": "0"}

#: Ledger columns, by table.
LEDGER_COLUMNS: dict[str, dict[str, str]] = {
    "metadata": {"key": PUBLIC, "value": PUBLIC},
    "datasets": {c: PUBLIC for c in (
        "dataset_id", "epsilon", "delta", "relation", "description", "registered_seq",
        "reserved_epsilon", "reserved_delta", "n_runs")},
    "runs": {**{c: PUBLIC for c in (
        "run_id", "dataset_id", "epsilon", "delta", "rule", "relation", "seed_explicit",
        "description", "opened_seq", "closed_seq")},
        **{c: RELEASED for c in ("status", "n_entries", "n_outputs", "spent_epsilon",
                                 "spent_delta", "spent_rho")}},
    "entries": {**{c: PUBLIC for c in (
        "seq", "kind", "dataset_id", "run_id", "mechanism", "params", "sensitivity",
        "relation", "cost", "seed_explicit", "prev_hash", "hash")},
        "purpose": PUBLIC,  # variable names and hyper-parameters
        # a dataset's registration time, or the OPEN time of the entry's run (the same on
        # every entry of a run: when the operator started it, never how long it took)
        "timestamp": PUBLIC,
        "data": RELEASED},  # keys checked below
}

#: Keys of ``entries.data`` by entry kind (fnmatch patterns).
ENTRY_DATA: dict[str, str] = {
    "dataset.description": PUBLIC, "dataset.lifetime.*": PUBLIC,
    "run-open.budget.*": PUBLIC, "run-open.description": PUBLIC, "run-open.rule": PUBLIC,
    "run-close.status": RELEASED, "mechanism.extra.*": PUBLIC,
    "mechanism.output*": RELEASED, "output*": RELEASED, "head*": PUBLIC, "signature*": PUBLIC,
}

#: Every line ``dpcg discover`` may print on stderr for a private run.
STDERR_LINES = [
    re.compile(r"ledger: .+; dataset '[^']+': remaining lifetime epsilon=\S+, delta=\S+ "
               r"\(after this run; the lifetime is per ledger file and dataset id\)"),
    re.compile(r"ledger: none \(--no-ledger: nothing durable, no lifetime enforced\)"),
    re.compile(r"note: dataset '[^']+' was new and is registered with lifetime epsilon=\S+, "
               r"delta=\S+: this run's budget, because no --lifetime-epsilon/--lifetime-delta "
               r"was given\. A registered lifetime never changes; declare it on the first "
               r"run \(or with `dpcg ledger init`\) to leave room for later runs"),
    re.compile(r"[\w-]+/[\w-]+ on \S+ \(\d+ rows\): \d+ edges \(\d+ directed, \d+ "
               r"undirected\), \d+ tests(; skeleton F1 [\d.]+, SHD \d+)?"
               r"(; budget exhausted \(graph so far\))?"),
    re.compile(r"dpcg discover: note: clip=True: continuous column\(s\) \[[^\]]*\] clipped "
               r"to their declared bounds \(how many values were clipped is not reported: "
               r"it would be an uncharged count\)"),
]

#: The progress line (tqdm, only once a run passes a second; no elapsed time for a
#: private run): the level and the number of tests so far, functions of the released
#: decisions. Redrawn with carriage returns, so it shows up as several "lines".
PROGRESS_LINE = re.compile(r"discover [\w-]+/[\w-]+: (starting|, level \d+, \d+ tests)\s*")


def _paths(obj: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list):
        if not obj:
            yield prefix + "[]"
        for v in obj:
            yield from _paths(v, prefix + "[]")
    else:
        yield prefix


def _classify(path: str, table: dict[str, str]) -> str | None:
    if path in table:
        return table[path]
    for pattern, kind in table.items():
        if fnmatch.fnmatchcase(path, pattern):
            return kind
    return None


def test_every_shipped_private_algorithm_is_covered() -> None:
    real = {name for name, a in algorithms().items()
            if type(a).__module__.startswith("dpcg.")}
    assert real == set(PRIVATE)  # the parameters are the registry's
    assert {"laplace-pc", "private-ci-pc"} <= real  # the package scan ran


@pytest.mark.parametrize("name", PRIVATE)
def test_private_run_releases_only_the_allow_list(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _released_only(["discover", *source_args(name, tmp_path), "--algorithm", name,
                    "--max-depth", "1"], tmp_path, capsys)


def test_marginal_pc_selection_releases_only_the_allow_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # level 0 by the per-node selection, then the kept pairs' tables
    _released_only(["discover", *source_args("marginal-pc", tmp_path), "--algorithm",
                    "marginal-pc", "--max-depth", "1", "--level0", "select",
                    "--select-per-node", "2"], tmp_path, capsys)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["plan"]["level0"] == "select"
    assert doc["mechanisms"]["top-k"] == 8


def test_laplace_pc_selection_releases_only_the_allow_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # level 0's top-K release (an explicit --select forces it on the small table)
    _released_only(["discover", *source_args("laplace-pc", tmp_path), "--algorithm",
                    "laplace-pc", "--max-depth", "1", "--select", "1"], tmp_path, capsys)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["plan"]["select_k"] > 0
    assert doc["mechanisms"].get("top-k") == 1


def test_laplace_pc_screened_selection_releases_only_the_allow_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the screened selection (one or two top-K releases; pairs removed without a set)
    _released_only(["discover", *source_args("laplace-pc", tmp_path), "--algorithm",
                    "laplace-pc", "--max-depth", "1", "--select", "1",
                    "--screen-selection", "1"], tmp_path, capsys)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["plan"]["screened"] is True
    assert doc["mechanisms"].get("top-k") == (2 if doc["plan"]["screen_k"] else 1)


def _released_only(argv: list[str], tmp: Path, capsys: pytest.CaptureFixture[str],
                   engine: str | None = None) -> None:
    """Run ``argv`` (a private ``dpcg discover`` without budget, ledger and output
    options) and check its result, its printed lines and its ledger against the lists."""
    led, out = tmp / "l.sqlite", tmp / "r.json"
    argv = [*argv, "--epsilon", "1", "--noise-seed", "1", "--ledger", str(led), "--out",
            str(out), "--include-tests"]
    got = cli(argv, capsys)
    assert got.code == 0, got.err
    doc = json.loads(out.read_text())
    fields = RESULT_FIELDS if engine is None else {**RESULT_FIELDS, **ENGINE_RESULT_FIELDS}
    unknown = sorted({p for p in _paths(doc) if _classify(p, fields) is None})
    assert not unknown, f"result.json fields neither public nor released: {unknown}"
    assert doc["data"].get("engine") == engine
    assert "timing" not in doc  # a side channel: --diagnostics only
    # stdout: nothing (the result went to --out); stderr: allow-listed lines only
    assert got.out == ""
    lines = [line for line in got.err.splitlines()
             if line.strip() and not PROGRESS_LINE.fullmatch(line)]
    assert len(lines) in (2, 3), got.err  # the ledger, a new id's lifetime note, the summary
    for line in lines:
        assert any(rx.fullmatch(line) for rx in STDERR_LINES), line
    _check_ledger(led, engine)


def _check_ledger(led: Path, engine: str | None = None) -> None:
    con = sqlite3.connect(f"file:{led}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            for col in cols:
                assert LEDGER_COLUMNS.get(table, {}).get(col) is not None, \
                    f"ledger column {table}.{col} is neither public nor released"
        descriptions = [r[0] for r in con.execute("SELECT description FROM runs")]
        for kind, data in con.execute("SELECT kind, data FROM entries"):
            if not data:
                continue
            for path in _paths(json.loads(data)):
                assert _classify(f"{kind}.{path}", ENTRY_DATA) is not None, \
                    f"entries.data of a {kind!r} entry: {path} is not allow-listed"
            if kind == "run-open":
                descriptions.append(json.loads(data)["description"])
        assert descriptions
        for text in descriptions:
            match = RUN_DESCRIPTION.fullmatch(text)
            assert match is not None, f"run description {text!r} is not allow-listed"
            assert match["engine"] == engine
        # the timestamp is public only because a run's entries all carry its open time
        stamps: dict[str, set[str]] = {}
        for run_id, stamp in con.execute(
                "SELECT run_id, timestamp FROM entries WHERE run_id IS NOT NULL"):
            stamps.setdefault(run_id, set()).add(stamp)
        assert stamps
        assert all(len(s) == 1 for s in stamps.values()), stamps
    finally:
        con.close()


# ----------------------------------------------------------------- every engine


@pytest.fixture(scope="module")
def asia_parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """2000 rows of asia as a Parquet file and its schema (the engines read it)."""
    pytest.importorskip("pyarrow")
    tmp = tmp_path_factory.mktemp("lake")
    data, schema = tmp / "asia.parquet", tmp / "asia.schema.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["datasets", "sample", "asia", "--rows", "2000", "--seed", "1",
                     "--format", "parquet", "--out", str(data), "--schema-out", str(schema)])
    assert code == 0
    return data, schema


@pytest.fixture(scope="module")
def sem4_parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The 4-variable continuous table as Parquet (what private-ci-pc would read)."""
    pa_csv = pytest.importorskip("pyarrow.csv")
    pq = pytest.importorskip("pyarrow.parquet")
    tmp = tmp_path_factory.mktemp("sem4")
    csv, schema = continuous_table(tmp)
    data = tmp / "sem4.parquet"
    pq.write_table(pa_csv.read_csv(csv), data)
    return data, schema


@pytest.fixture(scope="module")
def spark_local() -> Iterator[None]:
    """Spark runs reuse one ``local[1]`` JVM (dpcg keeps one session per master and
    process); stopped after the module unless a session was already running (then it
    is that session's owner's to stop, e.g. the cluster of tests/engines)."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from dpcg.engines import specs as engine_specs
    from tests.engines.spark_cluster import java_home

    if java_home() is None:  # pragma: no cover - CI has Java 17
        pytest.skip("Spark needs Java 17")
    before = SparkSession.getActiveSession()
    yield
    if before is None:
        started = SparkSession.getActiveSession()
        if started is not None:
            engine_specs.stop_local_spark(started)


def _engine_argv(engine: str, data: Path, schema: Path) -> list[str]:
    argv = ["discover", "--data", str(data), "--schema", str(schema), "--dataset-id",
            f"lake-{engine}", "--engine", engine]
    return [*argv, "--spark-master", "local[1]"] if engine == "spark" else argv


#: The algorithms the table engines refuse (their tests read rows, not tables).
IN_MEMORY = tuple(n for n in PRIVATE if n not in DISCRETE)


def test_the_engines_serve_the_discrete_algorithms() -> None:
    # every registered algorithm is served by the engines or refused by them (below)
    assert DISCRETE
    assert "laplace-pc" in DISCRETE
    assert "private-ci-pc" in IN_MEMORY


@pytest.mark.parametrize("name", DISCRETE)
def test_duckdb_run_releases_only_the_allow_list(name: str, tmp_path: Path,
                                                 asia_parquet: tuple[Path, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("duckdb")
    _released_only([*_engine_argv("duckdb", *asia_parquet), "--algorithm", name,
                    "--max-depth", "1"], tmp_path, capsys, engine="duckdb")


@pytest.mark.parametrize("name", DISCRETE)
def test_spark_run_releases_only_the_allow_list(name: str, tmp_path: Path,
                                                asia_parquet: tuple[Path, Path],
                                                spark_local: None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _released_only([*_engine_argv("spark", *asia_parquet), "--algorithm", name,
                    "--max-depth", SPARK_DEPTH.get(name, "1")], tmp_path, capsys,
                   engine="spark")


@pytest.mark.parametrize("name", IN_MEMORY)
@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_refuses_an_in_memory_algorithm_before_the_ledger(
        engine: str, name: str, tmp_path: Path, sem4_parquet: tuple[Path, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    """private-ci-pc (and any algorithm not of the discrete family) needs its rows in
    memory: refused by name, nothing written."""
    led = tmp_path / "l.sqlite"
    argv = [*_engine_argv(engine, *sem4_parquet), "--algorithm", name,
            "--epsilon", "1", "--ledger", str(led), "--out", str(tmp_path / "r.json")]
    got = cli(argv, capsys)
    assert got.code == 2
    assert got.err == (f"dpcg discover: error: --engine {engine}: the table engines serve "
                       "the discrete algorithms (and --algorithm pc); use --engine numpy for "
                       "this run\n")
    with pytest.raises(AlgorithmError):
        raw(argv)
    assert row_counts(led) == {"entries": 0, "runs": 0, "datasets": 0}
    assert not (tmp_path / "r.json").exists()


def test_side_channels_are_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "privacy" / "threat-model.md").read_text()
    assert "entries.timestamp" in doc  # what it reveals: the run's start, not its duration
    for word in ("timing", "memory", "error class", "file size"):
        assert word in doc


def test_diagnostics_are_marked_not_protected(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    diag = tmp_path / "d.json"
    got = cli(["discover", *source_args("laplace-pc", tmp_path), "--algorithm", "laplace-pc",
               "--epsilon", "1", "--max-depth", "1", "--no-ledger", "--quiet", "--out",
               str(tmp_path / "r.json"), "--diagnostics", str(diag)], capsys)
    assert got.code == 0, got.err
    doc = json.loads(diag.read_text())
    assert doc["protected"] is False
    assert doc["warning"].startswith("not protected: side channel")
    assert {"seconds", "test_seconds", "load_seconds"} <= set(doc["timing"])
    assert "timing" not in json.loads((tmp_path / "r.json").read_text())


# ----------------------------------------------------------------- the three leaks


def _bounded_table(tmp: Path, outside: int) -> tuple[Path, Path]:
    """The 4-variable continuous table with ``outside`` values pushed out of bounds."""
    data, schema = continuous_table(tmp / "base")
    lines = data.read_text().splitlines()
    header, rows = lines[0], [r.split(",") for r in lines[1:]]
    for i in range(outside):
        rows[i][0] = "1e6"
    path = tmp / f"out{outside}.csv"
    path.write_text("\n".join([header, *(",".join(r) for r in rows)]) + "\n")
    return path, schema


def test_clip_reports_that_not_how_much(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    notes = []
    for k in (0, 1, 57):
        data, schema = _bounded_table(tmp_path, k)
        got = cli(["discover", "--data", str(data), "--schema", str(schema), "--clip",
                   "--algorithm", "private-ci-pc", "--epsilon", "1", "--dataset-id",
                   f"clip{k}", "--ledger", str(tmp_path / "l.sqlite"), "--noise-seed", "1",
                   "--out", str(tmp_path / f"r{k}.json")], capsys)
        assert got.code == 0, got.err
        note = [line for line in got.err.splitlines() if "note: clip" in line]
        assert len(note) == 1
        notes.append(note[0])
        for line in got.err.splitlines():
            assert any(rx.fullmatch(line) for rx in STDERR_LINES), line
        assert set(json.loads((tmp_path / f"r{k}.json").read_text())["data"]) == {
            "source", "path", "schema", "rows"}
    assert len(set(notes)) == 1  # the same words whatever the number clipped
    assert not re.search(r"\b(57|1)\b", notes[0])


def _row_1234_table(tmp: Path) -> tuple[Path, Path]:
    rows = ["colour,size"] + [f"{'red' if i % 2 else 'blue'},S" for i in range(2000)]
    rows[1234] = "purple,S"  # data row 1234 (0-based: 1233), file line 1235
    data, schema = tmp / "t.csv", tmp / "s.json"
    data.write_text("\n".join(rows) + "\n")
    schema.write_text(json.dumps({"columns": [
        {"name": "colour", "type": "categorical", "categories": ["red", "blue"]},
        {"name": "size", "type": "categorical", "categories": ["S", "M"]}]}))
    return data, schema


def test_schema_error_quotes_no_value_row_or_count(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = _row_1234_table(tmp_path)
    led = tmp_path / "l.sqlite"
    argv = ["discover", "--data", str(data), "--schema", str(schema), "--algorithm",
            "laplace-pc", "--epsilon", "1", "--dataset-id", "t", "--ledger", str(led)]
    got = cli(argv, capsys)
    assert got.code == 2
    message = got.err.strip()
    assert message == (f"dpcg discover: error: {data}: column 'colour': a value is not one "
                       "of the declared categories ['red', 'blue'] (rule: categorical "
                       "values must be declared in the schema)")
    rest = message.replace(str(data), "FILE")
    assert "purple" not in rest
    assert not re.search(r"\d", rest)  # no row, line or count
    assert not led.exists()
    # --unsafe-debug-errors: the detail, on stderr only; still nothing in a ledger
    got = cli([*argv, "--unsafe-debug-errors"], capsys)
    assert got.code == 2
    assert "'purple'" in got.err
    assert "row 1233 (line 1235)" in got.err
    assert not led.exists()
