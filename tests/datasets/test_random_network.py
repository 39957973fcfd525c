"""Random-network generator: ``random:...`` specs, ``dpcg datasets random``."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy.stats import chi2

from dpcg.cli import main
from dpcg.datasets import (
    RandomSpec,
    load_network,
    network_from_bif,
    parse_random_spec,
    random_network,
    read_bif,
)
from dpcg.errors import DatasetNotFoundError, DataValidationError

SPECS = [
    "random:nodes=30,max_parents=3,card=2-5,seed=1,conc=1",
    "random:nodes=50,max_parents=1,card=2,seed=7,conc=0.3",
    "random:nodes=20,max_parents=4,card=3-6,seed=2,conc=20",
    "random:nodes=1,seed=0",
]


@pytest.mark.parametrize("name", SPECS)
def test_structure(name: str) -> None:
    spec = parse_random_spec(name)
    net = random_network(spec)
    assert net.n_nodes == spec.nodes
    assert net.nodes == tuple(f"X{i}" for i in range(spec.nodes))
    assert nx.is_directed_acyclic_graph(net.to_networkx())
    assert all(len(p) <= spec.max_parents for p in net.parents.values())
    assert all(spec.card_lo <= c <= spec.card_hi for c in net.cardinalities)
    for v in net.nodes:
        rows = net.conditional(v)
        assert np.all(rows >= 0)
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert net.states[v] == tuple(f"s{k}" for k in range(rows.shape[1]))


def test_deterministic_and_seed_sensitive() -> None:
    a = random_network(SPECS[0])
    b = random_network(SPECS[0])
    assert a.dag_edges == b.dag_edges
    assert a.cardinalities == b.cardinalities
    for v in a.nodes:
        np.testing.assert_array_equal(a.cpts[v], b.cpts[v])
    c = random_network(SPECS[0].replace("seed=1", "seed=2"))
    assert c.dag_edges != a.dag_edges
    np.testing.assert_array_equal(a.sample(100, 3).codes, b.sample(100, 3).codes)


def test_parent_counts_use_the_full_range() -> None:
    net = random_network("random:nodes=200,max_parents=3,card=2,seed=5")
    counts = np.bincount([len(p) for p in net.parents.values()], minlength=4)
    assert counts.size == 4
    assert np.all(counts > 20)
    cards = random_network("random:nodes=300,max_parents=0,card=2-6,seed=5").cardinalities
    assert set(cards) == {2, 3, 4, 5, 6}


def test_concentration_controls_dependence_strength() -> None:
    def mean_tv(conc: float) -> float:
        net = random_network(f"random:nodes=40,max_parents=2,card=3,seed=4,conc={conc}")
        tv = [0.5 * np.abs(net.conditional(v) - 1 / 3).sum(axis=1).mean()
              for v in net.nodes if net.parents[v]]
        return float(np.mean(tv))

    assert mean_tv(0.2) > mean_tv(1.0) > mean_tv(50.0)


def test_sampling_matches_cpts() -> None:
    net = random_network("random:nodes=15,max_parents=2,card=2-4,seed=11,conc=1")
    data = net.sample(200_000, 1)
    pos = {v: i for i, v in enumerate(net.nodes)}
    stat, df = 0.0, 0
    for v in net.nodes:
        config = np.zeros(data.n, dtype=np.intp)
        for p in net.parents[v]:
            config = config * len(net.states[p]) + data.codes[pos[p]]
        probs = net.conditional(v)
        card = probs.shape[1]
        obs = np.bincount(config * card + data.codes[pos[v]],
                          minlength=probs.size).reshape(probs.shape)
        exp = obs.sum(axis=1, keepdims=True) * probs
        keep = exp > 5
        stat += float((((obs - exp) ** 2)[keep] / exp[keep]).sum())
        df += int(keep.sum()) - int((keep.sum(axis=1) > 0).sum())
    assert chi2.sf(stat, df) > 1e-4


def test_load_network_and_canonical_name() -> None:
    net = load_network("random:seed=3, nodes=12 ,card=3")
    assert net.name == "random:nodes=12,max_parents=3,card=3,seed=3,conc=1"
    assert load_network(net.name) is net  # cached under the canonical name
    assert parse_random_spec(net.name) == RandomSpec(nodes=12, card_lo=3, card_hi=3, seed=3)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("random:", "'nodes' is required"),
        ("random:seed=1", "'nodes' is required"),
        ("random:nodes=5,depth=2", "unknown key 'depth'"),
        ("random:nodes=5,nodes=6", "given twice"),
        ("random:nodes=five", "not an integer"),
        ("random:nodes=5,seed", "not key=value"),
        ("random:nodes=0", "nodes=0 must be between 1"),
        ("random:nodes=5,card=1-3", "card low=1 must be between 2"),
        ("random:nodes=5,card=5-2", "low > high"),
        ("random:nodes=5,card=2-x", "not an integer"),
        ("random:nodes=5,conc=0", "conc=0.0 must be"),
        ("random:nodes=5,conc=nan", "conc=nan must be"),
        ("random:nodes=5,conc=abc", "not a number"),
        ("random:nodes=5,seed=-1", "seed=-1 must be"),
        ("random:nodes=50,max_parents=6,card=100", "CPT of"),
    ],
)
def test_bad_specs(name: str, fragment: str) -> None:
    with pytest.raises(DataValidationError, match=fragment.replace("(", r"\(")):
        load_network(name)


def test_unknown_bundled_name_mentions_random() -> None:
    with pytest.raises(DatasetNotFoundError, match="random:nodes=P"):
        load_network("randomnet")


def test_cli_random(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.bif"
    argv = ["datasets", "random", "--nodes", "12", "--max-parents", "2", "--cardinality",
            "2-5", "--seed", "4", "--concentration", "0.5", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out.splitlines()
    name = "random:nodes=12,max_parents=2,card=2-5,seed=4,conc=0.5"
    assert text[0] == name
    net = load_network(name)
    assert f"12 nodes, {net.n_edges} edges" in text[1]
    back = network_from_bif(read_bif(out))
    assert back.dag_edges == net.dag_edges
    for v in net.nodes:
        np.testing.assert_allclose(back.cpts[v], net.cpts[v], rtol=0, atol=1e-15)  # renormalised
    assert main([*argv[:-2], "--out", str(tmp_path / "r.bif.gz"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["name"] == name
    assert doc["nodes"] == 12
    assert doc["edges"] == net.n_edges
    assert network_from_bif(read_bif(tmp_path / "r.bif.gz")).dag_edges == net.dag_edges
    # the name works wherever a dataset name does
    assert main(["datasets", "show", name]) == 0
    assert f"{name}: 12 nodes" in capsys.readouterr().out


def test_cli_random_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets", "random", "--nodes", "5", "--seed", "1",
                 "--cardinality", "2-x"]) == 2
    assert "--cardinality must be LO-HI" in capsys.readouterr().err
    assert main(["datasets", "random", "--nodes", "5", "--seed", "1",
                 "--concentration", "-1"]) == 2
    assert "conc=-1.0 must be" in capsys.readouterr().err


def test_discover_accepts_random_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    name = "random:nodes=8,max_parents=2,card=2-3,seed=1,conc=0.5"
    assert main(["discover", "--dataset", name, "--rows", "3000", "--test", "g2"]) == 0
    captured = capsys.readouterr()
    assert name in captured.out + captured.err
