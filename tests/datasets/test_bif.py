"""The BIF reader: bundled networks, formatting variants and malformed input."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from dpcg.datasets import (
    BIF_DIR,
    list_networks,
    load_network,
    network_from_bif,
    parse_bif,
    read_bif,
)
from dpcg.errors import BifParseError, DatasetNotFoundError, DpcgError

#: nodes / edges from REFERENCES.md (and bnlearn's repository for the larger four).
EXPECTED = {
    "earthquake": (5, 4),
    "cancer": (5, 4),
    "asia": (8, 8),
    "survey": (6, 6),
    "sachs": (11, 17),
    "child": (20, 25),
    "alarm": (37, 46),
    "insurance": (27, 52),
    "water": (32, 66),
    "hailfinder": (56, 66),
    "hepar2": (70, 123),
}


def test_bundle_is_complete_and_small() -> None:
    assert set(list_networks()) == set(EXPECTED)
    total = sum(p.stat().st_size for p in BIF_DIR.glob("*.bif.gz"))
    assert total < 1_000_000
    assert (BIF_DIR / "README.md").is_file()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_network_parses(name: str) -> None:
    net = load_network(name)
    nodes, edges = EXPECTED[name]
    assert net.n_nodes == nodes
    assert net.n_edges == edges
    assert len(net.dag_edges) == edges
    assert len(set(net.dag_edges)) == edges
    for v in net.nodes:
        cpt = net.cpts[v]
        assert cpt.shape == (*(len(net.states[p]) for p in net.parents[v]), len(net.states[v]))
        np.testing.assert_allclose(cpt.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
        assert np.all(cpt >= 0)
    # topological order: every parent before its child
    pos = {v: i for i, v in enumerate(net.topological_order)}
    assert sorted(pos) == sorted(net.nodes)
    assert all(pos[a] < pos[b] for a, b in net.dag_edges)
    schema = net.schema()
    assert schema.names == net.nodes
    assert all(col.categories == net.states[col.name] for col in schema)  # type: ignore[union-attr]


def test_earthquake_content() -> None:
    net = load_network("earthquake")
    assert net.nodes == ("Burglary", "Earthquake", "Alarm", "JohnCalls", "MaryCalls")
    assert net.states["Alarm"] == ("True", "False")
    assert net.parents["Alarm"] == ("Burglary", "Earthquake")
    assert set(net.dag_edges) == {
        ("Burglary", "Alarm"), ("Earthquake", "Alarm"),
        ("Alarm", "JohnCalls"), ("Alarm", "MaryCalls"),
    }
    # (False, True) 0.29, 0.71  ->  Burglary=False (1), Earthquake=True (0)
    np.testing.assert_allclose(net.cpts["Alarm"][1, 0], [0.29, 0.71])
    np.testing.assert_allclose(net.cpts["Alarm"][1, 1], [0.001, 0.999])
    np.testing.assert_allclose(net.cpts["Burglary"], [0.01, 0.99])
    assert net.conditional("Alarm").shape == (4, 2)


def test_unknown_network() -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_network("alarms")
    message = str(info.value)
    assert "'alarms'" in message
    for name in EXPECTED:
        assert name in message
    assert isinstance(info.value, DpcgError)


VARIANT = """
// a comment
network "test net" { property "software" "none" ; }
/* block
   comment */
variable A { type discrete[3]{a1 a2 "a 3"}; property "x y";}
variable B {
  property position = (1, 2) ;
  type discrete [ 2 ] { "yes", "no" } ;
}
variable C { type discrete [ 2 ] { c1, c2 }; }
probability(A){table 0.2 0.3 0.5;}
probability ( B | A ) {
  ( a1 ) 0.1, 0.9;
  default 0.5, 0.5;
}
probability ( C | A, B ) {
  table 0.1, 0.2, 0.3, 0.4, 0.5, 0.6,
        0.9, 0.8, 0.7, 0.6, 0.5, 0.4;
}
"""


def test_formatting_variants() -> None:
    model = parse_bif(VARIANT, "variant.bif")
    assert list(model.variables) == ["A", "B", "C"]
    assert model.variables["A"] == ("a1", "a2", "a 3")
    assert model.variables["B"] == ("yes", "no")
    np.testing.assert_allclose(model.cpts["B"], [[0.1, 0.9], [0.5, 0.5], [0.5, 0.5]])
    # table: child slowest, then A, then B (last parent fastest)
    np.testing.assert_allclose(model.cpts["C"][:, :, 0], [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    np.testing.assert_allclose(model.cpts["C"][2, 1], [0.6, 0.4])
    net = network_from_bif(model)
    assert net.dag_edges == (("A", "B"), ("A", "C"), ("B", "C"))


def test_table_and_rows_agree() -> None:
    rows = parse_bif(
        "variable A { type discrete [2] { x, y }; }\n"
        "variable B { type discrete [3] { p, q, r }; }\n"
        "probability ( A ) { table 0.4, 0.6; }\n"
        "probability ( B | A ) { (x) 0.1, 0.2, 0.7; (y) 0.3, 0.3, 0.4; }\n"
    )
    table = parse_bif(
        "variable A { type discrete [2] { x, y }; }\n"
        "variable B { type discrete [3] { p, q, r }; }\n"
        "probability ( A ) { table 0.4, 0.6; }\n"
        "probability ( B | A ) { table 0.1, 0.3, 0.2, 0.3, 0.7, 0.4; }\n"
    )
    np.testing.assert_array_equal(rows.cpts["B"], table.cpts["B"])


def test_gzip_and_plain_files(tmp_path: Path) -> None:
    plain = tmp_path / "v.bif"
    plain.write_text(VARIANT)
    packed = tmp_path / "v.bif.gz"
    packed.write_bytes(gzip.compress(VARIANT.encode()))
    a, b = read_bif(plain), read_bif(packed)
    assert a.name == b.name == "v"
    for v in a.variables:
        np.testing.assert_array_equal(a.cpts[v], b.cpts[v])
    broken = tmp_path / "broken.bif.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(BifParseError, match=r"broken\.bif\.gz"):
        read_bif(broken)
    with pytest.raises(BifParseError, match="cannot read"):
        read_bif(tmp_path / "absent.bif")


HEAD = "variable A { type discrete [ 2 ] { a1, a2 }; }\n"
PA = "probability ( A ) { table 0.5, 0.5; }\n"

MALFORMED = [
    (HEAD + "probability ( A ) { table 0.5, 0.6; }\n", 2, "sum to"),
    (HEAD + "probability ( A ) { table 0.5; }\n", 2, "table has 1 entries, expected 2"),
    (HEAD + "probability ( A ) { table 0.5, x; }\n", 2, "expected a probability, got 'x'"),
    (HEAD + "probability ( A ) { table -0.5, 1.5; }\n", 2, ">= 0"),
    (HEAD + "probability ( A ) { table 0.5, 0.5 }\n", 2, "unexpected '}'"),
    (HEAD, 1, "'A' has no probability block"),
    (HEAD + PA + PA, 3, "second probability block for 'A'"),
    (HEAD + "probability ( B ) { table 1; }\n", 2, "undeclared variable 'B'"),
    (HEAD + "probability ( A | Z ) { table 0.5, 0.5; }\n", 2, "parent 'Z'"),
    (HEAD + HEAD, 2, "'A' declared twice"),
    ("variable A { type discrete [ 3 ] { a1, a2 }; }\n" + PA, 1, "declares 3 states but lists 2"),
    ("variable A { type discrete [ 2 ] { a1, a1 }; }\n" + PA, 1, "duplicate state 'a1'"),
    ("variable A { type discrete [ 2 ] { a1, a2, }; }\n" + PA, 1, "unexpected '}'"),
    ("variable A { type continuous; }\n", 1, "only discrete"),
    ("variable A { }\n", 1, "no 'type discrete'"),
    ("varable A { }\n", 1, "expected 'network', 'variable' or 'probability'"),
    (HEAD + "probability ( A ) { table 0.5, 0.5;\n", 2, "unexpected end of file"),
    (HEAD + "/* never closed\n", 2, "unterminated comment"),
    ('variable "A { }\n', 1, "unterminated string"),
    ("", 1, "no variables declared"),
    (
        HEAD + "variable B { type discrete [2] { b1, b2 }; }\n" + PA
        + "probability ( B | A ) {\n  (a1) 0.5, 0.5;\n}\n",
        4, "no probabilities for parent configuration ['a2']",
    ),
    (
        HEAD + "variable B { type discrete [2] { b1, b2 }; }\n" + PA
        + "probability ( B | A ) {\n  (a1) 0.5, 0.5;\n  (a3) 0.5, 0.5;\n}\n",
        6, "'a3' is not a state of parent 'A'",
    ),
    (
        HEAD + "variable B { type discrete [2] { b1, b2 }; }\n" + PA
        + "probability ( B | A ) {\n  (a1) 0.5, 0.5;\n  (a1) 0.5, 0.5;\n}\n",
        6, "given twice (first at line 5)",
    ),
    (
        HEAD + "variable B { type discrete [2] { b1, b2 }; }\n" + PA
        + "probability ( B | A ) {\n  (a1) 0.5, 0.5, 0.0;\n  (a2) 0.5, 0.5;\n}\n",
        5, "row has 3 probabilities, expected 2",
    ),
    (
        HEAD + "variable B { type discrete [2] { b1, b2 }; }\n"
        + "probability ( A | B ) { table 0.5, 0.5, 0.5, 0.5; }\n"
        + "probability ( B | A ) { table 0.5, 0.5, 0.5, 0.5; }\n",
        2, "cycle",
    ),
    (HEAD + "probability ( A | A ) { table 0.5, 0.5, 0.5, 0.5; }\n", 2, "its own parent"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), MALFORMED)
def test_malformed_input(text: str, line: int, fragment: str) -> None:
    with pytest.raises(BifParseError) as info:
        parse_bif(text, "bad.bif")
    message = str(info.value)
    assert message.startswith(f"bad.bif, line {line}:"), message
    assert fragment in message, message
    assert isinstance(info.value, DpcgError)
