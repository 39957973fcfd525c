"""Accuracy of an estimated graph against a reference (the true CPDAG, or another run).

Both graphs must be over the same node names (their order may differ).

* **Skeleton scores** compare adjacencies only (orientation ignored). With ``E`` the
  estimated and ``T`` the reference set of unordered adjacent pairs,
  ``TP = |E & T|``, ``precision = TP / |E|`` (1.0 when ``E`` is empty),
  ``recall = TP / |T|`` (1.0 when ``T`` is empty) and
  ``F1 = 2 precision recall / (precision + recall)`` (0.0 when both are 0).
* **SHD** (structural Hamming distance on CPDAGs) is the number of unordered node pairs
  whose edge status differs, where the status of ``{a, b}`` is one of: no edge,
  ``a -> b``, ``b -> a``, ``a - b``. So a missing edge, an extra edge, a reversed arc and
  an arc-vs-undirected mismatch each count exactly 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpcg.errors import GraphError
from dpcg.graph import CPDAG

__all__ = ["SkeletonScores", "compare", "shd", "skeleton_scores"]


@dataclass(frozen=True)
class SkeletonScores:
    precision: float
    recall: float
    f1: float
    true_positives: int
    false_positives: int
    false_negatives: int


def _check_nodes(est: CPDAG, truth: CPDAG) -> None:
    if set(est.nodes) != set(truth.nodes):
        missing = sorted(set(truth.nodes) - set(est.nodes))
        extra = sorted(set(est.nodes) - set(truth.nodes))
        raise GraphError(
            f"graphs are over different nodes (missing from estimate: {missing}, "
            f"not in reference: {extra})"
        )


def skeleton_scores(est: CPDAG, truth: CPDAG) -> SkeletonScores:
    """Precision, recall and F1 of the estimated adjacencies (see the module docstring)."""
    _check_nodes(est, truth)
    e, t = est.skeleton(), truth.skeleton()
    tp = len(e & t)
    fp = len(e - t)
    fn = len(t - e)
    precision = tp / len(e) if e else 1.0
    recall = tp / len(t) if t else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return SkeletonScores(precision, recall, f1, tp, fp, fn)


def shd(est: CPDAG, truth: CPDAG) -> int:
    """Structural Hamming distance between two CPDAGs (see the module docstring)."""
    _check_nodes(est, truth)
    me, mt = est.edge_marks(), truth.edge_marks()
    return sum(1 for pair in me.keys() | mt.keys() if me.get(pair, 0) != mt.get(pair, 0))


def compare(est: CPDAG, truth: CPDAG) -> dict[str, float | int]:
    """All metrics as a JSON-compatible dict (the keys used in ``result.json``)."""
    s = skeleton_scores(est, truth)
    return {
        "skeleton_precision": s.precision,
        "skeleton_recall": s.recall,
        "skeleton_f1": s.f1,
        "shd": shd(est, truth),
        "true_positives": s.true_positives,
        "false_positives": s.false_positives,
        "false_negatives": s.false_negatives,
    }
