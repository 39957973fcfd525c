"""Fixtures for the pictures and the report: a real ledger and matching result files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accounting.costs import Budget
from accounting.ledger import Ledger, session_for_run
from accounting.mechanisms import Laplace
from accounting.relations import Relation

DATASET = "survey-2026"
MALICIOUS = '<script>alert("x")</script>&"\'$x^2$'


def make_ledger(path: Path, runs: int = 3) -> list[str]:
    """A ledger made through the accounting API: one dataset, ``runs`` runs of releases."""
    counts = np.array([3.0, 5.0, 8.0])
    run_ids = []
    with Ledger.open(path, create=True) as ledger:
        ledger.register_dataset(DATASET, Budget(3.0, 1e-6), Relation.REPLACE_ONE, "test table")
        for k in range(runs):
            session = session_for_run(ledger, DATASET, Budget(0.5), "basic", seed=k,
                                      description=f"run {k}")
            assert session.recorder is not None
            run_ids.append(session.recorder.run_id)
            for j in range(2):
                session.release(Laplace(sensitivity=1.0, epsilon=0.2),
                                lambda: float(counts.sum()),
                                purpose=f"count {j} <b>{MALICIOUS}</b>")
            session.close("completed")
    return run_ids


def result_doc(run_id: str | None = None, *, nodes: list[str] | None = None,
               directed: list[list[str]] | None = None,
               undirected: list[list[str]] | None = None,
               dataset: str | None = None, ledger: Path | None = None) -> dict[str, Any]:
    nodes = nodes or ["a", "b", "c", "d"]
    doc: dict[str, Any] = {
        "algorithm": "laplace-pc",
        "test": "kendall-split",
        "alpha": 0.05,
        "data": ({"source": "bundled", "dataset": dataset, "rows": 1000, "seed": 0}
                 if dataset else {"source": "file", "path": "t.csv", "rows": 1000}),
        "nodes": nodes,
        "edges": {"directed": directed if directed is not None else [["a", "b"], ["c", "b"]],
                  "undirected": undirected if undirected is not None else [["c", "d"]]},
        "tests": {"count": 4},
    }
    if run_id is not None:
        doc["guarantee"] = {"epsilon": 0.5, "delta": 0.0, "relation": "replace-one",
                            "rule": "basic"}
        doc["plan"] = {"rule": "basic", "plan_size": 2, "mechanism": "laplace",
                       "epsilon_per_test": 0.2}
        doc["ledger"] = {"path": str(ledger) if ledger else None, "run_id": run_id,
                         "dataset_id": DATASET}
        doc["mechanisms"] = {"laplace": 2}
    return doc


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    make_ledger(path)
    return path


@pytest.fixture
def private_result(tmp_path: Path, ledger_path: Path) -> Path:
    with Ledger.open(ledger_path) as ledger:
        run_id = ledger.runs(DATASET)[1].run_id
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result_doc(run_id, ledger=ledger_path)), encoding="utf-8")
    return path
