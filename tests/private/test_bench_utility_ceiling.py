"""``python -m benchmarks.utility --ceiling``: one G^2 PC run checks the distance on every
table, and the distance's own run is made only when a sign differs."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import utility
from dpcg.datasets import load_network


def test_ceiling_checks_the_distance_on_every_g2_test() -> None:
    row = utility.ceiling("asia", 2000, 1, 0.05)
    assert row.tests > 0
    assert row.differ == 0
    assert row.distance == row.g2
    # the distance's own run gives the same graph, as the shortcut assumes
    net = load_network("asia")
    data = net.sample(2000, 1)
    assert utility._f1(net, data, utility._distance_rule(0.05)) == row.g2


def test_ceiling_runs_the_distance_when_a_sign_differs(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    # a distance that says "independent" on every table: its own PC run removes every
    # edge, while G^2 PC keeps some
    monkeypatch.setattr(utility, "g2_distance", lambda table, alpha: 0)
    row = utility.ceiling("asia", 2000, 1, 0.05)
    assert row.differ > 0
    assert row.g2 > 0.0
    assert row.distance == 0.0


def test_render_reports_the_differing_tests() -> None:
    row = utility.CeilingRow("asia", 8, 0.8, 0.8, 0.7, 1.0, tests=1234, differ=0)
    args = argparse.Namespace(rows=2000, seed=1, alpha=0.05, eps=1.0, delta=1e-6, repeats=1)
    text = utility.render([], [row], [], args)
    assert "| asia | 8 | 0.800 | 0.800 | 0.700 | +0.000 |" in text
    assert "asia 0 of 1,234" in text
