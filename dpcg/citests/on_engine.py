"""Non-private CI tests answered by a table engine (``--algorithm pc --engine ...``).

:func:`engine_tester` wraps a :class:`~dpcg.engines.base.TableEngine` as the PC engine's
batch tester: each PC round's queries are counted with one engine call, and every answer
equals the same test on the in-memory ``numpy`` engine (the engines' tables are equal bit
for bit, ``tests/engines/test_equality.py``). Nothing here is private: private runs reach
engines through their algorithms' statistic sources (:mod:`dpcg.citests.private`).
"""

from __future__ import annotations

from typing import Any

from dpcg.engines.base import TableEngine

__all__ = ["ENGINE_TESTS", "engine_tester"]

#: The non-private tests that run on a table engine (``--algorithm pc --engine ...``):
#: the chi-square family on the engine's tables, and the registered scores with their
#: exact threshold rule (:class:`dpcg.citests.private.ThresholdCITest`). The others
#: (Kendall, Spearman, Fisher-z) read the rows themselves: engine numpy.
ENGINE_TESTS = ("g2", "chi2", "kendall-split", "kendall-z", "kendall-p", "cmi", "g2-distance")


class _EngineTableTest:
    """A non-private chi-square-family test (``g2``, ``chi2``) on a table engine's tables:
    each PC round's queries are counted with ONE engine call (a few scans), and every
    answer is the statistic of :class:`dpcg.citests.nonprivate.G2Test` on the same
    (normalised) query's table, so the graph equals the numpy engine's bit for bit."""

    def __init__(self, engine: TableEngine, stat: Any, alpha: float) -> None:
        self.engine = engine
        self.stat = stat
        self.alpha = alpha
        self._cache: dict[tuple[int, int, tuple[int, ...]], Any] = {}

    def test_many(self, queries: Any) -> list[Any]:
        from dpcg.citests.base import CIResult

        keys = []
        for x, y, S in queries:
            a, b = (x, y) if x < y else (y, x)
            keys.append((int(a), int(b), tuple(sorted(int(s) for s in S))))
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        for key, table in zip(todo, self.engine.tables(todo), strict=True):
            r = self.stat(table)
            self._cache[key] = CIResult(r.pvalue > self.alpha, r.statistic, r.pvalue)
        return [self._cache[k] for k in keys]


class _EngineScoreTest:
    """A registered score's exact threshold rule (``cmi``, ``kendall-*``) on a table
    engine: one engine call per PC round (:meth:`StatisticSource.prefetch`)."""

    def __init__(self, source: Any) -> None:
        from dpcg.citests.private import ThresholdCITest

        self.source = source
        self.tester = ThresholdCITest(source)

    def test_many(self, queries: Any) -> list[Any]:
        self.source.prefetch([(int(x), int(y), tuple(int(s) for s in S))
                              for x, y, S in queries])
        return [self.tester.test(x, y, S) for x, y, S in queries]


def engine_tester(engine: TableEngine, test: str, alpha: float, options: object = None) -> Any:
    """The NON-private tester of ``--algorithm pc --test TEST`` on a table engine (a
    :class:`~dpcg.pc.engine.BatchEdgeTester`): the same answers as the test on the numpy
    engine, counted where the data live. ``test`` must be one of :data:`ENGINE_TESTS`."""
    from dpcg.citests.private import SCORES, source_for_dataset
    from dpcg.errors import CITestError
    from dpcg.stats.discrete import chi2_test, g2_test, g2_test_rule

    if test == "g2":
        rule = str(getattr(options, "sparse_rule", "causal-learn"))
        if rule == "causal-learn":
            return _EngineTableTest(engine, g2_test, float(alpha))
        return _EngineTableTest(engine, lambda t: g2_test_rule(t, rule), float(alpha))
    if test == "chi2":
        return _EngineTableTest(engine, chi2_test, float(alpha))
    if test in SCORES:
        threshold = getattr(options, "threshold", None)
        return _EngineScoreTest(source_for_dataset(engine, test, alpha=float(alpha),
                                                   threshold=threshold))
    raise CITestError(f"test {test!r} reads the rows in memory (engine numpy); on the "
                      f"{engine.name} engine choose one of {list(ENGINE_TESTS)}")
