"""Grouped counts -> tables (pure NumPy; no engine needed): both marginalisation branches,
and the planning helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dpcg.stats import grouped
from dpcg.stats.contingency import contingency_table
from dpcg.stats.grouped import (
    GroupedFrame,
    chunk_sets,
    grouping_id,
    marginal_frame,
    table_from_frame,
    union_order,
)


def _joint(codes: np.ndarray) -> GroupedFrame:
    rows, counts = np.unique(codes.T, axis=0, return_counts=True)
    cols = tuple(range(codes.shape[0]))
    return GroupedFrame(cols, {j: rows[:, j].astype(np.int64) for j in cols}, counts)


@pytest.mark.parametrize("dense_min", [1 << 16, 0])
def test_marginals_of_the_joint_give_contingency_tables(
    monkeypatch: pytest.MonkeyPatch, dense_min: int
) -> None:
    monkeypatch.setattr(grouped, "DENSE_MIN", dense_min)
    monkeypatch.setattr(grouped, "DENSE_PER_ROW", 0 if dense_min == 0 else 4)
    rng = np.random.default_rng(0)
    cards = [3, 7, 2, 11, 5]
    codes = np.stack([rng.integers(0, c, 3000) for c in cards])
    joint = _joint(codes)
    for q in [(0, 1, ()), (4, 2, (3, 0)), (1, 3, (4, 2, 0)), (2, 0, (1,))]:
        cols = tuple(sorted((q[0], q[1], *q[2])))
        frame = marginal_frame(joint, cols, cards)
        assert frame.counts.sum() == 3000
        got = table_from_frame(frame, cards, q)
        ref = contingency_table(codes, cards, *q)
        assert np.array_equal(got.counts, ref.counts)
        assert got.n_configs == ref.n_configs


def test_empty_frame_gives_empty_table() -> None:
    frame = GroupedFrame((0, 1), {0: np.zeros(0, np.int64), 1: np.zeros(0, np.int64)},
                         np.zeros(0, np.int64))
    t = table_from_frame(frame, [2, 3], (0, 1, ()))
    ref = contingency_table(np.zeros((2, 0), np.int64), [2, 3], 0, 1)
    assert t.counts.shape == ref.counts.shape == (0, 2, 3)


def test_chunks_and_grouping_ids() -> None:
    sets = [(0, 1), (0, 2), (1, 2, 3), (4, 5)]
    assert chunk_sets(sets, 2, 62) == [[(0, 1), (0, 2)], [(1, 2, 3), (4, 5)]]
    assert chunk_sets(sets, 10, 3) == [[(0, 1), (0, 2)], [(1, 2, 3)], [(4, 5)]]
    assert union_order([(1, 2), (0, 2)]) == [1, 2, 0]
    assert grouping_id((1, 2), [1, 2, 0]) == 1
    assert grouping_id((0,), [1, 2, 0]) == 0b110
