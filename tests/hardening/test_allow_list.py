"""The release allow-list (issue 19, item 1; docs/privacy/threat-model.md).

Every field of a private run's ``result.json`` (all six private algorithms of the
registry), every line ``dpcg discover`` prints for a private run, and every ledger
column (and every key of an entry's ``data``) must be either PUBLIC (declared schema,
``n``, hyper-parameters, the guarantee, names, the plan fixed from public information,
declared budgets) or RELEASED (the output of a charged primitive, or post-processing of
such outputs and public information). Anything else fails the test, which is how a new
field gets reviewed before it ships.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dpcg.private.registry import algorithms
from tests.hardening.helpers import PRIVATE, cli, continuous_table, source_args

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
    # against the PUBLIC true graph of a bundled network: post-processing
    "metrics.*": RELEASED,
    "privacy.*": PUBLIC, "guarantee.*": PUBLIC,
    "spent.*": RELEASED, "spent.exact.*": RELEASED,  # declared costs of admitted releases
    "mechanisms.*": RELEASED,  # admitted releases by kind
    "ledger.path": PUBLIC, "ledger.run_id": PUBLIC, "ledger.dataset_id": PUBLIC,
    "ledger.remaining_lifetime.*": PUBLIC,  # declared budgets only
    # the plan: fixed before the session opens from params, settings and the schema ...
    "plan.rule": PUBLIC, "plan.test": PUBLIC, "plan.alpha": PUBLIC, "plan.max_depth": PUBLIC,
    "plan.plan_size": PUBLIC, "plan.test_epsilon": PUBLIC, "plan.epsilon_per_test": PUBLIC,
    "plan.rho_per_test": PUBLIC, "plan.rho_total": PUBLIC, "plan.sensitivity*": PUBLIC,
    "plan.bandwidth": PUBLIC, "plan.lam": PUBLIC, "plan.m": PUBLIC, "plan.n": PUBLIC,
    "plan.residual_bound": PUBLIC, "plan.mechanism": PUBLIC, "plan.cutoff": PUBLIC,
    "plan.tweak": PUBLIC, "plan.beta1": PUBLIC, "plan.beta2": PUBLIC,
    "plan.coin_epsilon": PUBLIC, "plan.epsilon_*": PUBLIC, "plan.epsilon_per_level[]": PUBLIC,
    "plan.horizon": PUBLIC, "plan.positive": PUBLIC, "plan.subsample_rate": PUBLIC,
    # ... and what the run used (a function of the released decisions)
    "plan.releases": RELEASED, "plan.used_*": RELEASED,
    "plan.orders[].order": RELEASED, "plan.orders[].edges": RELEASED,
    "plan.orders[].epsilons[]": RELEASED,
}

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
    re.compile(r"[\w-]+/[\w-]+ on \S+ \(\d+ rows\): \d+ edges \(\d+ directed, \d+ "
               r"undirected\), \d+ tests(; skeleton F1 [\d.]+, SHD \d+)?"
               r"(; budget exhausted \(graph so far\))?"),
    re.compile(r"dpcg discover: note: clip=True: continuous column\(s\) \[[^\]]*\] clipped "
               r"to their declared bounds \(how many values were clipped is not reported: "
               r"it would be an uncharged count\)"),
]


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


def test_the_six_private_algorithms_are_covered() -> None:
    real = {name for name, a in algorithms().items()
            if type(a).__module__.startswith("dpcg.")}
    assert real == set(PRIVATE)


@pytest.mark.parametrize("name", PRIVATE)
def test_private_run_releases_only_the_allow_list(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    led, out = tmp_path / "l.sqlite", tmp_path / "r.json"
    argv = ["discover", *source_args(name, tmp_path), "--algorithm", name, "--epsilon", "1",
            "--max-depth", "1", "--noise-seed", "1", "--ledger", str(led), "--out", str(out),
            "--include-tests"]
    got = cli(argv, capsys)
    assert got.code == 0, got.err
    doc = json.loads(out.read_text())
    unknown = sorted({p for p in _paths(doc) if _classify(p, RESULT_FIELDS) is None})
    assert not unknown, f"result.json fields neither public nor released: {unknown}"
    assert "timing" not in doc  # a side channel: --diagnostics only
    # stdout: nothing (the result went to --out); stderr: allow-listed lines only
    assert got.out == ""
    lines = [line for line in got.err.splitlines() if line.strip()]
    assert len(lines) == 2
    for line in lines:
        assert any(rx.fullmatch(line) for rx in STDERR_LINES), line
    _check_ledger(led)


def _check_ledger(led: Path) -> None:
    con = sqlite3.connect(f"file:{led}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            for col in cols:
                assert LEDGER_COLUMNS.get(table, {}).get(col) is not None, \
                    f"ledger column {table}.{col} is neither public nor released"
        for kind, data in con.execute("SELECT kind, data FROM entries"):
            if not data:
                continue
            for path in _paths(json.loads(data)):
                assert _classify(f"{kind}.{path}", ENTRY_DATA) is not None, \
                    f"entries.data of a {kind!r} entry: {path} is not allow-listed"
        # the timestamp is public only because a run's entries all carry its open time
        stamps: dict[str, set[str]] = {}
        for run_id, stamp in con.execute(
                "SELECT run_id, timestamp FROM entries WHERE run_id IS NOT NULL"):
            stamps.setdefault(run_id, set()).add(stamp)
        assert stamps
        assert all(len(s) == 1 for s in stamps.values()), stamps
    finally:
        con.close()


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
        note = [line for line in got.err.splitlines() if "note:" in line]
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
