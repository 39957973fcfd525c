"""Exact (non-private) conditional-independence tests.

Each test is built from a Dataset-like object and a significance level ``alpha`` and
answers ``test(x, y, S) -> CIResult``; ``independent`` is ``pvalue > alpha``.

Discrete tests read ``data.codes`` (a ``(p, n)`` unsigned-int array) and
``data.cardinalities`` (declared, public); :class:`FisherZTest` reads ``data.values``
(a ``(p, n)`` float64 array). A :class:`dpcg.data.Dataset` provides both.

| class | statistic | null distribution |
|---|---|---|
| :class:`G2Test` | G^2 (= 2 n CMI) | chi^2 with causal-learn's df rule |
| :class:`Chi2Test` | Pearson chi^2 | same |
| :class:`KendallTest` | conditional Kendall z (see its ``variant``) | N(0, 1), two-sided |
| :class:`SpearmanTest` | stratified Spearman z (midrank scores) | N(0, 1), two-sided |
| :class:`FisherZTest` | Fisher-z of the partial correlation | N(0, 1), two-sided |

:class:`FastG2Test` and :class:`FastChi2Test` are :class:`G2Test` and :class:`Chi2Test`
with the tables of the ``numpy`` table engine (bitsets; the same results).

Results are cached per test object (one object per run) keyed on the unordered pair and
the sorted conditioning set; nothing is cached across objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from dpcg.citests.base import CIResult, CITest, validate_query
from dpcg.citests.registry import NoOptions, TestContext, TestSpec, option, register_test
from dpcg.engines.base import NumpyEngine
from dpcg.errors import CITestError
from dpcg.stats.contingency import (
    MAX_ROWS,
    PairTables,
    StrataTable,
    contingency_table,
    stack_observed,
)
from dpcg.stats.discrete import (
    SPARSE_RULES,
    ChiSquareResult,
    chi2_test,
    g2_test,
    g2_test_rule,
    g2_tests_stacked,
)
from dpcg.stats.fisherz import fisher_z
from dpcg.stats.kendall import (
    conditional_kendall_z,
    conditional_kendall_z_unfloored,
    tie_corrected_kendall_z,
)
from dpcg.stats.spearman import conditional_spearman_z

__all__ = [
    "Chi2Test",
    "FastChi2Test",
    "FastG2Test",
    "FisherZTest",
    "G2Test",
    "KendallTest",
    "SpearmanTest",
]


class DiscreteData(Protocol):
    @property
    def codes(self) -> NDArray[Any]: ...

    @property
    def cardinalities(self) -> tuple[int | None, ...]: ...


class ContinuousData(Protocol):
    @property
    def values(self) -> NDArray[Any]: ...


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise CITestError(f"alpha must be a number in (0, 1), got {alpha!r}")
    a = float(alpha)
    if not (math.isfinite(a) and 0.0 < a < 1.0):
        raise CITestError(f"alpha must be in (0, 1), got {alpha!r}")
    return a


def _two_sided(z: float) -> float:
    """``2 (1 - Phi(|z|)) = erfc(|z| / sqrt 2)`` (accurate in the tail, no scipy overhead)."""
    return math.erfc(abs(z) / math.sqrt(2.0))


Key = tuple[int, int, tuple[int, ...]]

#: How many results a non-private test keeps for repeated queries (oldest dropped).
RESULT_CACHE_SIZE = 1 << 15


class _CachedTest:
    """Query validation and a per-object result cache."""

    p: int
    alpha: float
    #: Non-private and side-effect free: the PC engine may run it on several forked
    #: processes (``pc_stable(..., workers=2)``, results identical to the serial order).
    parallel_safe = True

    def __init__(self) -> None:
        # bounded (oldest dropped first): PC-stable asks each (x, y, S) at most once, so
        # an unbounded cache grew with every test of a run and served none of them
        # (docs/memory.md); a repeated query is still answered from it
        self._cache: dict[Key, CIResult] = {}

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        raise NotImplementedError

    def test(self, x: int, y: int, S: tuple[int, ...] = ()) -> CIResult:
        """Test ``x _||_ y | S``; raises :class:`CITestError` on a malformed query."""
        xi, yi, Si = validate_query(x, y, S, self.p)
        a, b = (xi, yi) if xi < yi else (yi, xi)
        key = (a, b, tuple(sorted(Si)))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compute(a, b, key[2])
            cache = self._cache
            if len(cache) >= RESULT_CACHE_SIZE:
                del cache[next(iter(cache))]
            cache[key] = hit
        return hit

    def __call__(self, x: int, y: int, S: tuple[int, ...] = ()) -> CIResult:
        return self.test(x, y, S)


class _DiscreteTest(_CachedTest):
    def __init__(self, data: DiscreteData, alpha: float = 0.05) -> None:
        super().__init__()
        self.alpha = _check_alpha(alpha)
        try:
            codes = np.asarray(data.codes)
            cards = tuple(data.cardinalities)
        except AttributeError as exc:
            raise CITestError(
                f"{type(self).__name__} needs discrete data with .codes and .cardinalities, "
                f"got {type(data).__name__}"
            ) from exc
        if codes.ndim != 2 or codes.dtype.kind not in "ui":
            raise CITestError(
                f"codes must be a (p, n) integer array, got shape {codes.shape} "
                f"dtype {codes.dtype}"
            )
        p, n = codes.shape
        if len(cards) != p:
            raise CITestError(f"got {len(cards)} cardinalities for {p} columns")
        if n < 1 or n > MAX_ROWS:
            raise CITestError(f"need between 1 and {MAX_ROWS} rows, got {n}")
        for j, c in enumerate(cards):
            if isinstance(c, bool) or not isinstance(c, int | np.integer) or c < 1:
                raise CITestError(f"column {j} is not discrete (cardinality {c!r})")
        if n:
            lo = codes.min(axis=1)
            hi = codes.max(axis=1)
            for j, c in enumerate(cards):
                assert c is not None
                if int(lo[j]) < 0 or int(hi[j]) >= c:
                    raise CITestError(
                        f"column {j} has codes outside its declared range [0, {c})"
                    )
        self.codes = codes
        self.cardinalities: tuple[int, ...] = tuple(int(c) for c in cards if c is not None)
        self.p = p
        self.n = n

    def table(self, x: int, y: int, S: tuple[int, ...] = ()) -> StrataTable:
        """The stratified table for a (validated) query."""
        xi, yi, Si = validate_query(x, y, S, self.p)
        return contingency_table(self.codes, self.cardinalities, xi, yi, Si, check=False)


class _ChiSquareFamily(_DiscreteTest):
    def _stat(self, t: StrataTable) -> ChiSquareResult:
        raise NotImplementedError

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        r = self._stat(self.table(x, y, S))
        return CIResult(r.pvalue > self.alpha, r.statistic, r.pvalue)


class G2Test(_ChiSquareFamily):
    """G^2 likelihood-ratio test (``statistic`` = G^2; df per causal-learn).

    ``sparse_rule`` selects how sparse tables are treated
    (:data:`dpcg.stats.discrete.SPARSE_RULES`: ``causal-learn``, the default,
    ``pcalg``, ``pcalg-adaptdf``, ``structural``, ``adjusted-min5``)."""

    def __init__(self, data: DiscreteData, alpha: float = 0.05, *,
                 sparse_rule: str = "causal-learn") -> None:
        super().__init__(data, alpha)
        if sparse_rule not in SPARSE_RULES:
            raise CITestError(f"sparse_rule: expected one of {', '.join(SPARSE_RULES)}, "
                              f"got {sparse_rule!r}")
        self.sparse_rule = sparse_rule

    def _stat(self, t: StrataTable) -> ChiSquareResult:
        if self.sparse_rule == "causal-learn":
            return g2_test(t)
        return g2_test_rule(t, self.sparse_rule)


class Chi2Test(_ChiSquareFamily):
    """Pearson chi^2 test (df per causal-learn)."""

    def _stat(self, t: StrataTable) -> ChiSquareResult:
        return chi2_test(t)


class FastG2Test(G2Test):
    """:class:`G2Test` with the tables of the ``numpy`` table engine
    (:class:`dpcg.engines.base.NumpyEngine`: bitset tables where they are cheaper,
    ``bincount`` otherwise); the same tables, hence bit-for-bit the same results."""

    _engine: NumpyEngine | None = None

    def _tables(self) -> NumpyEngine:
        eng = self._engine
        if eng is None:
            eng = NumpyEngine(self.codes, self.cardinalities)
            self._engine = eng
        return eng

    def table(self, x: int, y: int, S: tuple[int, ...] = ()) -> StrataTable:
        xi, yi, Si = validate_query(x, y, S, self.p)
        return self._tables().table(xi, yi, Si)

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        # called by test() with a validated, normalised query: no second validation
        r = self._stat(self._tables().table(x, y, S))
        return CIResult(r.pvalue > self.alpha, r.statistic, r.pvalue)

    _pair: PairTables | None = None

    def test_block(self, x: int, y: int, sets: Sequence[tuple[int, ...]]
                   ) -> Iterator[CIResult]:
        """The results of ``(x, y | S)`` for the sets ``sets`` of one pair, in order and
        lazily (the batched entry point of :func:`dpcg.pc.engine.pc_stable`, issue 59):
        ``x < y`` and sorted sets disjoint from them (the engine's candidates; not
        validated again). Sets with ``|S| <= 1`` get the bitset tables of
        :meth:`test`; longer ones share their encoding and counting
        (:class:`dpcg.stats.contingency.PairTables`: one ``bincount`` serves a run of
        consecutive sets with a common prefix), and the plain G-test of up to
        :data:`CHUNK_TESTS` of them runs stacked
        (:func:`dpcg.stats.discrete.g2_tests_stacked`). The tables are equal to
        :meth:`test`'s and the stacked test is :func:`~dpcg.stats.discrete.g2_test`'s
        arithmetic per table, so every result is bit for bit the one :meth:`test` gives.
        Not cached."""
        pt = self._pair
        if pt is None or pt.x != x or pt.y != y:
            pt = PairTables(self.codes, self.cardinalities, x, y)
            self._pair = pt
        engine = self._tables()
        stat = self._stat
        alpha = self.alpha
        if all(len(S) <= 1 for S in sets):
            for S in sets:
                r = stat(engine.table(x, y, S))
                yield CIResult(r.pvalue > alpha, r.statistic, r.pvalue)
            return
        if type(self)._stat is not G2Test._stat or self.sparse_rule != "causal-learn":
            for S, t in zip(sets, pt.iter_tables(sets), strict=True):
                r = stat(engine.table(x, y, S) if t is None else t)
                yield CIResult(r.pvalue > alpha, r.statistic, r.pvalue)
            return
        # the plain G-test: chunks of tables stacked and tested together
        # (g2_tests_stacked: the same floating-point steps per table as g2_test); the
        # chunks grow (2, 4, ..., CHUNK_TESTS) so that a pair whose first separating set
        # comes early has few tests computed beyond it
        counts = pt.iter_counts(sets)
        i, size, total = 0, 2, len(sets)
        while i < total:
            chunk: list[tuple[NDArray[np.int64], int] | None] = []
            cells = 0  # a chunk's arrays stay in cache: at most about CHUNK_CELLS cells
            while len(chunk) < min(size, total - i) and cells < CHUNK_CELLS:
                d = next(counts)
                chunk.append(d)
                cells += 0 if d is None else int(d[0].size)
            dense = [d for d in chunk if d is not None]
            stacked = iter(g2_tests_stacked(stack_observed(dense, pt.cx, pt.cy))
                           if dense else ())
            for S, d in zip(sets[i:i + len(chunk)], chunk, strict=True):
                r = stat(engine.table(x, y, S)) if d is None else next(stacked)
                yield CIResult(r.pvalue > alpha, r.statistic, r.pvalue)
            i += len(chunk)
            size = min(2 * size, CHUNK_TESTS)


#: Most tests :meth:`FastG2Test.test_block` stacks into one vectorised G-test, and the
#: cells after which a chunk is closed (deep levels' tables are large: 32 tables of
#: level 6 on hub-60 spanned 5.6 MB per array, past the core's cache).
CHUNK_TESTS = 32
CHUNK_CELLS = 1 << 16


class FastChi2Test(FastG2Test):
    """:class:`Chi2Test` with the tables of the ``numpy`` table engine (same results)."""

    def _stat(self, t: StrataTable) -> ChiSquareResult:
        return chi2_test(t)


KendallVariant = Literal["public", "unfloored", "tie-corrected"]


class KendallTest(_DiscreteTest):
    """Conditional Kendall z against N(0, 1) (two-sided).

    ``variant``: ``"public"`` (default; ``z = U / sqrt(max(W, w0))`` with the public
    floor ``w0``, default ``9n/4``: the statistic the private tests release),
    ``"unfloored"`` (Priv-PC Definition 6, ``U / sqrt(W)``) or ``"tie-corrected"``
    (exact null variance under ties; best calibrated on categorical data).
    """

    def __init__(
        self,
        data: DiscreteData,
        alpha: float = 0.05,
        *,
        variant: KendallVariant = "public",
        w0: float | None = None,
    ) -> None:
        super().__init__(data, alpha)
        if variant not in ("public", "unfloored", "tie-corrected"):
            raise CITestError(
                f"variant must be 'public', 'unfloored' or 'tie-corrected', got {variant!r}"
            )
        if w0 is not None and (
            isinstance(w0, bool)
            or not isinstance(w0, int | float)
            or not math.isfinite(w0)
            or w0 <= 0
        ):
            raise CITestError(f"w0 must be a finite number > 0, got {w0!r}")
        if w0 is not None and variant != "public":
            raise CITestError("w0 only applies to variant='public'")
        self.variant: KendallVariant = variant
        self.w0 = w0

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        t = self.table(x, y, S)
        if self.variant == "public":
            z = conditional_kendall_z(t, self.w0)
        elif self.variant == "unfloored":
            z = conditional_kendall_z_unfloored(t)
        else:
            z = tie_corrected_kendall_z(t)
        p = _two_sided(z)
        return CIResult(p > self.alpha, z, p)


class SpearmanTest(_DiscreteTest):
    """Stratified Spearman (midrank-score correlation) z against N(0, 1), two-sided."""

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        z = conditional_spearman_z(self.table(x, y, S))
        p = _two_sided(z)
        return CIResult(p > self.alpha, z, p)


class FisherZTest(_CachedTest):
    """Fisher-z test of zero partial correlation on continuous data (``data.values``)."""

    def __init__(self, data: ContinuousData, alpha: float = 0.05) -> None:
        super().__init__()
        self.alpha = _check_alpha(alpha)
        try:
            values = np.asarray(data.values)
        except AttributeError as exc:
            raise CITestError(
                f"FisherZTest needs continuous data with .values, got {type(data).__name__}"
            ) from exc
        if values.ndim != 2 or values.dtype.kind != "f":
            raise CITestError(
                f"values must be a (p, n) float array, got shape {values.shape} "
                f"dtype {values.dtype}"
            )
        if not np.all(np.isfinite(values)):
            bad = int(np.nonzero(~np.all(np.isfinite(values), axis=1))[0][0])
            raise CITestError(f"column {bad} contains NaN or infinite values")
        self.values = values.astype(np.float64, copy=False)
        self.p, self.n = values.shape

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        if self.n < len(S) + 4:
            raise CITestError(f"n={self.n} rows is too few for |S|={len(S)}")
        r = fisher_z(self.values, x, y, S)
        return CIResult(r.pvalue > self.alpha, r.z, r.pvalue)


# -------------------------------------------------------------- registry hook


@dataclass(frozen=True)
class G2Options:
    """The options of ``g2`` (``dpcg discover --test g2 --sparse-rule RULE``)."""

    sparse_rule: str = option(
        "causal-learn", type=str, metavar="RULE",
        help="how sparse tables are treated (docs/stats.md, 'Sparse tables'): "
             + ", ".join(SPARSE_RULES) + " (default causal-learn: the df adjusted for "
             "empty rows and columns, no minimum of rows; pcalg: declared df, "
             "independence assumed below 10 rows per df)")

    def __post_init__(self) -> None:
        if self.sparse_rule not in SPARSE_RULES:
            raise CITestError(f"sparse_rule: expected one of {', '.join(SPARSE_RULES)}, "
                              f"got {self.sparse_rule!r}")


def _build_g2(ctx: TestContext[G2Options]) -> CITest:
    return FastG2Test(ctx.dataset, alpha=ctx.alpha, sparse_rule=ctx.options.sparse_rule)


def _build_chi2(ctx: TestContext[NoOptions]) -> CITest:
    return FastChi2Test(ctx.dataset, alpha=ctx.alpha)


def _kendall(variant: KendallVariant) -> Callable[[TestContext[NoOptions]], CITest]:
    def build(ctx: TestContext[NoOptions]) -> CITest:
        return KendallTest(ctx.dataset, alpha=ctx.alpha, variant=variant)

    return build


def _spearman(ctx: TestContext[NoOptions]) -> CITest:
    return SpearmanTest(ctx.dataset, alpha=ctx.alpha)


def _fisherz(ctx: TestContext[NoOptions]) -> CITest:
    return FisherZTest(ctx.dataset, alpha=ctx.alpha)


register_test(TestSpec(name="g2", options=G2Options, build=_build_g2, data="discrete",
                       description="G^2 likelihood-ratio test on discrete data "
                                   "(non-private)"))
for _spec in (
    TestSpec(name="chi2", options=NoOptions, build=_build_chi2, data="discrete",
             description="Pearson chi^2 test on discrete data (non-private)"),
    TestSpec(name="kendall", options=NoOptions, build=_kendall("public"), data="discrete",
             description="conditional Kendall z with the public normaliser sqrt(9n/4) "
                         "(non-private)"),
    TestSpec(name="kendall-tc", options=NoOptions, build=_kendall("tie-corrected"),
             data="discrete",
             description="conditional Kendall z with the exact null variance under ties "
                         "(non-private)"),
    TestSpec(name="spearman", options=NoOptions, build=_spearman, data="discrete",
             description="stratified Spearman rank-correlation z (non-private)"),
    TestSpec(name="fisherz", options=NoOptions, build=_fisherz, data="continuous",
             description="Fisher-z partial-correlation test on continuous data "
                         "(non-private)"),
):
    register_test(_spec)
