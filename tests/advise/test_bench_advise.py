"""``dpcg bench advise``: advice from the cardinalities only, the measured runs on the
real network, coverage and time on the page; resumes from its results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import advise as bench
from dpcg.cli import main
from dpcg.errors import DpcgError


def test_bench_writes_coverage_and_resumes(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "advise.jsonl"
    argv = ["bench", "advise", "--networks", "asia,cancer", "--rows", "2000",
            "--epsilons", "1", "--algorithms", "laplace-pc", "--advice-networks", "2",
            "--workers", "1", "--results", str(results), "--docs-dir", str(tmp_path)]
    assert main(argv) == 0
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["network"] for r in recs] == ["asia", "cancer"]
    for r in recs:
        (cell,) = r["cells"]
        assert cell["low"] <= cell["pred"] <= cell["high"]
        assert cell["inside"] == (cell["low"] <= cell["f1"] <= cell["high"])
        assert r["advice_networks"] == 2
    page = (tmp_path / "benchmarks" / "advise.md").read_text()
    assert "| asia | 8 | laplace-pc | 1 |" in page
    assert "| all |" in page
    assert "## Time per advice" in page
    # a second call resumes: nothing is re-run, the file keeps its two records
    assert main(argv) == 0
    assert len(results.read_text().splitlines()) == 2
    capsys.readouterr()


def test_unknown_networks_are_refused() -> None:
    with pytest.raises(DpcgError):
        bench.resolve("no-such-network", None)
    assert bench.resolve("hub-60", None).startswith("random:")
