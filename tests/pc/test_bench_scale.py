"""``dpcg bench scale`` (issue 59): a fresh, memory-capped process per run."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.scale import hub_network, render, run_one
from dpcg.cli import main


def test_hub_network_name_parses() -> None:
    from dpcg.datasets import parse_random_spec

    name = hub_network(60)
    spec = parse_random_spec(name)
    assert spec.shape == "scale-free"
    assert spec.name == name


def test_one_run_is_measured() -> None:
    r = run_one(hub_network(8), 500, "pc", None, timeout=300)
    assert r.status == "ok"
    assert r.max_rss_mb > 10
    assert r.tests is not None
    assert r.tests > 0
    assert r.f1 is not None
    assert 0.0 <= r.f1 <= 1.0
    args = argparse.Namespace(nodes="8", rows=500, algorithms="pc", epsilons="1",
                              mem_cap_mb=4096, timeout=300.0)
    text = render([r], args)
    assert "| hub-8 | 500 | pc |" in text


def test_a_run_past_its_memory_cap_is_reported_not_fatal() -> None:
    # 60 MB of address space cannot even import NumPy and SciPy: the child fails with
    # a MemoryError/ImportError and the bench reports it instead of dying
    r = run_one(hub_network(8), 500, "priv-pc", 1.0, mem_cap_mb=60, timeout=300)
    assert r.status != "ok"
    assert r.tests is None


def test_cli_writes_the_section(tmp_path: Path) -> None:
    code = main(["bench", "scale", "--nodes", "6", "--rows", "300", "--algorithms",
                 "pc,laplace-pc", "--epsilons", "1", "--timeout", "300",
                 "--docs-dir", str(tmp_path)])
    assert code == 0
    text = (tmp_path / "benchmarks" / "scale.md").read_text()
    assert "| hub-6 | 300 | laplace-pc | 1 | ok |" in text


def test_pc_speed_measures_a_run_and_the_reference() -> None:
    import pytest

    pytest.importorskip("causallearn")
    from benchmarks.scale import SPEED_HEADER, pc_speed, render_speed

    r = pc_speed(hub_network(10), 2_000, workers=2, max_seconds=300.0,
                 reference_seconds=0.5, reference_queries=50)
    assert r["stopped"] is None
    assert r["tests"] == sum(r["levels"].values()) > 0
    assert r["cpu"] > 0
    assert r["wall"] > 0
    assert set(r["reference"]) == set(r["levels"])
    assert all(n >= 1 for n, _ in r["reference"].values())
    assert r["reference_cpu_estimate"] > 0
    assert 0.0 <= r["precision"] <= 1.0
    assert 0.0 <= r["recall"] <= 1.0
    assert r["f1"] == pytest.approx(2 * r["precision"] * r["recall"]
                                    / (r["precision"] + r["recall"]))
    row = render_speed(r)
    assert row.startswith("| hub-10 | 2,000 | causal-learn | 2 | complete |")
    assert row.count("|") == SPEED_HEADER.splitlines()[0].count("|")


def test_pc_speed_takes_a_sparse_rule() -> None:
    from benchmarks.scale import pc_speed, render_speed
    from dpcg.citests.nonprivate import FastG2Test
    from dpcg.datasets import load_network
    from dpcg.pc import pc_stable

    r = pc_speed(hub_network(10), 2_000, workers=1, max_seconds=300.0, sparse_rule="pcalg")
    ds = load_network(hub_network(10)).sample(2_000, 0)
    ref = pc_stable(FastG2Test(ds, sparse_rule="pcalg"), ds.names)
    assert r["tests"] == ref.n_tests
    assert r["edges"] == sum(len(a) for a in ref.adjacency) // 2
    assert "| pcalg | 1 | complete |" in render_speed(r)


def test_named_networks_and_a_run_budget(tmp_path: Path) -> None:
    from benchmarks.scale import network_label

    assert network_label(hub_network(8)) == "hub-8"
    assert network_label("nets/pathfinder.bif.gz") == "pathfinder"
    assert network_label("asia") == "asia"
    r = run_one("asia", 500, "pc", None, timeout=300,
                extra=("--max-seconds", "60", "--max-memory", "2GB"))
    assert r.status == "ok"
    assert r.tests is not None
    args = argparse.Namespace(nodes="", networks="asia", run_budget="60,2GB", rows=500,
                              algorithms="pc", epsilons="1", mem_cap_mb=4096,
                              timeout=300.0)
    text = render([r], args)
    assert text.startswith("## Scale: named networks")
    assert "--run-budget 60,2GB" in text
    assert "| asia | 500 | pc |" in text


def test_hub_survival_samples_the_hub_edges_deep_sets() -> None:
    import math

    from benchmarks.hub_survival import survival

    rows = survival(2, 2)
    assert len(rows) == 8
    assert len({r["hub"] for r in rows}) == 2
    for r in rows:
        assert 0 <= int(str(r["rejected"])) <= int(str(r["sampled"])) == 2
        assert r["sets_at_level"] == math.comb(int(str(r["degree"])) - 1, 2)
