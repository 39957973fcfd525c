"""Parity with causal-learn: same skeleton on the same data (test-only oracle).

Our PC-stable stops at the first separating set and tests each pair once per set;
causal-learn's stable PC keeps testing, but a textbook PC-stable with the same G^2 test
must give the same skeleton (REFERENCES.md). One 100K-row sample per network.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.pc import causallearn_cpdag
from dpcg.citests.nonprivate import FastG2Test
from dpcg.datasets import load_network
from dpcg.graph import CPDAG
from dpcg.metrics import skeleton_scores
from dpcg.pc import pc_stable

ROWS = 100_000


def _parity(name: str) -> None:
    pc = pytest.importorskip("causallearn.search.ConstraintBased.PC").pc
    net = load_network(name)
    ds = net.sample(ROWS, 0)
    ours = pc_stable(FastG2Test(ds, alpha=0.05), ds.names)
    data = np.asarray(ds.codes).T.astype(np.int64)
    cg = pc(data, 0.05, "gsq", stable=True, show_progress=False)
    ref = causallearn_cpdag(cg.G.graph, tuple(ds.names))
    assert ours.cpdag.skeleton() == ref.skeleton()
    truth = CPDAG.from_dag(net.nodes, net.dag_edges)
    # sanity: both are close to the truth at this sample size
    assert skeleton_scores(ours.cpdag, truth).f1 > 0.95
    # every removed pair has a separating set, tested once per (pair, set)
    asked = [(r.x, r.y, r.S) for r in ours.tests]
    assert len(asked) == len(set(asked))


@pytest.mark.oracle
def test_parity_sachs() -> None:
    _parity("sachs")


@pytest.mark.oracle
@pytest.mark.slow
def test_parity_child() -> None:
    _parity("child")


@pytest.mark.oracle
@pytest.mark.slow
def test_parity_alarm() -> None:
    _parity("alarm")
