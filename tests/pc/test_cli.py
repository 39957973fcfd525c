"""``dpcg discover`` and ``dpcg bench`` plumbing: JSON/DOT/GraphML outputs, plugins, errors."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from dpcg.citests import registry
from dpcg.cli import main
from dpcg.cli.discover import Progress
from dpcg.graph import CPDAG
from dpcg.pc import DSeparationOracle
from dpcg.private.registry import register_algorithm
from tests.testing.toy_algorithm import TOY, registered

NODES = ("a", "b", "c", "d")
DAG = (("a", "c"), ("b", "c"), ("c", "d"))


@pytest.fixture
def oracle_test() -> Iterator[str]:
    """Register a CI test answering from a fixed DAG over columns a, b, c, d."""

    def build(ctx: registry.TestContext[registry.NoOptions]) -> DSeparationOracle:
        assert tuple(ctx.dataset.names) == NODES
        return DSeparationOracle(NODES, DAG)

    spec = registry.register_test(registry.TestSpec(
        name="unit-oracle", build=build, description="unit-test oracle",
        options=registry.NoOptions))
    yield spec.name
    registry.unregister_test(spec.name)


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, Path]:
    schema = {"columns": [{"name": n, "type": "categorical", "categories": ["0", "1"]}
                          for n in NODES]}
    sp = tmp_path / "schema.json"
    sp.write_text(json.dumps(schema))
    dp = tmp_path / "data.csv"
    dp.write_text("a,b,c,d\n0,1,1,0\n1,1,0,0\n0,0,0,1\n")
    return dp, sp


def test_discover_user_table_writes_json_dot_graphml(
    tmp_path: Path, table: tuple[Path, Path], oracle_test: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, schema = table
    out, dot, gml = tmp_path / "r.json", tmp_path / "g.dot", tmp_path / "g.graphml"
    code = main(["discover", "--data", str(data), "--schema", str(schema), "--test", oracle_test,
                 "--out", str(out), "--dot", str(dot), "--graphml", str(gml),
                 "--include-tests"])
    assert code == 0
    doc = json.loads(out.read_text())
    truth = CPDAG.from_dag(NODES, DAG)
    assert doc["nodes"] == list(NODES)
    assert CPDAG.from_json(doc) == truth
    assert doc["edges"]["directed"] == [["a", "c"], ["b", "c"], ["c", "d"]]
    assert doc["tests"]["count"] == len(doc["tests"]["records"]) > 0
    assert doc["timing"]["seconds"] >= 0
    assert doc["data"] == {"source": "file", "path": str(data), "schema": str(schema), "rows": 3}
    assert "metrics" not in doc  # truth unknown for a user table
    assert doc["privacy"] is None
    assert '"c" -> "d";' in dot.read_text()
    g = nx.read_graphml(gml)
    assert g.edges["a", "c"]["kind"] == "directed"
    err = capsys.readouterr().err
    assert "pc/unit-oracle" in err
    assert "3 edges" in err


def test_quiet_and_stdout(table: tuple[Path, Path], oracle_test: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = table
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--test", oracle_test,
                 "--quiet", "--max-depth", "0"]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""
    doc = json.loads(cap.out)
    assert set(doc["tests"]["by_level"]) == {"0"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--alpha", "1.5"], "--alpha"),
        (["--algorithm", "nope"], "unknown --algorithm"),
        (["--test", "nope"], "unknown --test"),
        (["--max-depth", "-1"], "--max-depth"),
        (["--rows", "10"], "--rows only applies"),
    ],
)
def test_bad_arguments_exit_2(table: tuple[Path, Path], argv: list[str], message: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = table
    code = main(["discover", "--data", str(data), "--schema", str(schema), "--quiet", *argv])
    assert code == 2
    assert message in capsys.readouterr().err


def test_needs_exactly_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["discover", "--quiet"]) == 2
    assert "exactly one" in capsys.readouterr().err


def test_dsep_needs_truth(table: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = table
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--test", "dsep",
                 "--quiet"]) == 2
    assert "bundled --dataset" in capsys.readouterr().err


def test_background_file(tmp_path: Path, table: tuple[Path, Path], oracle_test: str) -> None:
    data, schema = table
    bk = tmp_path / "bk.json"
    bk.write_text(json.dumps({"forbidden_edges": [["c", "d"]]}))
    out = tmp_path / "r.json"
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--test", oracle_test,
                 "--background", str(bk), "--out", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert ["c", "d"] not in doc["edges"]["directed"]
    bk.write_text(json.dumps({"bogus": []}))
    assert main(["discover", "--data", str(data), "--schema", str(schema), "--test", oracle_test,
                 "--background", str(bk), "--out", str(out), "--quiet"]) == 2


def test_registered_algorithm_gets_flags_from_its_params(tmp_path: Path) -> None:
    """A seventh private algorithm (the toy) gets its --toy-tests flag from its Params,
    and the flag is refused for every other algorithm."""
    out = tmp_path / "r.json"
    base = ["discover", "--dataset", "cancer", "--rows", "500", "--epsilon", "1",
            "--no-ledger", "--noise-seed", "1", "--quiet", "--out", str(out)]
    with registered():
        assert main([*base, "--algorithm", TOY.name, "--toy-tests", "7"]) == 0
        doc = json.loads(out.read_text())
        assert doc["algorithm"] == TOY.name
        assert doc["plan"]["plan_size"] == 7
        assert doc["privacy"]["epsilon"] == 1.0
        assert main([*base, "--algorithm", "laplace-pc", "--toy-tests", "7"]) == 2
    # unregistered again: the flag is unknown to argparse
    with pytest.raises(SystemExit):
        main([*base, "--algorithm", "laplace-pc", "--toy-tests", "7"])


def test_registry_rejects_conflicting_names() -> None:
    from dpcg.private.registry import get_algorithm

    existing = get_algorithm("laplace-pc")
    assert register_algorithm(existing) is existing  # the same object: idempotent
    with pytest.raises(Exception, match="already registered"):
        register_algorithm(type(existing)())
    with pytest.raises(Exception, match="already registered"):
        registry.register_test(registry.TestSpec(name="g2", description="dup",
                                                 options=registry.NoOptions))


@pytest.mark.parametrize("argv", [
    ["--algorithm", "pc", "--epsilon", "1"],
    ["--algorithm", "pc", "--no-ledger"],
    ["--algorithm", "pc", "--cutoff", "2"],
    ["--algorithm", "pc", "--test", "g2", "--threshold", "1"],
    ["--algorithm", "laplace-pc", "--epsilon", "1", "--cutoff", "2"],
    ["--algorithm", "em-pc", "--epsilon", "1", "--plan-size", "3"],
    ["--algorithm", "svt-pc", "--epsilon", "1", "--bandwidth", "0.5"],
    ["--algorithm", "laplace-pc"],
    ["--algorithm", "laplace-pc", "--epsilon", "1", "--no-ledger", "--ledger", "x.db"],
    ["--algorithm", "laplace-pc", "--epsilon", "1", "--test", "privgcm"],
    ["--algorithm", "private-ci-pc", "--epsilon", "1", "--test", "kendall-z"],
])
def test_options_that_do_not_apply_are_errors(argv: list[str], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["discover", "--dataset", "cancer", "--rows", "200", "--quiet",
                 "--out", str(tmp_path / "r.json"), *argv])
    assert code == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_help_groups_say_what_they_belong_to(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["discover", "--help"])
    out = capsys.readouterr().out
    for title in ("data (one of --dataset or --data)", "algorithm and CI test",
                  "privacy budget (private algorithms only)", "ledger (private algorithms only)",
                  "options of --algorithm laplace-pc, priv-pc, private-ci-pc, svt-pc",
                  "options of --algorithm curate", "options of --test privcrt", "output"):
        assert title in out


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["discover", "--list"]) == 0
    out = capsys.readouterr().out
    assert "pc " in out
    assert "g2 " in out
    assert "dsep " in out


def test_bundled_dataset_with_dsep_gives_metrics(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["discover", "--dataset", "asia", "--rows", "50", "--test", "dsep",
                 "--out", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["metrics"]["skeleton_f1"] == 1.0
    assert doc["metrics"]["shd"] == 0
    assert doc["data"]["rows"] == 50


def test_progress_waits_then_prints() -> None:
    """tqdm draws the line once the run passes ``delay``; before, nothing is printed."""
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    p = Progress(stream, delay=0.0, interval=0.0)
    p(0, 5)
    p(1, 6)
    p.close()
    assert "level 0, 5 tests" in stream.getvalue()
    assert "level 1, 6 tests" in stream.getvalue()
    silent = io.StringIO()
    q = Progress(silent, delay=60.0)
    q(0, 1)
    assert silent.getvalue() == ""
    private = io.StringIO()
    r = Progress(private, delay=0.0, interval=0.0, show_time=False)
    r(0, 3)
    r.close()
    assert "level 0, 3 tests" in private.getvalue()
    assert "00:00" not in private.getvalue()  # no elapsed time for a private run


def test_bench_without_suite_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench"]) == 2
    assert "SUITE" in capsys.readouterr().err


def test_parser_builds() -> None:
    from dpcg.cli import build_parser

    parser = build_parser()
    assert isinstance(parser, argparse.ArgumentParser)


def test_bundled_dataset_with_g2(tmp_path: Path) -> None:
    out, gml = tmp_path / "r.json", tmp_path / "g.graphml"
    assert main(["discover", "--dataset", "asia", "--rows", "5000", "--test", "g2", "--seed",
                 "2", "--out", str(out), "--graphml", str(gml), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["test"] == "g2"
    assert doc["data"] == {"source": "bundled", "dataset": "asia", "rows": 5000, "seed": 2}
    assert doc["tests"]["count"] > 0
    assert 0.0 <= doc["metrics"]["skeleton_f1"] <= 1.0
    assert doc["metrics"]["shd"] >= 0
    assert set(nx.read_graphml(gml).nodes) == set(doc["nodes"])
