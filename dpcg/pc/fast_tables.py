"""Deprecated location of the bitset tables and the fast chi-square tests (kept so that
``dpcg.pc.registry`` and ``dpcg.bench.pc`` keep importing them until they point to the
new homes): :mod:`dpcg.stats.bitset` (``BitsetTables``, ``pack_column``, the cost model),
:mod:`dpcg.stats.engine` (the ``numpy`` table engine that uses them) and
:mod:`dpcg.citests.nonprivate` (``FastG2Test``, ``FastChi2Test``). Import from there;
this module re-exports only and will be removed.
"""

from __future__ import annotations

from dpcg.citests.nonprivate import FastChi2Test, FastG2Test
from dpcg.stats.bitset import MAX_BITSET_CELLS, BitsetTables, pack_column

__all__ = ["MAX_BITSET_CELLS", "BitsetTables", "FastChi2Test", "FastG2Test", "pack_column"]
