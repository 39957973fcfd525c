"""Generated mixed networks (``dpcg.datasets.mixed_network``) and
``dpcg datasets random --continuous-share``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpcg.cli import main
from dpcg.data import Continuous, Dataset, Schema
from dpcg.datasets.mixed_network import (
    MixedSpec,
    mixed_network,
    null_mixed_table,
    parse_mixed_spec,
)
from dpcg.errors import DataValidationError


def test_seeded_and_named() -> None:
    spec = MixedSpec(nodes=15, seed=3, nonlinear=0.7, card_lo=2, card_hi=5)
    a, b = mixed_network(spec), mixed_network(spec.name)
    assert parse_mixed_spec(spec.name) == spec
    assert a.dag_edges == b.dag_edges
    da, db = a.sample(500, 1), b.sample(500, 1)
    for j in range(15):
        np.testing.assert_array_equal(da.column(j), db.column(j))
    assert mixed_network(MixedSpec(nodes=15, seed=4)).dag_edges != a.dag_edges
    assert not np.array_equal(a.sample(500, 2).column(0), da.column(0))


@pytest.mark.parametrize(("share", "expected"), [(0.0, 0), (0.5, 10), (1.0, 20), (0.33, 7)])
def test_share_of_continuous_nodes(share: float, expected: int) -> None:
    net = mixed_network(MixedSpec(nodes=20, continuous_share=share, seed=1))
    assert len(net.continuous) == expected
    kinds = [c.is_discrete for c in net.schema]
    assert kinds.count(False) == expected


def test_dag_is_acyclic_with_parent_limit() -> None:
    net = mixed_network(MixedSpec(nodes=40, max_parents=2, seed=9))
    pos = {net.names[j]: k for k, j in enumerate(net.order)}
    children: dict[str, int] = {}
    for a, b in net.dag_edges:
        assert pos[a] < pos[b]
        children[b] = children.get(b, 0) + 1
    assert max(children.values()) <= 2


def test_bounds_come_from_the_design() -> None:
    net = mixed_network(MixedSpec(nodes=12, seed=2, bound=4.0))
    small, large = net.sample(50, 0), net.sample(20_000, 1)
    assert small.schema == large.schema == net.schema
    for col in net.schema:
        if isinstance(col, Continuous):
            assert (col.lower, col.upper) == (-4.0, 4.0)
    for j, col in enumerate(net.schema):
        if isinstance(col, Continuous):
            v = large.column(j)
            assert np.all(np.abs(v) <= 4.0)
            assert abs(float(v.mean())) < 0.06  # unit variance, mean 0 by design
            assert 0.9 < float(v.std()) < 1.1


def test_parents_shift_children() -> None:
    """A continuous child's mean moves with a categorical parent; a discrete child's
    state distribution moves with a continuous parent (softmax link)."""
    net = mixed_network(MixedSpec(nodes=30, seed=5, strength=1.5))
    ds = net.sample(20_000, 0)
    checked_cont = checked_disc = 0
    for j, v in enumerate(net.nodes):
        if v.card is None and v.disc_parents:
            k = v.disc_parents[0]
            codes, x = ds.column(k), ds.column(j)
            means = [float(x[codes == s].mean()) for s in np.unique(codes)]
            assert max(means) - min(means) > 0.05
            checked_cont += 1
        if v.card is not None and v.cont_parents and not v.disc_parents:
            k = v.cont_parents[0]
            codes, x = ds.column(j), ds.column(k)
            means = [float(x[codes == s].mean()) for s in np.unique(codes)]
            assert max(means) - min(means) > 0.05
            checked_disc += 1
    assert checked_cont >= 1
    assert checked_disc >= 1


def test_nonlinear_share_controls_links() -> None:
    lin = mixed_network(MixedSpec(nodes=30, seed=1, nonlinear=0.0))
    non = mixed_network(MixedSpec(nodes=30, seed=1, nonlinear=1.0))
    assert all(link == 0 for v in lin.nodes for link in v.links)
    assert all(link != 0 for v in non.nodes for link in v.links)
    assert any(v.links for v in non.nodes)


@pytest.mark.parametrize("bad", [
    {"nodes": 0}, {"nodes": 5, "continuous_share": 1.5}, {"nodes": 5, "nonlinear": -0.1},
    {"nodes": 5, "card_lo": 4, "card_hi": 3}, {"nodes": 5, "bound": float("nan")},
    {"nodes": 5, "seed": -1}, {"nodes": 5, "max_parents": 30, "card_hi": 100},
    {"nodes": True},
])
def test_bad_specs(bad: dict[str, object]) -> None:
    with pytest.raises(DataValidationError):
        MixedSpec(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["mixed:", "mixed:nodes=x", "mixed:nodes=3,foo=1",
                                  "mixed:nodes=3,nodes=4", "random:nodes=3",
                                  "mixed:nodes=3,share=abc"])
def test_bad_names(name: str) -> None:
    with pytest.raises(DataValidationError):
        parse_mixed_spec(name)


def test_bad_rows() -> None:
    net = mixed_network(MixedSpec(nodes=3, seed=0))
    with pytest.raises(DataValidationError):
        net.sample(0, 0)


def test_cli_writes_csv_schema_truth_and_reads_back(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mix.csv"
    assert main(["datasets", "random", "--nodes", "12", "--seed", "1", "--continuous-share",
                 "0.5", "--rows", "3000", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["continuous"] == 6
    schema = Schema.from_json(tmp_path / "mix.schema.json")
    truth = json.loads((tmp_path / "mix.truth.json").read_text())
    net = mixed_network(truth["name"])
    assert [list(e) for e in net.dag_edges] == truth["edges"]
    assert schema == net.schema
    ds = Dataset.from_csv(out, schema)
    ref = net.sample(3000, 0)
    for j in range(12):
        np.testing.assert_array_equal(ds.column(j), ref.column(j))
    result = tmp_path / "r.json"
    assert main(["discover", "--data", str(out), "--schema", str(tmp_path / "mix.schema.json"),
                 "--test", "dg-lrt", "--out", str(result), "--quiet"]) == 0


def test_cli_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["datasets", "random", "--nodes", "4", "--seed", "1", "--continuous-share"]
    for argv, rule in (([*base, "0.5"], "--out"),
                       ([*base, "0.5", "--out", str(tmp_path / "x.bif")], "BIF"),
                       ([*base, "2", "--out", str(tmp_path / "x.csv")], "share"),
                       ([*base, "0.5", "--rows", "0", "--out", str(tmp_path / "x.csv")],
                        "--rows")):
        assert main(argv) != 0
        assert rule in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_null_mixed_table() -> None:
    a, b = null_mixed_table(2000, 7), null_mixed_table(2000, 7)
    for j in range(4):
        np.testing.assert_array_equal(a.column(j), b.column(j))
    assert a.names == ("X", "Y", "Z", "W")
    assert [c.is_discrete for c in a.schema] == [False, True, True, False]
    with pytest.raises(DataValidationError):
        null_mixed_table(0, 1)
