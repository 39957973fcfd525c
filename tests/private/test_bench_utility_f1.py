"""``dpcg bench utility --f1-ratio``: cells, resume, skip, and the report's targets."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from benchmarks import utility_f1 as f1
from benchmarks.report import page_results
from dpcg.errors import DpcgError


def test_cells_cover_families_named_and_extra_rows() -> None:
    cells = f1.cells([50, 20], nets=2, seeds=2, rows=1000, extra_rows=[500], named=["asia"])
    assert cells[0] == (f1.FAMILY.format(p=20, net=1), 1000, 1)
    assert len(cells) == 2 * 2 * 2 + 2 + 2 * 2
    assert (f1.FAMILY.format(p=50, net=2), 500, 2) in cells
    assert ("asia", 1000, 2) in cells
    assert f1.family_of(f1.FAMILY.format(p=50, net=2)) == "random 50 nodes"
    assert f1.family_of("asia") == "asia"


def test_jobs_skip_what_is_done_and_what_is_skipped() -> None:
    net = f1.FAMILY.format(p=200, net=1)
    cells = [(net, 1000, 1), ("asia", 1000, 1)]
    done = {(net, 1000, 1, "laplace-pc", 1.0), ("asia", 1000, 1, f1.BASELINE, None)}
    jobs = f1.jobs_to_run(cells, ["laplace-pc", "priv-pc"], [1.0, 5.0], done,
                          skip=["200/priv-pc"])
    assert (net, 1000, 1, "laplace-pc", (5.0,)) in jobs
    assert (net, 1000, 1, f1.BASELINE, ()) in jobs
    assert not any(j[0] == net and j[3] == "priv-pc" for j in jobs)
    assert not any(j[0] == "asia" and j[3] == f1.BASELINE for j in jobs)
    assert ("asia", 1000, 1, "priv-pc", (1.0, 5.0)) in jobs
    assert f1._skipped("50@10000", "random 50 nodes", 10_000, "em-pc")
    assert not f1._skipped("50@10000", "random 50 nodes", 100_000, "em-pc")


def _args(tmp_path: Path, **kw: object) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=f1.ROWS)
    f1.add_arguments(p)
    ns = p.parse_args([])
    ns.results = tmp_path / "f1.jsonl"
    ns.f1_out = tmp_path / "f1.md"
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def test_run_resumes_and_reports(tmp_path: Path) -> None:
    args = _args(tmp_path, sizes="5", networks_per_size=1, seeds=1, extra_rows="", named="",
                 algorithms="laplace-pc,svt-pc", epsilons="1,5", processes=1, rows=3000,
                 hubs="")
    assert f1.run(args) == 0
    rows = f1.load_results(args.results)
    keys = {(r["algorithm"], r["epsilon"]) for r in rows}
    assert keys == {(f1.BASELINE, None), (f1.CEILING, None), ("laplace-pc", 1.0),
                    ("laplace-pc", 5.0),
                    ("svt-pc", 1.0), ("svt-pc", 5.0)}
    for r in rows:
        assert 0.0 <= r["f1"] <= 1.0
        assert (r["nodes"], r["rows"]) == (5, 3000)
    first = args.results.read_text()
    assert f1.run(args) == 0  # nothing left to run: the file is unchanged
    assert args.results.read_text() == first
    text = args.f1_out.read_text()
    assert "## eps = 1" in text
    assert "## eps = 5" in text
    assert "random 5 nodes" in text


def _row(network: str, algo: str, eps: float | None, f1v: float,
         seed: int = 1) -> dict[str, object]:
    return {"network": network, "family": f1.family_of(network), "rows": f1.ROWS,
            "seed": seed, "algorithm": algo, "epsilon": eps, "f1": f1v, "edges": 10,
            "true_edges": 10, "cpu_s": 1.0, "precision": 1.0, "recall": 1.0,
            "exhausted": False}


@pytest.mark.parametrize(("best", "met"), [(0.9, True), (0.8, False)])
def test_report_marks_the_target(best: float, met: bool) -> None:
    net = f1.FAMILY.format(p=50, net=1)
    results = [_row(net, f1.BASELINE, None, 1.0), _row(net, "laplace-pc", 1.0, best),
               _row(net, "priv-pc", 1.0, best - 0.2), _row(net, f1.CEILING, None, 0.95)]
    text = f1.render(results, ["laplace-pc", "priv-pc"], [1.0], "test")
    line = next(x for x in text.splitlines() if x.startswith("| random 50 nodes | 100,000 | **"))
    assert ("met (>= 0.85)" in line) == met
    assert ("**not met**" in line) != met
    assert "0.20 (> 0.10)" in line
    assert line.endswith("| 0.95 (1) |")  # the no-noise ceiling
    assert f1.ratios(results)[("random 50 nodes", f1.ROWS, "priv-pc", 1.0)] == [
        pytest.approx(best - 0.2)]


def test_a_family_of_another_shape_is_labelled_and_run() -> None:
    assert f1.family_template("") == f1.FAMILY
    tpl = f1.family_template("max_parents=5,card=2-6")
    assert tpl == "random:nodes={p},max_parents=5,card=2-6,seed={net},conc=1"
    net = tpl.format(p=200, net=1)
    fam = f1.family_of(net)
    assert fam == "random 200 nodes, max_parents=5, card=2-6"
    assert f1.target(fam, 1.0) == 0.75
    assert f1._skipped("200/em-pc", fam, 100_000, "em-pc")
    assert [c[0] for c in f1.cells([20], 1, 1, 1000, [], [], tpl)] == [tpl.format(p=20, net=1)]
    for bad in ("nodes=5", "seed=2", "depth=3", "card"):
        with pytest.raises(DpcgError, match="--family"):
            f1.family_template(bad)


def test_hub_rows_are_the_scale_free_family_with_its_target() -> None:
    from benchmarks.scale import hub_network

    for p in f1.HUB_SIZES:
        assert f1.HUB_FAMILY.format(p=p, net=2) == hub_network(p, seed=2)
    cells = f1.cells([20], nets=1, seeds=2, rows=1000, extra_rows=[], named=[],
                     hubs=[100, 50], hub_nets=1)
    assert [c[0] for c in cells[2:]] == [hub_network(50, seed=1)] * 2 + [
        hub_network(100, seed=1)] * 2
    fam = f1.family_of(hub_network(200, seed=3))
    assert fam == "hub 200 nodes"
    assert f1.family_of(hub_network(50, seed=1, conc=1.0)) == "hub 50 nodes, conc=1"
    assert f1.is_hub(fam)
    assert not f1.is_hub("random 200 nodes")
    assert f1.target(fam, 1.0) == 0.85  # issue 59: 50-200 nodes
    assert f1.target(fam, 5.0) == 0.9
    assert f1.pc_depth(fam) == f1.HUB_DEPTH == 3
    assert f1.pc_depth("random 200 nodes") is None
    assert f1.pc_depth(fam, None) is None
    assert f1._order([(fam, 1000), ("asia", 1000), ("random 20 nodes", 1000),
                      ("hub 50 nodes", 1000)]) == [
        ("random 20 nodes", 1000), ("hub 50 nodes", 1000), (fam, 1000), ("asia", 1000)]
    assert f1._skipped("200/em-pc", fam, 100_000, "em-pc")


def test_a_hub_cell_runs_with_the_depth_capped_baseline(tmp_path: Path) -> None:
    args = _args(tmp_path, sizes="", hubs="7", hub_networks=1, seeds=1, extra_rows="",
                 named="",
                 algorithms="hub-pc", epsilons="1", processes=1, rows=3000)
    assert f1.run(args) == 0
    rows = f1.load_results(args.results)
    assert {r["algorithm"] for r in rows} == {f1.BASELINE, f1.CEILING, "hub-pc"}
    assert all(r["family"] == "hub 7 nodes" for r in rows)
    assert all(r["max_depth"] == 3 for r in rows if r["epsilon"] is None)
    text = args.f1_out.read_text()
    assert "| hub 7 nodes | 3,000 | 1 |" in text
    line = next(x for x in text.splitlines() if x.startswith("| hub 7 nodes | 3,000 | 1 |"))
    assert line.endswith("| 3 |")  # the depth cap beside the baseline
    assert "0.85)" in next(x for x in text.splitlines()
                             if x.startswith("| hub 7 nodes | 3,000 | **"))


def test_the_target_holds_at_every_row_count() -> None:
    net = f1.FAMILY.format(p=50, net=1)
    results = [{**r, "rows": 10_000} for r in (
        _row(net, f1.BASELINE, None, 1.0), _row(net, "laplace-pc", 5.0, 0.89))]
    text = f1.render(results, ["laplace-pc"], [5.0], "test")
    line = next(x for x in text.splitlines() if x.startswith("| random 50 nodes | 10,000 | **"))
    assert "**not met** (< 0.9)" in line


def test_a_named_network_above_100_nodes_has_the_200_node_target() -> None:
    assert f1.target("andes", 1.0, 223) == 0.75
    assert f1.target("win95pts", 1.0, 76) == 0.85
    assert f1.target("andes", 5.0, 223) == 0.9
    assert f1.target("andes", 2.0, 223) is None
    rows = [{**_row("/nets/andes.bif.gz", algo, eps, v), "nodes": 223}
            for algo, eps, v in ((f1.BASELINE, None, 1.0), ("laplace-pc", 1.0, 0.8))]
    text = f1.render(rows, ["laplace-pc"], [1.0], "test")
    line = next(x for x in text.splitlines() if x.startswith("| andes | 100,000 | **"))
    assert "met (>= 0.75)" in line


def test_a_run_written_twice_counts_once(tmp_path: Path) -> None:
    net = f1.FAMILY.format(p=50, net=1)
    row = _row(net, "laplace-pc", 1.0, 0.9)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (row, row, _row(net, "svt-pc", 1.0, 0.5))))
    assert len(f1.load_results(path)) == 2


def test_speed_rows_pair_each_test_with_g2() -> None:
    """The per-test speed rows of ``dpcg bench utility``: every time is measured, the
    ratios are medians of paired rounds (positive and finite), and the table shows them."""
    import argparse
    import math

    from benchmarks.utility import render, speed

    row = speed(3, 4, 2_000, 1, 3)
    for v in (row.g2_table_ms, row.dist_table_ms, row.g2_stat_us, row.dist_stat_us,
              row.split_table_ms, row.split_stat_us, row.dist_ratio, row.split_ratio):
        assert math.isfinite(v)
        assert v > 0
    assert row.dist_evals >= 1
    args = argparse.Namespace(rows=2_000, seed=1, alpha=0.05, eps=1.0, delta=1e-6, repeats=3)
    text = render([], [], [row], args)
    assert f"| 3 | 4 | {row.g2_table_ms:.2f} | {row.dist_table_ms:.2f} | {row.dist_ratio:.2f} |" \
        in text
    assert "median over the rounds" in text


def test_callgrind_output_is_read_by_function_name() -> None:
    from benchmarks.utility import parse_inclusive

    text = """--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,775,698,391 (100.0%)  PROGRAM TOTALS
   48,357,006 ( 2.84%)  ./Modules/_functoolsmodule.c:functools_reduce [/lib/libpython3.11.so]
   44,571,138 ( 2.61%)  ./Modules/itertoolsmodule.c:starmap_next [/lib/libpython3.11.so]
    2,947,289 ( 0.17%)  ./Modules/itertoolsmodule.c:filterfalse_next [/lib/libpython3.11.so]
          254 ( 0.00%)  ./Include/object.h:functools_reduce
"""
    got = parse_inclusive(text, ("starmap_next", "filterfalse_next", "functools_reduce"))
    assert got == {"starmap_next": 44_571_138, "filterfalse_next": 2_947_289,
                   "functools_reduce": 48_357_006}
    with pytest.raises(ValueError, match="dropwhile_next"):
        parse_inclusive(text, ("dropwhile_next",))


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None
                    or shutil.which("callgrind_annotate") is None,
                    reason="needs valgrind (callgrind)")
def test_instruction_counts_under_callgrind() -> None:
    """A real callgrind run of the probe: every count is positive, and building the
    table plus a statistic costs more than building the table alone."""
    from benchmarks.utility import instructions

    row = instructions(3, 4, 2_000, 1, 2)
    assert row.table > 0
    assert row.g2_table > row.table
    assert row.dist_table > row.table
    assert row.split_table > row.table


def test_a_page_built_from_another_file_is_not_overwritten_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default results file is relative
    net = f1.FAMILY.format(p=50, net=1)
    mine = tmp_path / "mine.jsonl"
    mine.write_text("\n".join(json.dumps(r) for r in (
        _row(net, f1.BASELINE, None, 1.0), _row(net, "laplace-pc", 1.0, 0.9))))
    page = tmp_path / "page.md"
    args = _args(tmp_path, results=mine, f1_out=page, report_only=True,
                 algorithms="laplace-pc", epsilons="1")
    assert f1.run(args) == 0
    built = page.read_text()
    assert page_results(page) == mine
    # without --results: the default file would replace the page's tables
    args = _args(tmp_path, results=None, f1_out=page, report_only=True,
                 algorithms="laplace-pc", epsilons="1")
    with pytest.raises(DpcgError, match="--results") as err:
        f1.run(args)
    assert str(mine) in str(err.value)
    assert page.read_text() == built  # untouched
    # a page the default file built, or no page at all, is (re)built from the default
    fresh = tmp_path / "fresh.md"
    assert page_results(fresh) is None
    args = _args(tmp_path, results=None, f1_out=fresh, report_only=True,
                 algorithms="laplace-pc", epsilons="1")
    assert f1.run(args) == 0
    assert page_results(fresh) == f1.RESULTS
    assert f1.run(args) == 0
    # an explicit --results replaces the page on purpose
    args = _args(tmp_path, results=f1.RESULTS, f1_out=page, report_only=True,
                 algorithms="laplace-pc", epsilons="1")
    assert f1.run(args) == 0
    assert page_results(page) == f1.RESULTS
