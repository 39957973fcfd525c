"""PC-stable engine, orientation and background knowledge (private variants plug in here)."""

from dpcg.pc.background import BackgroundKnowledge
from dpcg.pc.engine import (
    BatchEdgeTester,
    EdgeTester,
    LevelCandidates,
    LevelStrategy,
    PCResult,
    TestOutcome,
    TestRecord,
    candidate_sets,
    pc_stable,
)
from dpcg.pc.oracle import DSeparationOracle

__all__ = [
    "BackgroundKnowledge",
    "BatchEdgeTester",
    "DSeparationOracle",
    "EdgeTester",
    "LevelCandidates",
    "LevelStrategy",
    "PCResult",
    "TestOutcome",
    "TestRecord",
    "candidate_sets",
    "pc_stable",
]
