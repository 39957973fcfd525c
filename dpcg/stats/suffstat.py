"""Second-moment sufficient statistics of a score matrix, released once by ``cov-pc``.

A *score matrix* ``U`` is ``n x q`` with every entry in ``[-1, 1]``; two public maps build
it from a dataset's columns (:mod:`dpcg.private.cov_pc` chooses one):

* **Pearson route** (:func:`pearson_scores`): a continuous column is clipped to its
  DECLARED bounds and mapped affinely to ``[-1, 1]`` (centred at the bounds' midpoint);
  an ordinal column's code ``c`` of ``K`` levels to ``2 c / (K - 1) - 1``; a nominal
  column of ``K > 2`` categories to ``K - 1`` indicators (the last category dropped).
  The released vector (:func:`moment_vector` with ``with_means=True``) is the upper
  triangle, diagonal included, of ``(1/n) sum_i u~_i u~_i^T`` with ``u~ = (1, u)``,
  without its constant ``(0, 0)`` entry: the means and every second moment.
  Replace-one L2 sensitivity :func:`pearson_moment_sensitivity`
  ``sqrt((q + 1)^2 + q/2) / n``.
* **Rank route** (:func:`rank_scores`): every score column is the column's centred
  midranks divided by ``L = (n - 1)/2`` (ties get mid-ranks: ordinal and binary columns
  enter with their ties; nominal indicators are binary columns). No bounds are used.
  The released vector (``with_means=False``) is the upper triangle, diagonal included,
  of ``(1/n) U^T U`` (the centred midranks sum to zero, so no means are needed).
  Replace-one L2 sensitivity :func:`rank_moment_sensitivity`: every row's midranks
  move when one row is replaced, see ``docs/privacy/statistics-moment-matrix.md``.

``n`` is public (replace-one). Nothing here is private by itself: the release is the
Gaussian mechanism of :mod:`accounting.mechanisms`, charged by the session first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError

Floats = NDArray[np.float64]

__all__ = ["moment_matrix", "moment_vector", "pearson_moment_sensitivity",
           "pearson_scores", "rank_entry_sensitivity", "rank_moment_sensitivity",
           "rank_scores", "register_moment_specs", "unit_scale", "upper_size"]


def unit_scale(values: Floats, lower: float, upper: float) -> Floats:
    """``values`` clipped to ``[lower, upper]`` and mapped affinely onto ``[-1, 1]``."""
    mid = 0.5 * (lower + upper)
    half = 0.5 * (upper - lower)
    out: Floats = np.clip((np.asarray(values, dtype=np.float64) - mid) / half, -1.0, 1.0)
    return out


def pearson_scores(columns: Sequence[Floats], bounds: Sequence[tuple[float, float]]) -> Floats:
    """The ``n x q`` Pearson-route score matrix of already-numeric columns with their
    public ``(lower, upper)`` (see the module docstring for how a caller maps ordinal and
    nominal columns to numeric columns with public bounds)."""
    if len(columns) != len(bounds) or not columns:
        raise StatisticInputError("pearson_scores: one (lower, upper) per column, >= 1 column")
    return np.column_stack([unit_scale(c, lo, hi) for c, (lo, hi) in
                            zip(columns, bounds, strict=True)])


def rank_scores(columns: Floats) -> Floats:
    """Centred midranks of each column of the ``n x q`` array, divided by
    ``L = (n - 1)/2`` (entries in ``[-1, 1]``; every column sums to 0). One sort per
    column (``scipy.stats.rankdata`` over axis 0, a single call)."""
    from scipy.stats import rankdata

    arr = np.asarray(columns, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise StatisticInputError("rank_scores: an n x q array with n >= 2 rows")
    n = arr.shape[0]
    ranks = rankdata(arr, axis=0, method="average")
    half = (n - 1) / 2.0
    out: Floats = (ranks - (n + 1) / 2.0) / half
    return out


def upper_size(q: int, with_means: bool) -> int:
    """Length of the released vector for ``q`` score columns."""
    k = q + 1 if with_means else q
    return k * (k + 1) // 2 - (1 if with_means else 0)


def moment_vector(scores: Floats, with_means: bool) -> Floats:
    """Upper triangle (row-major, diagonal included) of ``(1/n) U~^T U~`` with
    ``U~ = [1, U]`` (``with_means``; the constant ``(0, 0)`` entry dropped) or ``U``."""
    u = np.asarray(scores, dtype=np.float64)
    n = u.shape[0]
    if with_means:
        u = np.column_stack([np.ones(n), u])
    g = (u.T @ u) / n
    iu = np.triu_indices(g.shape[0])
    vec: Floats = g[iu]
    return vec[1:] if with_means else vec


def moment_matrix(vec: Floats, q: int, with_means: bool) -> Floats:
    """The symmetric matrix of a (possibly noisy) :func:`moment_vector` (the constant
    ``(0, 0)`` entry restored to 1 when ``with_means``). Post-processing only.
    ``vec`` may carry leading batch axes: ``(..., len)`` -> ``(..., k, k)``."""
    v = np.asarray(vec, dtype=np.float64)
    k = q + 1 if with_means else q
    if v.shape[-1] != upper_size(q, with_means):
        raise StatisticInputError(f"moment_matrix: expected {upper_size(q, with_means)} "
                                  f"entries, got {v.shape[-1]}")
    if with_means:
        v = np.concatenate([np.ones((*v.shape[:-1], 1)), v], axis=-1)
    g = np.zeros((*v.shape[:-1], k, k))
    iu = np.triu_indices(k)
    g[..., iu[0], iu[1]] = v
    g[..., iu[1], iu[0]] = v
    return g


def _check_n_q(n: int, q: int) -> tuple[int, int]:
    for name, v, low in (("n", n, 2), ("q", q, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or int(v) < low:
            raise StatisticInputError(f"{name}: expected an integer >= {low}, got {v!r}")
    return int(n), int(q)


def pearson_moment_sensitivity(n: int, q: int) -> float:
    """Replace-one L2 bound of the Pearson-route :func:`moment_vector` (means included)
    for ``q`` score columns in ``[-1, 1]`` and ``n`` rows: ``sqrt((q + 1)^2 + q/2) / n``
    (proof: ``docs/privacy/statistics-moment-matrix.md``, Lemma 1)."""
    n, q = _check_n_q(n, q)
    return math.sqrt((q + 1.0) ** 2 + q / 2.0) / n


def rank_moment_sensitivity(n: int, q: int, two_valued: int = 0) -> float:
    """Replace-one L2 bound of the rank-route :func:`moment_vector` for ``q`` columns
    of ``n`` rows (midranks, ties allowed), ``L = (n - 1)/2``, ``F = floor(n^2/4)``,
    of which ``two_valued`` columns can take at most two values in every dataset of the
    schema (binary columns, nominal indicators; a function of the schema only):

        sqrt((sqrt(B) + q L^2)^2 + q (n (n - 1)/4)^2) / (n L^2),
        B = sum over pairs j < l of (b_j + b_l)^2,  b = F/2 (general), L/2 (two-valued)

    With ``two_valued = 0``, ``B = q (q - 1)/2 F^2`` (Lemma 2, about
    ``sqrt((0.707 q + q)^2 + q) / n``); proof: ``docs/privacy/statistics-moment-matrix.md``,
    Lemmas 2 and 2b."""
    n, q = _check_n_q(n, q)
    if isinstance(two_valued, bool) or not isinstance(two_valued, int | np.integer) or not (
            0 <= int(two_valued) <= q):
        raise StatisticInputError(f"two_valued: expected an integer in [0, q = {q}], got "
                                  f"{two_valued!r}")
    qb = int(two_valued)
    qg = q - qb
    half = (n - 1) / 2.0
    half2 = half * half
    f = float(n * n // 4)
    bg, bb = f / 2.0, half / 2.0
    pairs = (qg * (qg - 1) / 2.0 * (2.0 * bg) ** 2 + qg * qb * (bg + bb) ** 2
             + qb * (qb - 1) / 2.0 * (2.0 * bb) ** 2)
    off = math.sqrt(pairs) + q * half2
    diag2 = q * (n * (n - 1) / 4.0) ** 2
    return math.sqrt(off * off + diag2) / (n * half2)


# ---------------------------------------------------------------------------------
# Registry specs (one coordinate of each moment vector, on the audits' canonical input)
# ---------------------------------------------------------------------------------


def rank_entry_sensitivity(n: int) -> float:
    """Replace-one bound of ONE off-diagonal coordinate ``T_jl / (n L^2)`` of the rank
    moment vector: ``(floor(n^2/4) + 2 L^2) / (n L^2)`` (Lemma 2's per-coordinate step:
    the two rank-shift sums are at most ``floor(n^2/4)/2`` each, the replaced row's own
    product moves by at most ``2 L^2``)."""
    n, _ = _check_n_q(n, 1)
    half2 = ((n - 1) / 2.0) ** 2
    return ((n * n // 4) + 2.0 * half2) / (n * half2)


def _canonical_columns(x: NDArray[np.integer], y: NDArray[np.integer],
                       strata: NDArray[np.integer]) -> Floats:
    return np.column_stack([np.asarray(v, dtype=np.float64) for v in (x, y, strata)])


def _stat_rank_entry(x: NDArray[np.integer], y: NDArray[np.integer],
                     strata: NDArray[np.integer], **_: float) -> float:
    u = rank_scores(_canonical_columns(x, y, strata))
    return float(u[:, 0] @ u[:, 1]) / float(u.shape[0])


def _public_count(name: str, value: object, minimum: int) -> int:
    """A public count (``n``, a cardinality) as an int; anything else (NaN, inf, a
    fraction, a string, ``None``, too small) is a :class:`StatisticInputError`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value != int(value) or value < minimum:
        raise StatisticInputError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def _sens_rank_entry(*, n: float) -> float:
    return rank_entry_sensitivity(_public_count("n", n, 2))


def _stat_pearson_entry(x: NDArray[np.integer], y: NDArray[np.integer],
                        strata: NDArray[np.integer], *, cx: float, cy: float,
                        **_: float) -> float:
    ux = unit_scale(np.asarray(x, dtype=np.float64), 0.0, max(float(cx) - 1.0, 1.0))
    uy = unit_scale(np.asarray(y, dtype=np.float64), 0.0, max(float(cy) - 1.0, 1.0))
    return float(ux @ uy) / ux.size


def _sens_pearson_entry(*, n: float, cx: float, cy: float) -> float:
    _public_count("cx", cx, 2)
    _public_count("cy", cy, 2)
    return 2.0 / _check_n_q(_public_count("n", n, 2), 1)[0]


def register_moment_specs() -> None:
    """Register the per-coordinate specs (idempotent). The L2 bounds of the whole
    vectors are searched by ``audits.sensitivity.moment_l2_audit``."""
    from accounting.relations import Relation
    from dpcg.stats.registry import StatisticSpec, get, register

    specs = (
        StatisticSpec(
            name="rank-moment-entry", relation=Relation.REPLACE_ONE,
            sensitivity=_sens_rank_entry,
            assumptions="One off-diagonal coordinate (1/n) sum_i u_ix u_iy of cov-pc's rank "
            "moment vector, u = centred midranks / ((n-1)/2) of each column (ties allowed; "
            "the canonical x, y, strata codes are three columns); n public. Bound "
            "(floor(n^2/4) + (n-1)^2/2) / (n ((n-1)/2)^2) ~ 6/n.",
            proof_note="docs/privacy/statistics-moment-matrix.md",
            statistic=_stat_rank_entry, public_params=("n",)),
        StatisticSpec(
            name="pearson-moment-entry", relation=Relation.REPLACE_ONE,
            sensitivity=_sens_pearson_entry,
            assumptions="One coordinate (1/n) sum_i u_ix u_iy of cov-pc's Pearson moment "
            "vector, codes mapped to [-1, 1] by their declared cardinalities (public); n "
            "public. Bound 2/n.",
            proof_note="docs/privacy/statistics-moment-matrix.md",
            statistic=_stat_pearson_entry, public_params=("n", "cx", "cy")),
    )
    for spec in specs:
        try:
            get(spec.name, spec.relation)
        except StatisticInputError:
            register(spec)


register_moment_specs()
