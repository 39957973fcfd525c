"""Private CI statistics for the private PC family (Laplace-PC, SVT-PC, Priv-PC, EM-PC,
CURATE).

A :class:`StatisticSource` computes one exact **dependence score** ``s(x, y | S)``
(larger = more dependent) on a discrete dataset, together with its **public**
sensitivity and decision threshold ``T``: a test says *independent* when the (noisy)
score is at most ``T``. Four scores are offered:

* ``kendall-z``: ``|z|`` of the conditional Kendall z with the public
  normaliser ``sqrt(9n/4)`` (:func:`dpcg.stats.kendall.conditional_kendall_z`); its
  sensitivity is the registered one (``|.|`` is 1-Lipschitz). ``T = z_{1-alpha/2}``.
  PRIVACY.md section 7: noise on the ``z`` scale keeps strong dependences far above
  ``T``.
* ``kendall-split`` (default): the largest ``|z|`` over the binary splits of x and y
  (:func:`dpcg.stats.kendall.split_kendall_z`): sensitivity ``6/sqrt(n)`` for every
  pair (the binary bound), and it sees non-monotone dependence between categorical
  variables. ``T = z_{1-alpha/2}``; under conditional independence every split's
  ``z`` has variance at most ``9/16`` (proof note), so each split alone exceeds ``T``
  with probability about ``P(|N(0,1)| > 2.61) = 0.009`` at most.
* ``kendall-p``: the references' variant, noise on the p-value. The score is
  ``1 - p = erf(|z| / sqrt 2)`` with ``p = 2 (1 - Phi(|z|))``, which is
  ``sqrt(2/pi)``-Lipschitz in ``|z|``, so its sensitivity is ``sqrt(2/pi) Delta_z``;
  ``T = 1 - alpha``. Kept for comparison only.
* ``cmi``: ``n CMI = G^2 / 2`` with the registered bound ``2 g(n-1)`` (replace-one);
  ``T = chi2_{1-alpha}(df) / 2`` with ``df = (cx-1)(cy-1) prod_{s in S} c_s`` from the
  declared cardinalities (public).

Releases go through :meth:`accounting.session.Session.release` with the mechanism the
algorithm chose (:class:`ReleasePlan`): ``Laplace(Delta, eps)`` under basic
composition or ``Gaussian(Delta, sigma)`` under zCDP. :class:`PrivateCITest` is the
per-test release (Laplace-PC); :class:`ThresholdCITest` is the same decision rule
without noise (the non-private PC "with the same test").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import erf
from scipy.stats import chi2 as _chi2

from accounting.mechanisms import Gaussian, Laplace
from accounting.relations import Relation
from accounting.session import Session
from dpcg.citests.base import CIResult, CITest, validate_query
from dpcg.citests.registry import TestContext, TestSpec, option, register_test
from dpcg.data.dataset import Dataset
from dpcg.errors import CITestError
from dpcg.stats import registry
from dpcg.stats.contingency import StrataTable, contingency_table
from dpcg.stats.discrete import n_cmi
from dpcg.stats.kendall import conditional_kendall_z, public_floor, split_kendall_z

ScoreName = Literal["kendall-split", "kendall-z", "kendall-p", "cmi"]
SCORES: tuple[str, ...] = ("kendall-split", "kendall-z", "kendall-p", "cmi")

#: The default score of the private family (and of the non-private PC "with the same
#: test").
DEFAULT_SCORE = "kendall-split"

#: Registry names of the statistics the scores are built on: the Kendall scores use the
#: bound with declared cardinalities (claim 4 of the proof note), which never exceeds the
#: cardinality-free one.
KENDALL_SPEC = "conditional-kendall-z-categorical"
SPLIT_SPEC = "split-kendall-z"
CMI_SPEC = "n-cmi"

#: Lipschitz constant of ``|z| -> 1 - p = erf(|z|/sqrt 2)``: ``2 phi(0) = sqrt(2/pi)``.
P_LIPSCHITZ = math.sqrt(2.0 / math.pi)

DEFAULT_ALPHA = 0.05


def z_threshold(alpha: float) -> float:
    """Two-sided normal critical value ``z_{1-alpha/2}``."""
    from scipy.stats import norm

    return float(norm.isf(alpha / 2.0))


def _kendall_sensitivity(n: int, relation: Relation, c: int, split: bool = False) -> float:
    """Registered bound of the floored conditional Kendall z on ``n`` rows for a pair
    whose smaller declared cardinality is ``c`` (``c >= 2``); with ``split``, of the
    split statistic (the same for every ``c``)."""
    spec = registry.get(SPLIT_SPEC if split else KENDALL_SPEC, relation)
    public: dict[str, float] = {"n": n, "w0": public_floor(n), "cx": c, "cy": c}
    return spec.bound(**{k: v for k, v in public.items() if k in spec.public_params})


def pair_cardinality(cx: int, cy: int) -> int:
    """``c = min(cx, cy)`` of the cardinality-aware Kendall bound, floored at 2: a
    one-category variable makes the score identically 0 (sensitivity 0), and the binary
    bound is a valid (loose) bound for it, which keeps every mechanism well defined."""
    return max(min(int(cx), int(cy)), 2)


def widest_pair_cardinality(cardinalities: Sequence[int]) -> int:
    """``max over pairs x != y of min(cx, cy)`` (the second-largest declared cardinality,
    floored at 2): the ``c`` of the bound that holds for every pair."""
    cards = sorted(int(c) for c in cardinalities)
    return max(cards[-2] if len(cards) >= 2 else 2, 2)


def _cmi_sensitivity(n: int, relation: Relation) -> float:
    return registry.get(CMI_SPEC, relation).bound(n=n)


class StatisticSource:
    """Exact dependence scores of one discrete dataset, with public sensitivities and
    thresholds.

    ``codes``: ``(p, n)`` array of category codes (validated against the declared
    ``cardinalities``). Exact full-data scores are cached by ``(x, y, S)`` (the cache
    holds exact statistics, never released values; sharing it between runs on the same
    data only saves time).
    """

    def __init__(
        self,
        codes: NDArray[np.generic],
        cardinalities: Sequence[int | None],
        score: str = DEFAULT_SCORE,
        *,
        alpha: float = DEFAULT_ALPHA,
        threshold: float | None = None,
        relation: Relation | str = Relation.REPLACE_ONE,
        cache: dict[tuple[int, int, tuple[int, ...]], float] | None = None,
        check: bool = True,
    ) -> None:
        if score not in SCORES:
            raise CITestError(f"test: unknown private score {score!r}; choose from {SCORES}")
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
            raise CITestError(f"alpha: expected a number in (0, 1), got {alpha!r}")
        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise CITestError(f"codes: expected a (p, n) array with n >= 2, got {arr.shape}")
        if arr.dtype.kind not in "ui":
            raise CITestError(f"codes: expected integer category codes, got {arr.dtype}")
        cards = tuple(cardinalities)
        if len(cards) != arr.shape[0]:
            raise CITestError(
                f"cardinalities: got {len(cards)} for {arr.shape[0]} columns"
            )
        for j, c in enumerate(cards):
            if c is None or isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise CITestError(
                    f"cardinalities[{j}]: private tests need discrete columns with a declared "
                    f"number of categories, got {c!r}"
                )
        if check:
            lo = arr.min(axis=1)
            hi = arr.max(axis=1)
            for j, c in enumerate(cards):
                if int(lo[j]) < 0 or int(hi[j]) >= int(c):  # type: ignore[arg-type]
                    raise CITestError(
                        f"column {j} has a code outside its declared range [0, {c})"
                    )
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
        ):
            raise CITestError(f"threshold: expected a finite number, got {threshold!r}")
        self._codes: NDArray[np.generic] | None = np.ascontiguousarray(arr)
        self._base: NDArray[np.generic] | None = None  # subsets: the parent's codes
        self._rows: NDArray[np.int64] | None = None  # subsets: the row indices
        self._columns: dict[int, NDArray[np.generic]] = {}
        self.cardinalities: tuple[int, ...] = tuple(int(c) for c in cards)  # type: ignore[arg-type]
        self.score_name = score
        self.alpha = float(alpha)
        self.relation = Relation.parse(relation)
        self.fixed_threshold = None if threshold is None else float(threshold)
        self.cache = {} if cache is None else cache
        self.p, self.n = (int(v) for v in arr.shape)
        self._z_T = z_threshold(self.alpha)
        self._bits: Any = None  # dpcg.pc.fast_tables.BitsetTables, built on first use
        self._sens: dict[tuple[int, int], float] = {}  # (rows, c) -> sensitivity

    # ---------------------------------------------------------------- public info
    def sensitivity(self, m: int | None = None, pair: tuple[int, int] | None = None) -> float:
        """Sensitivity of the score on ``m`` rows (default ``n``) under the relation.

        With ``pair = (x, y)``: the bound for that pair's tests, which for the Kendall
        scores depends on the declared cardinalities ``c = min(cx, cy)`` (public; e.g.
        ``6/sqrt(n)`` instead of ``9/sqrt(n)`` when x or y is binary). Without: the
        largest pair bound, valid for every test of the source.
        """
        rows = self.n if m is None else int(m)
        if self.score_name == "cmi":
            return _cmi_sensitivity(rows, self.relation)
        if self.score_name == "kendall-split":
            c = 2  # every split is binary: one bound for all pairs
        elif pair is None:
            c = widest_pair_cardinality(self.cardinalities)
        else:
            c = pair_cardinality(self.cardinalities[pair[0]], self.cardinalities[pair[1]])
        key = (rows, c)
        dz = self._sens.get(key)
        if dz is None:
            dz = _kendall_sensitivity(rows, self.relation, c,
                                      split=self.score_name == "kendall-split")
            if self.score_name == "kendall-p":
                dz *= P_LIPSCHITZ
            self._sens[key] = dz
        return dz

    def scale(self, x: int, y: int) -> float:
        """``Delta / Delta(x, y) >= 1``: multiplying the pair's score (and its public
        threshold) by it gives a query whose sensitivity is the source-level ``Delta``
        (how the SVT-based algorithms use the per-pair bounds)."""
        return self.sensitivity() / self.sensitivity(pair=(x, y))

    def threshold(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The public decision threshold of the test ``(x, y | S)`` (score scale)."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold
        if self.score_name in ("kendall-split", "kendall-z"):
            return self._z_T
        if self.score_name == "kendall-p":
            return 1.0 - self.alpha
        c = self.cardinalities
        df = (c[x] - 1) * (c[y] - 1) * math.prod(c[s] for s in S)
        if df <= 0:
            return 0.0
        return float(_chi2.isf(self.alpha, df)) / 2.0

    def public_params(self) -> dict[str, Any]:
        return {
            "score": self.score_name,
            "alpha": self.alpha,
            "n": self.n,
            "relation": self.relation.value,
            "threshold": self.fixed_threshold,
        }

    # ---------------------------------------------------------------- exact scores
    @property
    def codes(self) -> NDArray[np.generic]:
        """The ``(p, n)`` codes (for a subset: gathered on first access)."""
        if self._codes is None:
            assert self._base is not None
            assert self._rows is not None
            self._codes = np.ascontiguousarray(self._base[:, self._rows])
        return self._codes

    def _column(self, j: int) -> NDArray[np.generic]:
        """Codes of column ``j`` (a subset gathers only the columns its tests touch)."""
        if self._codes is not None:
            own: NDArray[np.generic] = self._codes[j]
            return own
        col = self._columns.get(j)
        if col is None:
            assert self._base is not None
            assert self._rows is not None
            col = self._base[j][self._rows]
            self._columns[j] = col
        return col

    def _table(self, x: int, y: int, S: tuple[int, ...]) -> StrataTable:
        """The stratified table of ``(x, y | S)`` on this source's rows.

        Small tables (decided from the public cardinalities only) come from the bitset
        path of :mod:`dpcg.pc.fast_tables`, which builds the same table (same observed
        strata in the same order, same integer counts) as
        :func:`~dpcg.stats.contingency.contingency_table`; the score is therefore
        bit-for-bit the same and so is its sensitivity analysis.
        """
        bits = self._bits
        if bits is None:
            from dpcg.pc.fast_tables import BitsetTables

            bits = BitsetTables(None, self.cardinalities, column=self._column)
            self._bits = bits
        if bits.usable(x, y, S):
            table: StrataTable = bits.table(x, y, S)
            return table
        if self._codes is not None:
            return contingency_table(self._codes, self.cardinalities, x, y, S, check=False)
        cols = (x, y, *S)  # only the columns of this test, in this order
        sub = np.stack([self._column(j) for j in cols])
        return contingency_table(sub, [self.cardinalities[j] for j in cols], 0, 1,
                                 tuple(range(2, len(cols))), check=False)

    def _score_table(self, table: StrataTable) -> float:
        if self.score_name == "cmi":
            return n_cmi(table)
        if self.score_name == "kendall-split":
            return split_kendall_z(table)
        z = abs(conditional_kendall_z(table))
        if self.score_name == "kendall-p":
            return float(erf(z / math.sqrt(2.0)))
        return z

    def score(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The exact score on this source's rows (cached)."""
        key = (x, y, tuple(S))
        v = self.cache.get(key)
        if v is None:
            v = self._score_table(self._table(x, y, key[2]))
            self.cache[key] = v
        return v

    def subset(self, rows: NDArray[np.integer]) -> StatisticSource:
        """The same score on the rows ``rows`` (a subsample; public size ``len(rows)``).

        Its sensitivity is the registered one at ``m = len(rows)``; for the floored
        Kendall z (normaliser ``sqrt(9m/4)``) this is exactly ``Delta_n sqrt(n/m)``.
        Columns are gathered lazily (a Priv-PC round touches only a few of them).
        """
        idx = np.asarray(rows, dtype=np.int64)
        sub = StatisticSource.__new__(StatisticSource)
        sub._codes = None
        sub._base = self.codes
        sub._rows = idx
        sub._columns = {}
        sub.cardinalities = self.cardinalities
        sub.score_name = self.score_name
        sub.alpha = self.alpha
        sub.relation = self.relation
        sub.fixed_threshold = self.fixed_threshold
        sub.cache = {}
        sub.p = self.p
        sub.n = int(idx.shape[0])
        sub._z_T = self._z_T
        sub._bits = None
        sub._sens = self._sens  # keyed by (rows, c): public, the same bounds
        return sub


# -------------------------------------------------------------------- mechanisms


@dataclass(frozen=True)
class ReleasePlan:
    """How one test's score is released: Laplace (basic composition) or Gaussian
    (zCDP), with the per-test parameter fixed before the run from public information.

    * ``kind="laplace"``: ``Laplace(Delta, epsilon)`` (``epsilon`` per test).
    * ``kind="gaussian"``: ``Gaussian(Delta, sigma)`` with ``sigma = Delta/sqrt(2 rho)``
      (``rho`` per test).
    """

    kind: Literal["laplace", "gaussian"]
    epsilon: float | None = None
    rho: float | None = None

    def mechanism(self, sensitivity: float) -> Laplace | Gaussian:
        if self.kind == "laplace":
            assert self.epsilon is not None
            return Laplace(sensitivity, self.epsilon)
        assert self.rho is not None
        return Gaussian.for_rho(sensitivity, self.rho)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.kind, "epsilon_per_test": self.epsilon,
                "rho_per_test": self.rho}


def _purpose(x: int, y: int, S: tuple[int, ...], what: str = "test") -> str:
    return f"{what} {x} _||_ {y} | {list(S)}"


class PrivateCITest:
    """One noisy release of the score per test (Laplace-PC's tester).

    ``test(x, y, S)`` releases ``s(x, y | S) + noise`` through ``session.release`` (the
    filter admits the declared cost and the ledger records it before the data is
    touched) and says *independent* when the noisy score is at most the public ``T``.
    """

    def __init__(self, source: StatisticSource, session: Session | None,
                 plan: ReleasePlan) -> None:
        if session is None:
            raise CITestError("session: a private test needs an accounting session")
        self.source = source
        self.session = session
        self.plan = plan
        self.sensitivity = source.sensitivity()
        self.releases = 0
        self._mechs: dict[float, Laplace | Gaussian] = {}

    def mechanism(self, x: int | None = None, y: int | None = None) -> Laplace | Gaussian:
        """The release mechanism of the pair's tests: the plan's per-test cost with the
        pair's sensitivity (the source-level one without a pair)."""
        sens = self.sensitivity if x is None or y is None else self.source.sensitivity(
            pair=(x, y))
        mech = self._mechs.get(sens)
        if mech is None:
            mech = self.plan.mechanism(sens)
            self._mechs[sens] = mech
        return mech

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        """One test: :meth:`test_many` of one query (the same admission and noise as
        ``session.release``; a refusal raises ``BudgetExceededError``)."""
        return self.test_many([(x, y, S)])[0]


    def test_many(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]
                  ) -> list[CIResult]:
        """:meth:`test` for a round of queries chosen together (none depends on another's
        answer): one ``session.release_many`` call, so the ledger records the round in
        one transaction before any score is computed. Returns the answers of the
        admitted prefix (shorter when the budget ran out; the session is then halted).
        """
        src = self.source
        valid = [validate_query(x, y, S, src.p) for x, y, S in queries]
        outputs = self.session.release_many([
            (self.mechanism(x, y), partial(src.score, x, y, S), _purpose(x, y, S))
            for x, y, S in valid])
        self.releases += len(outputs)
        out = []
        for (x, y, S), released in zip(valid, outputs, strict=False):
            noisy = float(np.asarray(released))
            out.append(CIResult(noisy <= src.threshold(x, y, S), noisy, None))
        return out


class ThresholdCITest:
    """The same decision rule on the exact score (no noise, NOT private): the
    non-private PC "with the same test" that the private algorithms converge to."""

    def __init__(self, source: StatisticSource) -> None:
        self.source = source

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        x, y, S = validate_query(x, y, S, self.source.p)
        s = self.source.score(x, y, S)
        return CIResult(s <= self.source.threshold(x, y, S), s, None)


def source_for_dataset(
    dataset: Dataset,
    score: str = DEFAULT_SCORE,
    *,
    alpha: float = DEFAULT_ALPHA,
    threshold: float | None = None,
    cache: dict[tuple[int, int, tuple[int, ...]], float] | None = None,
) -> StatisticSource:
    """A :class:`StatisticSource` on a :class:`dpcg.data.Dataset` (discrete columns)."""
    try:
        codes = dataset.codes
        cards = dataset.cardinalities
    except AttributeError as exc:
        raise CITestError(
            f"dataset: expected a dpcg Dataset with codes and cardinalities ({exc})"
        ) from None
    return StatisticSource(codes, cards, score, alpha=alpha, threshold=threshold, cache=cache,
                           check=False)


# -------------------------------------------------------------- registry hook


def _check_threshold(value: float | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not math.isfinite(value)):
        raise CITestError(f"threshold: expected a finite number, got {value!r}")


@dataclass(frozen=True)
class ScoreOptions:
    """Options of the score tests (``kendall-split``, ``kendall-z``, ``kendall-p``,
    ``cmi``), exact with ``--algorithm pc`` and noisy with the private algorithms."""

    threshold: float | None = option(
        None, type=float, metavar="T",
        help="public decision threshold on the score scale (default: from --alpha)")

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)


def _build_threshold(score: str) -> Callable[[TestContext[ScoreOptions]], CITest]:
    def build(ctx: TestContext[ScoreOptions]) -> CITest:
        return ThresholdCITest(source_for_dataset(ctx.dataset, score, alpha=ctx.alpha,
                                                  threshold=ctx.options.threshold))
    return build


_DESCRIPTIONS = {
    "kendall-split": "largest |conditional Kendall z| over binary splits of x and y "
                     "(public normaliser sqrt(9n/4)) > z_{1-alpha/2}; sees non-monotone "
                     "dependence; exact with --algorithm pc, noisy with the private "
                     "algorithms",
    "kendall-z": "|conditional Kendall z| (public normaliser sqrt(9n/4)) > z_{1-alpha/2}; "
                 "exact with --algorithm pc, noisy with the private algorithms",
    "kendall-p": "p-value of the conditional Kendall z < alpha (noise on the p-value "
                 "with the private algorithms; for comparison)",
    "cmi": "n CMI = G^2/2 > chi2_{1-alpha}(df)/2; exact with --algorithm pc, noisy with "
           "the private algorithms",
}

for _name in SCORES:
    register_test(TestSpec(name=_name, description=_DESCRIPTIONS[_name],
                           options=ScoreOptions, build=_build_threshold(_name),
                           data="discrete"))
