"""Skeleton precision/recall/F1 and CPDAG SHD on hand examples."""

from __future__ import annotations

import pytest

from dpcg.errors import GraphError
from dpcg.graph import CPDAG
from dpcg.metrics import compare, shd, skeleton_scores

NODES = ("a", "b", "c", "d")
TRUTH = CPDAG(NODES, directed=[("a", "c"), ("b", "c")], undirected=[("c", "d")])


def test_identical_graphs() -> None:
    s = skeleton_scores(TRUTH, TRUTH)
    assert (s.precision, s.recall, s.f1) == (1.0, 1.0, 1.0)
    assert shd(TRUTH, TRUTH) == 0


def test_hand_example_each_kind_of_difference() -> None:
    est = CPDAG(
        NODES,
        directed=[("c", "a"),          # reversed arc: 1
                  ("c", "d")],         # arc where truth is undirected: 1
        undirected=[("b", "c"),        # undirected where truth is an arc: 1
                    ("a", "d")],       # extra edge: 1
    )
    assert shd(est, TRUTH) == 4
    s = skeleton_scores(est, TRUTH)
    assert s.true_positives == 3
    assert s.false_positives == 1
    assert s.false_negatives == 0
    assert s.precision == pytest.approx(3 / 4)
    assert s.recall == 1.0
    assert s.f1 == pytest.approx(2 * 0.75 / 1.75)


def test_missing_edges() -> None:
    est = CPDAG(NODES, directed=[("a", "c")])
    assert shd(est, TRUTH) == 2
    s = skeleton_scores(est, TRUTH)
    assert s.precision == 1.0
    assert s.recall == pytest.approx(1 / 3)
    assert s.f1 == pytest.approx(0.5)
    assert compare(est, TRUTH)["shd"] == 2


def test_empty_graphs() -> None:
    empty = CPDAG(NODES)
    s = skeleton_scores(empty, TRUTH)
    assert (s.precision, s.recall, s.f1) == (1.0, 0.0, 0.0)
    assert shd(empty, TRUTH) == 3
    assert skeleton_scores(empty, empty).f1 == 1.0
    assert shd(empty, empty) == 0


def test_node_order_does_not_matter_but_node_set_does() -> None:
    perm = CPDAG(("d", "c", "b", "a"), TRUTH.directed, TRUTH.undirected)
    assert shd(perm, TRUTH) == 0
    with pytest.raises(GraphError, match="different nodes"):
        shd(CPDAG(("a", "b", "c")), TRUTH)
