"""The scale-free shape of ``dpcg datasets random`` (issue 59: networks with hubs)."""

from __future__ import annotations

import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from dpcg.cli import main
from dpcg.datasets import RandomSpec, load_network, parse_random_spec, random_network
from dpcg.errors import DataValidationError

SF = "random:nodes=80,max_parents=4,card=2-5,seed=3,conc=0.6,shape=scale-free,exponent=1"


def _children(net: object) -> Counter[str]:
    out: Counter[str] = Counter()
    for ps in net.parents.values():  # type: ignore[attr-defined]
        out.update(ps)
    return out


def test_structure_name_and_determinism() -> None:
    net = random_network(SF)
    assert net.name == SF
    assert parse_random_spec(SF) == RandomSpec(nodes=80, max_parents=4, card_lo=2, card_hi=5,
                                               seed=3, conc=0.6, shape="scale-free")
    g = nx.DiGraph([(a, v) for v, ps in net.parents.items() for a in ps])
    assert nx.is_directed_acyclic_graph(g)
    assert nx.is_weakly_connected(g)
    assert g.number_of_nodes() == 80
    indeg = [len(ps) for ps in net.parents.values()]
    assert indeg.count(0) == 1  # only the first node of the order is a root
    assert max(indeg) <= 4
    assert min(d for d in indeg if d) >= 1
    assert set(Counter(indeg)) == {0, 1, 2, 3, 4}
    again = load_network(SF)
    assert again.parents == net.parents
    for v in net.parents:
        assert np.array_equal(again.cpts[v], net.cpts[v])
    other = random_network(SF.replace("seed=3", "seed=4"))
    assert other.parents != net.parents


def test_hubs_grow_with_the_exponent() -> None:
    def hub(shape: str, exponent: float) -> float:
        sizes = []
        for seed in range(5):
            spec = RandomSpec(nodes=150, max_parents=4, card_lo=2, card_hi=3, seed=seed,
                              shape=shape, exponent=exponent)
            sizes.append(max(_children(random_network(spec)).values()))
        return float(np.mean(sizes))

    uniform, pa0, pa1, pa2 = (hub("uniform", 1.0), hub("scale-free", 0.0),
                              hub("scale-free", 1.0), hub("scale-free", 2.0))
    assert pa1 > 2 * pa0  # preferential attachment makes hubs, uniform attachment does not
    assert pa2 > pa1
    assert pa1 > 2 * uniform


def test_uniform_names_and_draws_are_unchanged() -> None:
    name = "random:nodes=10,max_parents=3,card=2-4,seed=1,conc=1"
    spec = parse_random_spec(name)
    assert spec.shape == "uniform"
    assert spec.name == name  # no shape keys in a uniform network's name
    assert parse_random_spec(name + ",shape=uniform").name == name


@pytest.mark.parametrize(("name", "fragment"), [
    ("random:nodes=10,shape=star", "shape must be one of"),
    ("random:nodes=10,shape=scale-free,exponent=-1", "exponent must be"),
    ("random:nodes=10,shape=scale-free,exponent=5", "exponent must be"),
    ("random:nodes=10,shape=scale-free,exponent=nan", "exponent must be"),
    ("random:nodes=10,shape=scale-free,exponent=x", "not a number"),
    ("random:nodes=10,exponent=2", "scale-free only"),
])
def test_bad_shapes(name: str, fragment: str) -> None:
    with pytest.raises(DataValidationError, match=fragment):
        parse_random_spec(name)


def test_cli_scale_free(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["datasets", "random", "--nodes", "80", "--max-parents", "4",
                 "--cardinality", "2-5", "--seed", "3", "--concentration", "0.6",
                 "--shape", "scale-free", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["name"] == SF
    assert doc["max_children"] == max(_children(random_network(SF)).values())
    code = main(["datasets", "random", "--nodes", "8", "--seed", "1", "--exponent", "2"])
    assert code != 0
    assert "scale-free only" in capsys.readouterr().err
