"""Grouped counts -> tables (pure NumPy; no engine needed): both marginalisation branches,
and the planning helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dpcg.engines import grouped
from dpcg.engines.grouped import (
    GroupedFrame,
    chunk_sets,
    grouping_id,
    marginal_frame,
    table_from_frame,
    union_order,
)
from dpcg.stats.contingency import contingency_table


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


def _assert_same_layout(got: object, ref: object) -> None:
    """Same class, and for the sparse layout the same entries, not only the same counts."""
    from dpcg.stats.contingency import SparseStrataTable

    assert type(got) is type(ref)
    if isinstance(ref, SparseStrataTable):
        assert isinstance(got, SparseStrataTable)
        assert got.k == ref.k
        for name in ("stratum", "cell", "weight"):
            assert np.array_equal(getattr(got, name), getattr(ref, name)), name


@pytest.mark.parametrize("force", [False, True])
def test_frames_keep_the_layout_of_the_in_memory_builder(
    monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    """A mostly empty table comes out of a frame as its non-zero cells, with the entries
    the in-memory builder gives; forcing the sparse layout everywhere, every query does."""
    from dpcg.stats import contingency

    if force:
        monkeypatch.setattr(contingency, "DENSE_CELLS_MIN", 0)
        monkeypatch.setattr(contingency, "DENSE_CELLS_PER_ROW", 0)
        monkeypatch.setattr(contingency, "SPARSE_CELLS_PER_ROW", 0)
    rng = np.random.default_rng(3)
    cards = [40, 60, 3, 50, 45]
    n = 2000
    codes = np.stack([rng.integers(0, c, n) for c in cards])
    codes[2] = codes[0] % 3  # a dependence, so not every cell is a singleton
    joint = _joint(codes)
    kinds = set()
    for q in [(0, 1, ()), (0, 1, (3, 4)), (2, 4, (0,)), (3, 0, (1, 4, 2))]:
        cols = tuple(sorted((q[0], q[1], *q[2])))
        got = table_from_frame(marginal_frame(joint, cols, cards), cards, q)
        ref = contingency_table(codes, cards, *q)
        _assert_same_layout(got, ref)
        assert np.array_equal(got.counts, ref.counts)
        assert got.n_configs == ref.n_configs
        kinds.add(type(ref).__name__)
    assert kinds == ({"SparseStrataTable"} if force else
                     {"StrataTable", "SparseStrataTable"})
