"""``dpcg bench private`` names its results file on its page and does not rebuild a page
built from another file from the default one (a real, small grid through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.private import RESULTS, page
from benchmarks.report import page_results
from dpcg.cli import main

GRID = ["bench", "private", "--networks", "earthquake", "--algorithms", "laplace-pc",
        "--epsilons", "1", "--seeds", "2", "--no-speed", "--compare-test", "none",
        "--processes", "1", "--rows", "2000"]


def test_page_names_its_results_and_is_not_overwritten_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the default results and ledger folders are relative
    docs = tmp_path / "docs"
    mine = tmp_path / "mine.jsonl"
    assert main([*GRID, "--results", str(mine), "--ledger-dir", str(tmp_path / "ledgers"),
                 "--docs-dir", str(docs)]) == 0
    built = page(docs).read_text()
    assert page_results(page(docs)) == mine
    runs = [json.loads(line) for line in mine.read_text().splitlines()]
    assert {r["algorithm"] for r in runs} == {"pc", "laplace-pc"}
    assert sum(r["algorithm"] == "laplace-pc" for r in runs) == 2
    assert "| earthquake | laplace-pc |" in built
    assert (docs / "benchmarks.md").read_text().count("Private PC family") == 1
    capsys.readouterr()

    # without --results the default file would replace the page's tables: refused, before
    # anything runs or is written
    assert main([*GRID, "--report-only", "--docs-dir", str(docs)]) == 2
    err = capsys.readouterr().err
    assert "--results" in err
    assert str(mine) in err
    assert page(docs).read_text() == built
    assert not RESULTS.exists()

    # --report-only with the page's own file rebuilds the same tables
    assert main([*GRID, "--report-only", "--results", str(mine), "--docs-dir",
                 str(docs)]) == 0
    again = page(docs).read_text()
    table = built[built.index("### Skeleton F1"):]
    assert again[again.index("### Skeleton F1"):] == table

    # an explicit --results replaces the page on purpose; a page the default file built
    # is rebuilt from it without --results
    other = tmp_path / "other.jsonl"
    other.write_text(mine.read_text())
    assert main([*GRID, "--report-only", "--results", str(other), "--docs-dir",
                 str(docs)]) == 0
    assert page_results(page(docs)) == other
    RESULTS.parent.mkdir(parents=True)
    RESULTS.write_text(mine.read_text())
    assert main([*GRID, "--report-only", "--results", str(RESULTS), "--docs-dir",
                 str(docs)]) == 0
    assert main([*GRID, "--report-only", "--docs-dir", str(docs)]) == 0
    assert page_results(page(docs)) == RESULTS


def test_page_names_the_machine_of_its_speed_table(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A page rebuilt with ``--report-only`` on another machine keeps the machine its
    speed table was measured on (recorded with the speed rows since 2026-12-02)."""
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    mine = tmp_path / "mine.jsonl"
    assert main([*GRID, "--results", str(mine), "--ledger-dir", str(tmp_path / "ledgers"),
                 "--docs-dir", str(docs)]) == 0
    speed = [{"algorithm": "pc (non-private, same test)", "score": "kendall-split",
              "seconds": 0.5, "wall_seconds": 0.5, "n_tests": 10, "per_test_ms": 0.05,
              "machine": "Some CPU, 2 logical CPUs, Python 3.11.7"}]
    mine.with_suffix(".speed.json").write_text(json.dumps(speed))
    assert main([*GRID, "--results", str(mine), "--report-only", "--docs-dir",
                 str(docs)]) == 0
    assert "| kendall-split | pc (non-private, same test) | 0.50 |" in page(docs).read_text()
    assert "Machine: Some CPU, 2 logical CPUs, Python 3.11.7." in page(docs).read_text()


def test_hub_rows_run_with_the_depth_capped_reference(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub rows (issue 59): the scale-free network of ``benchmarks.scale``, its own
    noise-seed count, non-private PC at depth 3, no EM-PC unless asked, no eps-1 target."""
    from benchmarks.private import HUB_NETWORKS, HUB_PC_DEPTH, load_bench_network
    from benchmarks.scale import hub_network
    from dpcg.datasets import load_network

    assert HUB_NETWORKS == {"hub-50": 50, "hub-100": 100, "hub-200": 200}
    net = load_bench_network("hub-50")
    assert net.dag_edges == load_network(hub_network(50, seed=1)).dag_edges
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    mine = tmp_path / "hub.jsonl"
    assert main(["bench", "private", "--networks", "hub-50", "--algorithms", "hub-pc",
                 "em-pc", "--epsilons", "1", "--seeds", "5", "--hub-seeds", "1",
                 "--no-speed", "--compare-test", "none", "--processes", "1", "--rows",
                 "2000", "--results", str(mine), "--ledger-dir", str(tmp_path / "l"),
                 "--docs-dir", str(docs)]) == 0
    runs = [json.loads(line) for line in mine.read_text().splitlines()]
    assert sorted(r["algorithm"] for r in runs) == ["hub-pc", "pc"]  # no EM-PC
    assert next(r for r in runs if r["algorithm"] == "pc")["max_depth"] == HUB_PC_DEPTH
    text = page(docs).read_text()
    assert f"| hub-50 | pc (non-private, depth {HUB_PC_DEPTH}) |" in text
    assert "| hub-50 | hub-pc |" in text
    assert "| hub-50 | - |" in text  # no eps-1 target on this page
    assert "Hub rows (issue 59)" in text
