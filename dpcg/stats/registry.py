"""Registry of statistics and their proven sensitivity bounds.

Every statistic that a private mechanism may release is registered here as a
:class:`StatisticSpec`: its name, the neighbouring relation its bound is declared
under, the bound as a function of **public** quantities only, the assumptions of the
proof, the path of the proof note, and a reference implementation of the statistic on
a canonical input, so that the audits can property-test every registration
(``audits.sensitivity`` evaluates ``spec.evaluate`` on neighbouring inputs and checks
``|difference| <= spec.bound(...)``).

Canonical input of ``statistic``: three 1-D integer arrays of equal length ``n``,
``x`` (codes in ``[0, cx)``), ``y`` (codes in ``[0, cy)``) and ``strata`` (the
configuration of the conditioning set, codes in ``[0, n_configs)``; all zeros for an
unconditional statistic), plus the public parameters named in ``public_params``.

Public parameter names (all JSON numbers):

* ``n``: number of rows. Under add/remove ``n`` is the size of the **smaller** of the
  two neighbours. As ``n`` is not public under add/remove, a caller must evaluate the
  bound at a public value that makes it largest: a public lower bound on ``n`` for
  bounds that decrease in ``n`` (``kendall-tau-a``), a public upper bound for bounds
  that increase in ``n`` (``n-cmi``: ``g(n)`` grows like ``ln n``).
* ``cx``, ``cy``: declared cardinalities of x and y.
* ``n_configs``: number of possible configurations of the conditioning set.
* ``w0``: a public floor for a data-dependent normaliser.

A bound that is not proven in its note is not registered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from accounting.relations import Relation
from dpcg.errors import StatisticInputError
from dpcg.stats.contingency import StrataTable, table_from_codes
from dpcg.stats.discrete import n_cmi
from dpcg.stats.kendall import conditional_kendall_z, split_kendall_z, tau_a
from dpcg.stats.spearman import (
    conditional_spearman_z_public,
    spearman_rho_a,
    spearman_rho_a_sensitivity,
)

#: Root of the repository (proof notes are given relative to it).

Sensitivity = Callable[..., float]
Statistic = Callable[..., float]


@dataclass(frozen=True)
class StatisticSpec:
    """One statistic with a proven sensitivity bound under one relation.

    * ``sensitivity(**public) -> float``: the bound, from public parameters only.
    * ``proof_note``: repository-relative path of the note with the claim,
      assumptions and proof (``docs/privacy/statistics-<name>.md``).
    * ``statistic(x, y, strata, **public) -> float``: the exact statistic on the
      canonical input (see the module docstring).
    * ``public_params``: the names of the public parameters both functions take.
    """

    name: str
    relation: Relation
    sensitivity: Sensitivity
    assumptions: str
    proof_note: str
    statistic: Statistic = field(repr=False)
    public_params: tuple[str, ...] = ()

    def _public(self, public: Mapping[str, float]) -> dict[str, float]:
        missing = [k for k in self.public_params if k not in public]
        extra = [k for k in public if k not in self.public_params]
        if missing or extra:
            raise StatisticInputError(
                f"statistic {self.name!r} takes public parameters {self.public_params}; "
                f"missing {missing}, unexpected {extra}"
            )
        return dict(public)

    def bound(self, **public: float) -> float:
        """The declared sensitivity at these public parameters."""
        return float(self.sensitivity(**self._public(public)))

    def evaluate(
        self,
        x: NDArray[np.integer],
        y: NDArray[np.integer],
        strata: NDArray[np.integer] | None = None,
        **public: float,
    ) -> float:
        """The statistic on the canonical input."""
        xa = np.asarray(x)
        s = np.zeros(xa.shape, dtype=np.int64) if strata is None else np.asarray(strata)
        return float(self.statistic(xa, np.asarray(y), s, **self._public(public)))


_REGISTRY: dict[tuple[str, Relation], StatisticSpec] = {}


def register(spec: StatisticSpec) -> StatisticSpec:
    """Add ``spec``; a second spec with the same name and relation is an error."""
    key = (spec.name, spec.relation)
    if key in _REGISTRY:
        raise StatisticInputError(
            f"statistic {spec.name!r} is already registered under {spec.relation.value}"
        )
    _REGISTRY[key] = spec
    return spec


def unregister(name: str, relation: Relation | str = Relation.REPLACE_ONE) -> None:
    """Remove a spec (tests registering a toy statistic clean up with it)."""
    _REGISTRY.pop((name, Relation.parse(relation)), None)


def get(name: str, relation: Relation | str = Relation.REPLACE_ONE) -> StatisticSpec:
    """The spec of ``name`` under ``relation`` (default replace-one)."""
    rel = Relation.parse(relation)
    try:
        return _REGISTRY[(name, rel)]
    except KeyError:
        known = sorted({f"{k[0]} ({k[1].value})" for k in _REGISTRY})
        raise StatisticInputError(
            f"no statistic {name!r} registered under {rel.value}; known: {known}"
        ) from None


def all_specs() -> tuple[StatisticSpec, ...]:
    """Every registered spec, in registration order."""
    return tuple(_REGISTRY.values())


# ---------------------------------------------------------------------------------
# Public-parameter helpers
# ---------------------------------------------------------------------------------


def _int_param(name: str, v: float, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise StatisticInputError(f"public parameter {name} must be a number, got {v!r}")
    if not math.isfinite(float(v)) or float(v) != int(v) or int(v) < minimum:
        raise StatisticInputError(f"public parameter {name}={v!r} must be an integer >= {minimum}")
    return int(v)


def _pos_param(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise StatisticInputError(f"public parameter {name} must be a number, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or f <= 0:
        raise StatisticInputError(f"public parameter {name}={v!r} must be finite and > 0")
    return f


def g_increment(m: float) -> float:
    """``g(m) = (m+1) ln(m+1) - m ln m`` (``g(0) = 0``): the largest change of
    ``n CMI`` when one row is added to ``m`` rows (docs/privacy/statistics-cmi.md)."""
    if m <= 0:
        return 0.0
    return float(math.log1p(m) + m * math.log1p(1.0 / m))


# ---------------------------------------------------------------------------------
# Built-in registrations
# ---------------------------------------------------------------------------------


def _canonical_table(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
) -> tuple[NDArray[np.int64], int, int]:
    """Table over the observed strata of canonical input (cardinalities from the
    codes: only used to *evaluate* statistics in audits, never as public bounds)."""
    xa = np.asarray(x, dtype=np.int64)
    ya = np.asarray(y, dtype=np.int64)
    sa = np.asarray(strata, dtype=np.int64)
    cx = int(xa.max()) + 1 if xa.size else 1
    cy = int(ya.max()) + 1 if ya.size else 1
    k = int(sa.max()) + 1 if sa.size else 1
    t = table_from_codes(xa, ya, sa, cx, cy, k)
    return t.counts, cx, cy


def _stat_n_cmi(
    x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer], **_: float
) -> float:
    counts, cx, cy = _canonical_table(x, y, strata)
    return n_cmi(StrataTable(counts, cx, cy, max(1, counts.shape[0])))


def _sens_n_cmi_r1(*, n: float) -> float:
    return 2.0 * g_increment(_int_param("n", n, 1) - 1)


def _sens_n_cmi_ar(*, n: float) -> float:
    return g_increment(_int_param("n", n, 0))


_CMI_ASSUMPTIONS = (
    "x, y, S discrete with any cardinalities; plug-in (empirical) conditional mutual "
    "information in nats over the observed strata; n CMI = G^2/2. No assumption on "
    "the data distribution."
)

register(
    StatisticSpec(
        name="n-cmi",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_n_cmi_r1,
        assumptions=_CMI_ASSUMPTIONS + " Bound 2 g(n-1), g(m) = (m+1)ln(m+1) - m ln m.",
        proof_note="docs/privacy/statistics-cmi.md",
        statistic=_stat_n_cmi,
        public_params=("n",),
    )
)
register(
    StatisticSpec(
        name="n-cmi",
        relation=Relation.ADD_REMOVE,
        sensitivity=_sens_n_cmi_ar,
        assumptions=_CMI_ASSUMPTIONS
        + " n = size of the smaller neighbour; bound g(n), increasing in n (evaluate it at a"
        " public upper bound on n).",
        proof_note="docs/privacy/statistics-cmi.md",
        statistic=_stat_n_cmi,
        public_params=("n",),
    )
)


# --- Kendall tau-a ----------------------------------------------------------------


def _stat_tau_a(
    x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer], **_: float
) -> float:
    counts, cx, cy = _canonical_table(x, y, np.zeros_like(np.asarray(x)))
    return tau_a(StrataTable(counts, cx, cy, 1))


def _sens_tau_a_r1(*, n: float) -> float:
    return 4.0 / _int_param("n", n, 2)


def _sens_tau_a_ar(*, n: float) -> float:
    return 4.0 / (_int_param("n", n, 1) + 1)


_TAU_ASSUMPTIONS = (
    "Unconditional Kendall tau-a = (C - D) / (n(n-1)/2) on ordered values (codes in "
    "their declared order); ties allowed (a tied pair counts 0); strata ignored."
)

for _rel, _sens, _extra in (
    (Relation.REPLACE_ONE, _sens_tau_a_r1, " Bound 4/n (n >= 2), attained."),
    (
        Relation.ADD_REMOVE,
        _sens_tau_a_ar,
        " n = size of the smaller neighbour (n >= 1); bound 4/(n+1), attained.",
    ),
):
    register(
        StatisticSpec(
            name="kendall-tau-a",
            relation=_rel,
            sensitivity=_sens,
            assumptions=_TAU_ASSUMPTIONS + _extra,
            proof_note="docs/privacy/statistics-kendall-tau-a.md",
            statistic=_stat_tau_a,
            public_params=("n",),
        )
    )


# --- Conditional Kendall z ----------------------------------------------------------

#: sup over block sizes of the change of U = sum_b 9 S_b/(2 n_b + 5) when one row is
#: added to or removed from a block (docs/privacy/statistics-conditional-kendall-z.md).
KENDALL_U_ADD_REMOVE = 27.0 / 4.0
#: add/remove constant of the floored statistic: 27/4 + (9/4)/2.
KENDALL_Z_FLOORED_ADD_REMOVE = 63.0 / 8.0


def _stat_ckz(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
    *,
    w0: float,
    **_: float,
) -> float:
    counts, cx, cy = _canonical_table(x, y, strata)
    return conditional_kendall_z(StrataTable(counts, cx, cy, max(1, counts.shape[0])), w0)


def kendall_u_constant(cx: float | None = None, cy: float | None = None) -> float:
    """Bound ``c_U`` on the change of ``U = sum_b 9 S_b / (2 n_b + 5)`` when one row is
    added to or removed from a block: ``(9/4) (3 - 1/(c - 1))`` with ``c = min(cx, cy)``
    the smaller **declared** cardinality (4.5 for a binary variable, 6 for four
    categories), and ``27/4`` without cardinalities. Proof:
    docs/privacy/statistics-conditional-kendall-z.md, Lemma 2.
    """
    if cx is None and cy is None:
        return KENDALL_U_ADD_REMOVE
    cards = [_int_param(name, v, 1) for name, v in (("cx", cx), ("cy", cy)) if v is not None]
    c = min(cards)
    if c < 2:
        return 0.0  # a variable with one category: every tau_b is 0, U is constant
    return 9.0 / 4.0 * (3.0 - 1.0 / (c - 1))


def conditional_kendall_sensitivity(
    n: float | None,
    w0: float,
    relation: Relation | str = Relation.REPLACE_ONE,
    *,
    cx: float | None = None,
    cy: float | None = None,
) -> float:
    """Proven sensitivity of ``U / sqrt(max(W, w0))``, with ``c_U`` from
    :func:`kendall_u_constant` (27/4 without cardinalities):

    * replace-one, ``w0 >= 9n/4`` (the normaliser is the constant ``sqrt(w0)``):
      ``2 c_U / sqrt(w0)``; with the default ``w0 = 9n/4`` and no cardinalities this is
      ``9 / sqrt(n)`` (``6 / sqrt(n)`` when x or y is binary);
    * replace-one, smaller ``w0``: ``2 (c_U + 9/8) / sqrt(w0)``;
    * add/remove: ``(c_U + 9/8) / sqrt(w0)``.
    """
    w = _pos_param("w0", w0)
    c_u = kendall_u_constant(cx, cy)
    c_z = c_u + 9.0 / 8.0
    rel = Relation.parse(relation)
    if rel is Relation.ADD_REMOVE:
        return c_z / math.sqrt(w)
    if n is None:
        raise StatisticInputError("n is required under replace-one")
    nn = _int_param("n", n, 1)
    if w >= 9.0 * nn / 4.0:
        return 2.0 * c_u / math.sqrt(w)
    return 2.0 * c_z / math.sqrt(w)


def _sens_ckz_r1(*, n: float, w0: float) -> float:
    return conditional_kendall_sensitivity(n, w0, Relation.REPLACE_ONE)


def _sens_ckz_ar(*, w0: float) -> float:
    return conditional_kendall_sensitivity(None, w0, Relation.ADD_REMOVE)


_CKZ_ASSUMPTIONS = (
    "z = sum_b w_b tau_b / sqrt(max(W, w0)) over ALL observed strata of S (constant-x/y "
    "strata kept, tau_b = 0), w_b = 9 n_b(n_b-1)/(2(2 n_b+5)), W = sum_b w_b; w0 > 0 "
    "public (never computed from the data); any cardinalities, ties allowed."
)

register(
    StatisticSpec(
        name="conditional-kendall-z",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_ckz_r1,
        assumptions=_CKZ_ASSUMPTIONS
        + " Bound 13.5/sqrt(w0) if w0 >= 9n/4 (default w0 = 9n/4: 9/sqrt(n)), "
        "else 15.75/sqrt(w0).",
        proof_note="docs/privacy/statistics-conditional-kendall-z.md",
        statistic=_stat_ckz,
        public_params=("n", "w0"),
    )
)
register(
    StatisticSpec(
        name="conditional-kendall-z",
        relation=Relation.ADD_REMOVE,
        sensitivity=_sens_ckz_ar,
        assumptions=_CKZ_ASSUMPTIONS + " Bound 7.875/sqrt(w0).",
        proof_note="docs/privacy/statistics-conditional-kendall-z.md",
        statistic=_stat_ckz,
        public_params=("w0",),
    )
)


def _declared_codes(name: str, v: NDArray[np.integer], c: float) -> NDArray[np.int64]:
    """``v`` as int64, refused if a code is outside the declared ``[0, c)``."""
    a = np.asarray(v, dtype=np.int64)
    if a.size and (int(a.min()) < 0 or int(a.max()) >= int(c)):
        raise StatisticInputError(f"{name} has codes outside its declared categories [0, {int(c)})")
    return a


def _stat_ckzc(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
    *,
    w0: float,
    cx: float,
    cy: float,
    **_: float,
) -> float:
    _declared_codes("x", x, cx)
    _declared_codes("y", y, cy)
    return _stat_ckz(x, y, strata, w0=w0)


def _sens_ckzc_r1(*, n: float, w0: float, cx: float, cy: float) -> float:
    # the declared cardinalities are required here (None would mean "unknown" below)
    return conditional_kendall_sensitivity(n, w0, Relation.REPLACE_ONE,
                                           cx=_int_param("cx", cx, 1),
                                           cy=_int_param("cy", cy, 1))


def _sens_ckzc_ar(*, w0: float, cx: float, cy: float) -> float:
    return conditional_kendall_sensitivity(None, w0, Relation.ADD_REMOVE,
                                           cx=_int_param("cx", cx, 1),
                                           cy=_int_param("cy", cy, 1))


_CKZC_ASSUMPTIONS = (
    _CKZ_ASSUMPTIONS
    + " x and y take values in their DECLARED categories, cx and cy (public, from the "
    "schema); c = min(cx, cy), c_U = (9/4)(3 - 1/(c-1))."
)

register(
    StatisticSpec(
        name="conditional-kendall-z-categorical",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_ckzc_r1,
        assumptions=_CKZC_ASSUMPTIONS
        + " Bound 2 c_U/sqrt(w0) if w0 >= 9n/4 (default w0 = 9n/4 and binary x or y: "
        "6/sqrt(n)), else 2 (c_U + 9/8)/sqrt(w0).",
        proof_note="docs/privacy/statistics-conditional-kendall-z.md",
        statistic=_stat_ckzc,
        public_params=("n", "w0", "cx", "cy"),
    )
)
register(
    StatisticSpec(
        name="conditional-kendall-z-categorical",
        relation=Relation.ADD_REMOVE,
        sensitivity=_sens_ckzc_ar,
        assumptions=_CKZC_ASSUMPTIONS + " Bound (c_U + 9/8)/sqrt(w0).",
        proof_note="docs/privacy/statistics-conditional-kendall-z.md",
        statistic=_stat_ckzc,
        public_params=("w0", "cx", "cy"),
    )
)


# --- split conditional Kendall z -----------------------------------------------------


def _stat_skz(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
    *,
    w0: float,
    cx: float,
    cy: float,
    **_: float,
) -> float:
    xa = _declared_codes("x", x, cx)
    ya = _declared_codes("y", y, cy)
    sa = np.asarray(strata, dtype=np.int64)
    k = int(sa.max()) + 1 if sa.size else 1
    # the split family comes from the DECLARED cardinalities (public)
    table = table_from_codes(xa, ya, sa, int(cx), int(cy), k)
    return split_kendall_z(table, w0)


def _sens_skz_r1(*, n: float, w0: float, cx: float, cy: float) -> float:
    _int_param("cx", cx, 1)
    _int_param("cy", cy, 1)
    return conditional_kendall_sensitivity(n, w0, Relation.REPLACE_ONE, cx=2, cy=2)


def _sens_skz_ar(*, w0: float, cx: float, cy: float) -> float:
    _int_param("cx", cx, 1)
    _int_param("cy", cy, 1)
    return conditional_kendall_sensitivity(None, w0, Relation.ADD_REMOVE, cx=2, cy=2)


_SKZ_ASSUMPTIONS = (
    "z = max over binary splits A of x and B of y (dpcg.stats.kendall.binary_splits of "
    "the DECLARED cardinalities cx, cy: public) of |U_AB| / sqrt(max(W, w0)), U_AB the "
    "conditional Kendall numerator of (1[x in A], 1[y in B]) over ALL observed strata "
    "of S, W = sum_b 9 n_b(n_b-1)/(2(2 n_b+5)); w0 > 0 public. Every member is the "
    "binary-case conditional Kendall z, so the binary constant c_U(2) = 9/2 holds for "
    "any cx, cy."
)

register(
    StatisticSpec(
        name="split-kendall-z",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_skz_r1,
        assumptions=_SKZ_ASSUMPTIONS
        + " Bound 9/sqrt(w0) if w0 >= 9n/4 (default w0 = 9n/4: 6/sqrt(n)), else "
        "11.25/sqrt(w0).",
        proof_note="docs/privacy/statistics-split-kendall-z.md",
        statistic=_stat_skz,
        public_params=("n", "w0", "cx", "cy"),
    )
)
register(
    StatisticSpec(
        name="split-kendall-z",
        relation=Relation.ADD_REMOVE,
        sensitivity=_sens_skz_ar,
        assumptions=_SKZ_ASSUMPTIONS + " Bound 5.625/sqrt(w0).",
        proof_note="docs/privacy/statistics-split-kendall-z.md",
        statistic=_stat_skz,
        public_params=("w0", "cx", "cy"),
    )
)


def _stat_skz_marginal(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
    *,
    w0: float,
    cx: float,
    cy: float,
    **_: float,
) -> float:
    # the test given the EMPTY set: every row in one stratum, whatever ``strata`` says
    return _stat_skz(x, y, np.zeros(np.asarray(x).shape, dtype=np.int64), w0=w0, cx=cx,
                     cy=cy)


#: Bound on the change of one stratum's ``U = 9 S / (2 m + 5)`` of a binary pair when a
#: row of the stratum is replaced by another of the same stratum: ``|dS| <= m - 1``, so
#: ``|dU| <= 9 (m - 1) / (2 m + 5) < 9/2`` (docs/privacy/statistics-split-kendall-z.md,
#: claim 5).
SPLIT_U_WITHIN_STRATUM = 4.5


def _sens_skz_marginal_r1(*, n: float, w0: float, cx: float, cy: float) -> float:
    _int_param("cx", cx, 1)
    _int_param("cy", cy, 1)
    _int_param("n", n, 1)
    return SPLIT_U_WITHIN_STRATUM / math.sqrt(_pos_param("w0", w0))


register(
    StatisticSpec(
        name="split-kendall-z-marginal",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_skz_marginal_r1,
        assumptions=_SKZ_ASSUMPTIONS
        + " The test given the EMPTY set (one stratum of all n rows): a replaced row stays "
        "in it, so every member's U moves by < 9/2 and z by < 4.5/sqrt(w0) (default w0 = "
        "9n/4: 3/sqrt(n), half the bound of a test given a non-empty set). Replace-one "
        "only (adding or removing a row changes the stratum's size).",
        proof_note="docs/privacy/statistics-split-kendall-z.md",
        statistic=_stat_skz_marginal,
        public_params=("n", "w0", "cx", "cy"),
    )
)


# --- Spearman rho_a -----------------------------------------------------------------


def _stat_rho_a(
    x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer], **_: float
) -> float:
    counts, cx, cy = _canonical_table(x, y, np.zeros_like(np.asarray(x)))
    return spearman_rho_a(StrataTable(counts, cx, cy, 1))


def _sens_rho_a_r1(*, n: float) -> float:
    return spearman_rho_a_sensitivity(_int_param("n", n, 2))


register(
    StatisticSpec(
        name="spearman-rho-a",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_rho_a_r1,
        assumptions=(
            "Unconditional rho_a = 12 sum_i (R_i - (n+1)/2)(Q_i - (n+1)/2) / (n(n^2-1)) with "
            "midranks R, Q (equals Spearman's rho without ties); ties allowed; n >= 2. "
            "Bound 12 (floor(n^2/4) + (n-1)^2/2) / (n(n^2-1)) ~ 9/n."
        ),
        proof_note="docs/privacy/statistics-spearman-rho-a.md",
        statistic=_stat_rho_a,
        public_params=("n",),
    )
)


# --- Conditional Spearman z (public normaliser) ------------------------------------

#: sup of the change of U = sum_b (n_b - 1) rho_a,b when one row is added to or removed
#: from a block (docs/privacy/statistics-conditional-spearman-z.md).
SPEARMAN_U_ADD_REMOVE = 8.0


def _stat_csz(
    x: NDArray[np.integer], y: NDArray[np.integer], strata: NDArray[np.integer], **_: float
) -> float:
    counts, cx, cy = _canonical_table(x, y, strata)
    return conditional_spearman_z_public(StrataTable(counts, cx, cy, max(1, counts.shape[0])))


def _sens_csz_r1(*, n: float) -> float:
    return 2.0 * SPEARMAN_U_ADD_REMOVE / math.sqrt(_int_param("n", n, 1))


register(
    StatisticSpec(
        name="conditional-spearman-z",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_csz_r1,
        assumptions=(
            "z = sum_b (n_b - 1) rho_a,b / sqrt(n) over ALL observed strata of S, rho_a,b "
            "the block's midrank Spearman rho with the no-ties normaliser; n public; ties "
            "allowed. Bound 16/sqrt(n)."
        ),
        proof_note="docs/privacy/statistics-conditional-spearman-z.md",
        statistic=_stat_csz,
        public_params=("n",),
    )
)


# --- signed distance to the G^2 decision ---------------------------------------------

#: Level of the registered instance (the bound 1 holds for every alpha in (0, 1)).
G2_DISTANCE_ALPHA = 0.05
#: The registered instance treats the number of configurations of S as unbounded (some
#: configuration always unobserved, no cap on df): the most conservative public value;
#: the proof covers every public ``n_configs``.
G2_DISTANCE_CONFIGS = 1 << 62


def _stat_g2_distance(
    x: NDArray[np.integer],
    y: NDArray[np.integer],
    strata: NDArray[np.integer],
    *,
    cx: float,
    cy: float,
    **_: float,
) -> float:
    from dpcg.stats.contingency import StrataTable, table_from_codes
    from dpcg.stats.g2_distance import g2_distance

    xa = _declared_codes("x", x, cx)
    ya = _declared_codes("y", y, cy)
    sa = np.asarray(strata, dtype=np.int64)
    k = int(sa.max()) + 1 if sa.size else 1
    t = table_from_codes(xa, ya, sa, int(cx), int(cy), k)
    return float(g2_distance(StrataTable(t.counts, int(cx), int(cy), G2_DISTANCE_CONFIGS),
                             G2_DISTANCE_ALPHA))


def _sens_g2_distance_r1(*, cx: float, cy: float) -> float:
    _int_param("cx", cx, 2)
    _int_param("cy", cy, 2)
    return 1.0


register(
    StatisticSpec(
        name="g2-decision-distance",
        relation=Relation.REPLACE_ONE,
        sensitivity=_sens_g2_distance_r1,
        assumptions=(
            "s = signed ladder lower bound on the number of replaced rows that flip the "
            "G-test decision (p <= alpha, df by causal-learn's rule over observed strata): "
            ">= 1 when dependent, <= 0 when independent, clamped to [1 - n, n]; x, y in "
            "their DECLARED categories cx, cy >= 2; n, alpha, cx, cy and the number of "
            "configurations of S public. Registered instance: alpha = 0.05, configurations "
            "of S unbounded. Bound 1 (integer-valued, attained). Replace-one only."
        ),
        proof_note="docs/privacy/statistics-g2-distance.md",
        statistic=_stat_g2_distance,
        public_params=("cx", "cy"),
    )
)
