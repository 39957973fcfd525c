"""A toy table engine: the whole of what adding an engine takes, one module.

``ToyEngine`` counts each query's stratified table with one ``np.unique`` (the observed
configurations of ``S``, in mixed-radix order, ``S[0]`` most significant) and one
``np.bincount`` over ``(stratum, x, y)``; a subset keeps the selected rows. In
``dpcg/stats/`` it would end with ``register_engine(SPEC)`` (imported by
``dpcg.engines.base`` like ``engine_specs``); here the tests call :func:`registered`.
It releases nothing (engines count; only ``accounting`` releases), so it has no proof
note: ``dpcg.testing.check_engine`` proves its tables are numpy's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from dpcg.engines.base import EngineSpec, Query, Rows, register_engine, unregister_engine
from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import StrataTable


class ToyEngine:
    """A ``(p, n)`` int64 code array, one vectorised count per query."""

    name = "toy"

    def __init__(self, codes: NDArray[np.integer], cardinalities: Sequence[int],
                 names: Sequence[str]) -> None:
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.dtype.kind not in "ui":
            raise StatisticInputError(
                f"codes: expected a (p, n) integer array, got shape {arr.shape} "
                f"dtype {arr.dtype}")
        cards = tuple(int(c) for c in cardinalities)
        labels = tuple(str(v) for v in names)
        if len(cards) != arr.shape[0] or len(labels) != arr.shape[0]:
            raise StatisticInputError(
                f"cardinalities/names: expected {arr.shape[0]} of each, got {len(cards)} "
                f"and {len(labels)}")
        self._codes = np.ascontiguousarray(arr, dtype=np.int64)
        self._cards = cards
        self._names = labels

    @property
    def n(self) -> int:
        return int(self._codes.shape[1])

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return self._cards

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def table(self, x: int, y: int, S: tuple[int, ...]) -> StrataTable:
        codes, cards = self._codes, self._cards
        cx, cy = cards[x], cards[y]
        n_configs = int(np.prod([cards[j] for j in S], dtype=np.int64)) if S else 1
        index = np.zeros(codes.shape[1], dtype=np.int64)
        for j in S:  # S[0] most significant, as contingency_table
            index *= cards[j]
            index += codes[j]
        observed, inverse = np.unique(index, return_inverse=True)
        key = (inverse.reshape(-1) * cx + codes[x]) * cy + codes[y]
        k = int(observed.size)
        counts = np.bincount(key, minlength=k * cx * cy).astype(np.int64)
        return StrataTable(counts.reshape(k, cx, cy), cx, cy, n_configs)

    def tables(self, queries: Sequence[Query]) -> list[StrataTable]:
        return [self.table(x, y, tuple(S)) for x, y, S in queries]

    def subset(self, rows: Rows) -> ToyEngine:
        return ToyEngine(self._codes[:, np.asarray(rows, dtype=np.int64)], self._cards,
                         self._names)


SPEC = EngineSpec(name="toy", from_codes=ToyEngine,
                  description="toy: one np.unique and one bincount per query (tests only)")


@contextmanager
def registered() -> Iterator[EngineSpec]:
    """The toy in the engine registry for the duration of a test."""
    register_engine(SPEC)
    try:
        yield SPEC
    finally:
        unregister_engine(SPEC.name)
