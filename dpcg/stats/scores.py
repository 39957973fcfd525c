"""Dependence scores of the discrete private PC family, as registered objects.

A :class:`Score` is one function of a :class:`~dpcg.stats.contingency.StrataTable`
(larger = more dependent) together with everything public a private test needs to
release it: its sensitivity (the bound registered in :mod:`dpcg.stats.registry`,
evaluated per pair through the declared cardinalities) and its decision threshold
``T`` (a test says *independent* when the, possibly noisy, score is at most ``T``).
:class:`dpcg.citests.private.StatisticSource` combines a score with a table engine
(:mod:`dpcg.engines.base`).

* ``kendall-split``: the largest ``|z|`` over binary splits; bound ``split-kendall-z``
  (one bound for every pair: every split is binary); ``T = z_{1-alpha/2}``.
* ``kendall-z``: ``|conditional Kendall z|``; bound ``conditional-kendall-z-categorical``
  at ``c = min(cx, cy)``; ``T = z_{1-alpha/2}``.
* ``kendall-p``: ``1 - p = erf(|z| / sqrt 2)``; ``sqrt(2/pi)`` times the ``kendall-z``
  bound; ``T = 1 - alpha``.
* ``cmi``: ``n CMI = G^2 / 2``; bound ``n-cmi``; ``T = chi2_{1-alpha}(df) / 2``.
* ``g2-distance``: the signed number of replaced rows to the G-test's decision at level
  ``alpha``; bound ``g2-decision-distance`` (1, replace-one only); ``T = 1/2``. Its
  no-noise decisions are G^2's.

Adding a score: one :class:`Score` subclass (``value``, ``pair_key``, ``bound``,
``threshold``), its :func:`register_score` call, the registration of its statistic's
bound in :mod:`dpcg.stats.registry` and the proof note that bound cites.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from scipy.special import erf
from scipy.stats import chi2 as _chi2
from scipy.stats import norm

from accounting.relations import Relation
from dpcg.errors import StatisticInputError
from dpcg.stats import registry
from dpcg.stats.contingency import StrataTable
from dpcg.stats.discrete import n_cmi
from dpcg.stats.g2_distance import g2_distance
from dpcg.stats.kendall import conditional_kendall_z, public_floor, split_kendall_z

__all__ = [
    "CMI_SPEC",
    "G2_DISTANCE_SPEC",
    "KENDALL_SPEC",
    "P_LIPSCHITZ",
    "SPLIT_SPEC",
    "CMIScore",
    "G2DistanceScore",
    "KendallPScore",
    "KendallZScore",
    "Score",
    "SplitKendallScore",
    "get_score",
    "pair_cardinality",
    "register_score",
    "score_names",
    "widest_pair_cardinality",
    "z_threshold",
]

#: Registry names of the statistics the scores are built on: the Kendall scores use the
#: bound with declared cardinalities (claim 4 of the proof note), which never exceeds the
#: cardinality-free one.
KENDALL_SPEC = "conditional-kendall-z-categorical"
SPLIT_SPEC = "split-kendall-z"
#: The split score's bound for a test given the empty set (one stratum; replace-one).
SPLIT_MARGINAL_SPEC = "split-kendall-z-marginal"
CMI_SPEC = "n-cmi"
G2_DISTANCE_SPEC = "g2-decision-distance"

#: Lipschitz constant of ``|z| -> 1 - p = erf(|z|/sqrt 2)``: ``2 phi(0) = sqrt(2/pi)``.
P_LIPSCHITZ = math.sqrt(2.0 / math.pi)


@lru_cache(maxsize=64)
def z_threshold(alpha: float) -> float:
    """Two-sided normal critical value ``z_{1-alpha/2}``."""
    return float(norm.isf(alpha / 2.0))


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


def kendall_sensitivity(n: int, relation: Relation, c: int, split: bool = False) -> float:
    """Registered bound of the floored conditional Kendall z on ``n`` rows for a pair
    whose smaller declared cardinality is ``c`` (``c >= 2``); with ``split``, of the
    split statistic (the same for every ``c``)."""
    return _kendall_bound(SPLIT_SPEC if split else KENDALL_SPEC, n, relation, c)


def _kendall_bound(name: str, n: int, relation: Relation, c: int) -> float:
    """The registered bound ``name`` of a Kendall statistic at the default floor
    ``9n/4``, for declared cardinalities ``cx = cy = c``."""
    spec = registry.get(name, relation)
    public: dict[str, float] = {"n": n, "w0": public_floor(n), "cx": c, "cy": c}
    return spec.bound(**{k: v for k, v in public.items() if k in spec.public_params})


class Score(ABC):
    """One dependence score over a stratified table, with its public sensitivity and
    threshold rule. Subclasses are stateless; the registry holds one instance each."""

    #: Registry name (the ``--test`` name of the private tests).
    name: str
    #: Name of the :mod:`dpcg.stats.registry` entry whose bound the score uses.
    spec: str
    #: Repository-relative proof note of that bound.
    proof_note: str
    #: One line for ``--help`` and the docs.
    description: str

    @abstractmethod
    def value(self, table: StrataTable, alpha: float) -> float:
        """The exact score of the table (``alpha``: the test's public level, which only
        a score defined by a decision at that level uses)."""

    @abstractmethod
    def pair_key(self, cx: int, cy: int) -> int:
        """The public key of a pair's bound (its declared cardinalities enter the bound
        only through it): equal keys, equal bounds."""

    def widest_key(self, cardinalities: Sequence[int]) -> int:
        """The key of the bound that holds for every pair of the columns."""
        return widest_pair_cardinality(cardinalities)

    @abstractmethod
    def bound(self, n: int, relation: Relation, key: int) -> float:
        """The registered sensitivity on ``n`` rows under ``relation`` for pairs of key
        ``key`` (:meth:`pair_key`)."""

    def marginal_bound(self, n: int, relation: Relation, key: int) -> float | None:
        """A smaller registered bound for the tests given the EMPTY set, where every row
        is in one stratum (``None``: none; such tests use :meth:`bound`)."""
        return None

    @abstractmethod
    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        """The public decision threshold of ``(x, y | S)`` at level ``alpha``."""


@dataclass(frozen=True)
class SplitKendallScore(Score):
    """Largest ``|z|`` over the binary splits of x and y
    (:func:`dpcg.stats.kendall.split_kendall_z`); sees non-monotone dependence. Under
    conditional independence every split's ``z`` has variance at most ``9/16`` (proof
    note), so each split alone exceeds ``T = z_{1-alpha/2}`` with probability about
    ``P(|N(0,1)| > 2.61) = 0.009`` at most."""

    name: str = "kendall-split"
    spec: str = SPLIT_SPEC
    proof_note: str = "docs/privacy/statistics-split-kendall-z.md"
    description: str = (
        "largest |conditional Kendall z| over binary splits of x and y (public normaliser "
        "sqrt(9n/4)) > z_{1-alpha/2}; sees non-monotone dependence; exact with --algorithm "
        "pc, noisy with the private algorithms")

    def value(self, table: StrataTable, alpha: float) -> float:
        return split_kendall_z(table)

    def pair_key(self, cx: int, cy: int) -> int:
        return 2  # every split is binary: one bound for all pairs

    def widest_key(self, cardinalities: Sequence[int]) -> int:
        return 2

    def bound(self, n: int, relation: Relation, key: int) -> float:
        return kendall_sensitivity(n, relation, key, split=True)

    def marginal_bound(self, n: int, relation: Relation, key: int) -> float | None:
        """Replace-one: ``4.5 / sqrt(9n/4) = 3/sqrt(n)``, half of :meth:`bound` (a
        replaced row stays in the one stratum; proof note, claim 5)."""
        if relation is not Relation.REPLACE_ONE:
            return None
        return _kendall_bound(SPLIT_MARGINAL_SPEC, n, relation, key)

    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        return z_threshold(alpha)


@dataclass(frozen=True)
class KendallZScore(Score):
    """``|z|`` of the conditional Kendall z with the public normaliser ``sqrt(9n/4)``
    (:func:`dpcg.stats.kendall.conditional_kendall_z`); its sensitivity is the registered
    one (``|.|`` is 1-Lipschitz) at ``c = min(cx, cy)``. ``T = z_{1-alpha/2}``."""

    name: str = "kendall-z"
    spec: str = KENDALL_SPEC
    proof_note: str = "docs/privacy/statistics-conditional-kendall-z.md"
    description: str = (
        "|conditional Kendall z| (public normaliser sqrt(9n/4)) > z_{1-alpha/2}; exact with "
        "--algorithm pc, noisy with the private algorithms")

    def value(self, table: StrataTable, alpha: float) -> float:
        return abs(conditional_kendall_z(table))

    def pair_key(self, cx: int, cy: int) -> int:
        return pair_cardinality(cx, cy)

    def bound(self, n: int, relation: Relation, key: int) -> float:
        return kendall_sensitivity(n, relation, key)

    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        return z_threshold(alpha)


@dataclass(frozen=True)
class KendallPScore(Score):
    """The references' variant, noise on the p-value: ``1 - p = erf(|z| / sqrt 2)``,
    ``sqrt(2/pi)``-Lipschitz in ``|z|``, so its sensitivity is ``sqrt(2/pi)`` times the
    ``kendall-z`` bound; ``T = 1 - alpha``. Kept for comparison only."""

    name: str = "kendall-p"
    spec: str = KENDALL_SPEC
    proof_note: str = "docs/privacy/statistics-conditional-kendall-z.md"
    description: str = (
        "p-value of the conditional Kendall z < alpha (noise on the p-value with the "
        "private algorithms; for comparison)")

    def value(self, table: StrataTable, alpha: float) -> float:
        z = abs(conditional_kendall_z(table))
        return float(erf(z / math.sqrt(2.0)))

    def pair_key(self, cx: int, cy: int) -> int:
        return pair_cardinality(cx, cy)

    def bound(self, n: int, relation: Relation, key: int) -> float:
        dz = kendall_sensitivity(n, relation, key)
        dz *= P_LIPSCHITZ
        return dz

    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        return 1.0 - alpha


@dataclass(frozen=True)
class CMIScore(Score):
    """``n CMI = G^2 / 2`` with the registered bound ``2 g(n-1)`` (replace-one);
    ``T = chi2_{1-alpha}(df) / 2`` with ``df = (cx-1)(cy-1) prod_{s in S} c_s`` from the
    declared cardinalities (public)."""

    name: str = "cmi"
    spec: str = CMI_SPEC
    proof_note: str = "docs/privacy/statistics-cmi.md"
    description: str = (
        "n CMI = G^2/2 > chi2_{1-alpha}(df)/2; exact with --algorithm pc, noisy with the "
        "private algorithms")

    def value(self, table: StrataTable, alpha: float) -> float:
        return n_cmi(table)

    def pair_key(self, cx: int, cy: int) -> int:
        return 0  # the bound does not depend on the cardinalities

    def widest_key(self, cardinalities: Sequence[int]) -> int:
        return 0

    def bound(self, n: int, relation: Relation, key: int) -> float:
        return registry.get(CMI_SPEC, relation).bound(n=n)

    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        c = cardinalities
        df = (c[x] - 1) * (c[y] - 1) * math.prod(c[s] for s in S)
        if df <= 0:
            return 0.0
        return float(_chi2.isf(alpha, df)) / 2.0


@dataclass(frozen=True)
class G2DistanceScore(Score):
    """The signed distance to the G-test's decision
    (:func:`dpcg.stats.g2_distance.g2_distance`): ``>= 1`` when G^2 at level ``alpha``
    says dependent, ``<= 0`` when it says independent, in replaced rows; replace-one
    sensitivity 1 for every pair, ``T = 1/2``. With the noise off its decisions are
    G^2's (the no-noise ceiling is G^2's). The table carries the declared number of
    configurations of ``S`` (public), which the bound uses. Replace-one only: there is
    no add/remove bound."""

    name: str = "g2-distance"
    spec: str = G2_DISTANCE_SPEC
    proof_note: str = "docs/privacy/statistics-g2-distance.md"
    description: str = (
        "signed number of replaced rows to the G-test's decision at level alpha > 1/2 "
        "(sensitivity 1, replace-one only); exact with --algorithm pc (the G-test's "
        "decisions), noisy with the private algorithms")

    def value(self, table: StrataTable, alpha: float) -> float:
        return float(g2_distance(table, alpha))

    def pair_key(self, cx: int, cy: int) -> int:
        return 0  # the bound does not depend on the cardinalities

    def widest_key(self, cardinalities: Sequence[int]) -> int:
        return 0

    def bound(self, n: int, relation: Relation, key: int) -> float:
        spec = registry.get(G2_DISTANCE_SPEC, relation)
        return spec.bound(cx=2, cy=2)

    def threshold(self, alpha: float, cardinalities: Sequence[int], x: int, y: int,
                  S: tuple[int, ...]) -> float:
        return 0.5


_SCORES: dict[str, Score] = {}


def register_score(score: Score) -> Score:
    """Add ``score`` to the registry (a name may be registered once); its ``spec`` must
    name a registered bound (so a score without a proven bound cannot be added)."""
    if score.name in _SCORES:
        raise ValueError(f"score {score.name!r} is already registered")
    registry.get(score.spec)  # raises if the bound is not registered
    _SCORES[score.name] = score
    return score


def get_score(name: str) -> Score:
    """The registered score called ``name``; :class:`StatisticInputError` otherwise."""
    score = _SCORES.get(name)
    if score is None:
        raise StatisticInputError(f"score: unknown score {name!r}; choose from {score_names()}")
    return score


def score_names() -> tuple[str, ...]:
    """Names of the registered scores, in registration order."""
    return tuple(_SCORES)


register_score(SplitKendallScore())
register_score(KendallZScore())
register_score(KendallPScore())
register_score(CMIScore())
register_score(G2DistanceScore())
