"""Gaussian CI tests on a released (noisy) second-moment matrix: every test after the one
release is post-processing (``cov-pc``, :mod:`dpcg.private.cov_pc`).

* :func:`score_matrix` maps a dataset to the ``n x q`` score matrix of
  :mod:`dpcg.stats.suffstat` (``route="pearson"``: declared bounds; ``route="rank"``:
  midranks, no bounds), with a :class:`ScoreLayout` saying which score columns belong to
  which variable (a nominal variable of ``K > 2`` categories has ``K - 1`` indicator
  columns; any other variable one) and which are continuous. Bad values (NaN, inf,
  outside the declared bounds or categories) are refused here, before anything is
  charged, naming the column and the rule, never a value or a row.
* :class:`NoisyMomentTest` turns the released vector into a correlation matrix
  (Pearson route: means and second moments -> covariance -> correlation; rank route:
  tie-corrected Spearman correlations, mapped to the Gaussian-copula correlation
  ``2 sin(pi r / 6)`` in a test whose columns are all continuous), projects it onto the
  positive-definite matrices (eigenvalues floored at :data:`EIGEN_FLOOR`, unit diagonal
  restored), and tests ``X _||_ Y | S`` by the partial correlations of X's and Y's
  score columns given all the others (the precision matrix's ``X x Y`` block is zero
  under conditional independence of jointly Gaussian scores). A rank-route test of two
  continuous columns given continuous AND discrete columns takes the
  conditional-Gaussian chain instead (:meth:`NoisyMomentTest._analytic_cg`: the
  discrete columns partialled out on the rank scale, then the continuous block mapped
  to the copula scale), which removes the rank scale's bias when discrete columns shift
  continuous ones.

The null distribution accounts for the release noise: the statistic's covariance is
the Fisher sampling covariance ``kappa / (n - s - 1) (R_X kron R_Y)`` (``s`` score
columns in the test, ``kappa = pi^2/9`` for copula-mapped Spearman entries, else 1)
**plus** the release-noise covariance. ``null="delta"`` (default): the first-order
covariance of the noise's effect on the partial correlations, in closed form from the
PUBLIC noise scale ``sigma`` at the test's nearest null (:meth:`NoisyMomentTest.
_delta_noise_cov`); the Wald statistic ``r^T V^-1 r`` is referred to ``chi^2`` with
``k_X k_Y`` degrees of freedom. A test whose first-order noise sd on one of its partial
correlations exceeds :data:`NONLINEAR_SD` is **swamped** (the linearisation is invalid
and the observed statistic carries no usable information): its p-value is a ``U(0, 1)``
draw from the auxiliary generator (:meth:`NoisyMomentTest._swamped_pvalues`), so that it
rejects with probability exactly ``alpha`` given the release (the decision to draw is
a function of the release). ``null="simulated"``: ``draws`` replicates of the whole
post-processing applied to the nearest null plus ``N(0, sigma^2 I)`` (a parametric
bootstrap; its randomness is not privacy noise and uses only the released vector), the
p-value the rank of the observed statistic. ``null="auto"`` (experimental, not the
default: in band on average where the delta null is conservative, but not calibrated
given the noise level; docs/continuous.md): the delta null, except for tests whose
first-order noise sd on a partial correlation exceeds :data:`NONLINEAR_SD`; those get
the sampled null (:meth:`NoisyMomentTest._sampled`: replicates of Gaussian sampling at
a shrunk nearest null plus the release noise, through the whole post-processing).
``sigma = 0`` (no release) gives the non-private test ``--test copula``.
Proof note: ``docs/privacy/algorithm-cov-pc.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.registry import NoOptions, TestContext, TestSpec, register_test
from dpcg.data.dataset import Dataset
from dpcg.data.schema import Categorical, Continuous, Ordinal
from dpcg.errors import CITestError, DataValidationError
from dpcg.stats.suffstat import moment_matrix, moment_vector, pearson_scores, rank_scores

Floats = NDArray[np.float64]

__all__ = ["EIGEN_FLOOR", "ROUTES", "NoisyMomentTest", "ScoreLayout", "correlation_from_moments",
           "score_matrix"]

ROUTES = ("rank", "pearson")
#: How the release noise enters a test's null: ``"delta"`` (default; the first-order
#: covariance of the noise's effect, chi-square reference; a ``U(0, 1)`` p-value for a
#: swamped test), ``"simulated"`` (the first version: Monte-Carlo replicates of the noise
#: through the whole post-processing, for every test) or ``"auto"`` (experimental: the
#: delta null, a sampled null for a swamped test).
NULLS = ("delta", "simulated", "auto")
#: A test is **swamped** when the release noise's first-order standard deviation on one
#: of its partial correlations exceeds this public constant: two such sds span the whole
#: range ``[-1, 1]`` of a partial correlation, so a first-order, Gaussian law cannot
#: describe it, and the bounded, projected statistic carries no usable information
#: (measured power 0.00-0.05 with the chi-square reference, docs/continuous.md). With
#: ``null="delta"`` (default) a swamped test's p-value is ``U(0, 1)`` (exact level
#: ``alpha`` given the release); ``null="auto"`` (experimental, not calibrated) gives it
#: the sampled null (:meth:`NoisyMomentTest._sampled`). Below it (every rank-route test
#: of the measured designs at ``n >= 10,000``, noise sd <= 0.13; Sachs and the mixed
#: networks) the delta null is kept, with its seeded outputs. Not tuned to any grid.
NONLINEAR_SD = 0.5
#: Smallest eigenvalue kept by the positive-definite projection (a public constant).
EIGEN_FLOOR = 1e-3
#: Variance inflation of a Gaussian-copula correlation ``2 sin(pi r_s / 6)`` estimated
#: from Spearman's ``r_s`` at independence: ``(pi / 3)^2`` (``Var r_s = 1/(n - 1)``).
COPULA_KAPPA = math.pi ** 2 / 9.0


@dataclass(frozen=True)
class ScoreLayout:
    """Score columns of each variable and which score columns are continuous."""

    blocks: tuple[tuple[int, ...], ...]
    continuous: tuple[bool, ...]
    #: score columns that take at most two values in every dataset of the schema
    #: (binary and one-category columns, nominal indicators): a function of the schema
    two_valued: tuple[bool, ...] = ()

    @property
    def q(self) -> int:
        return len(self.continuous)

    @property
    def n_two_valued(self) -> int:
        return sum(self.two_valued)


def _finite_in_bounds(values: Floats, col: Continuous) -> None:
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise DataValidationError(f"column {col.name!r}: continuous values must be finite "
                                  "numbers (rule: no NaN or infinite values)")
    if np.any(v < col.lower) or np.any(v > col.upper):
        raise DataValidationError(f"column {col.name!r}: a value is outside the declared "
                                  f"bounds [{col.lower!r}, {col.upper!r}] (rule: continuous "
                                  "values lie within their bounds)")


def _codes(values: NDArray[np.generic], name: str, k: int) -> NDArray[np.int64]:
    c = np.asarray(values)
    if c.dtype.kind not in "iu" or (c.size and (int(c.min()) < 0 or int(c.max()) >= k)):
        raise DataValidationError(f"column {name!r}: codes must lie in the declared "
                                  f"categories [0, {k}) (rule: declared categories only)")
    return c.astype(np.int64)


def score_matrix(dataset: Dataset, route: str) -> tuple[Floats, ScoreLayout]:
    """The ``n x q`` score matrix of ``dataset`` for ``route`` and its layout."""
    if route not in ROUTES:
        raise CITestError(f"route: choose one of {ROUTES}, got {route!r}")
    if dataset.n < 4:
        raise CITestError("cov-pc needs at least 4 rows (n is public)")
    cols: list[Floats] = []
    bounds: list[tuple[float, float]] = []
    blocks: list[tuple[int, ...]] = []
    cont: list[bool] = []
    two: list[bool] = []
    for j, col in enumerate(dataset.schema.columns):
        raw = dataset.column(j)
        start = len(cols)
        if isinstance(col, Continuous):
            _finite_in_bounds(raw, col)
            cols.append(np.asarray(raw, dtype=np.float64))
            bounds.append((col.lower, col.upper))
            cont.append(True)
            two.append(False)
        elif isinstance(col, Ordinal) or (isinstance(col, Categorical)
                                          and col.cardinality <= 2):
            k = int(col.cardinality)
            codes = _codes(raw, col.name, k)
            cols.append(codes.astype(np.float64))
            bounds.append((0.0, float(max(k - 1, 1))))
            cont.append(False)
            two.append(k <= 2)
        elif isinstance(col, Categorical):
            k = int(col.cardinality)
            codes = _codes(raw, col.name, k)
            for level in range(k - 1):  # the last category is the reference
                cols.append((codes == level).astype(np.float64))
                bounds.append((0.0, 1.0))
                cont.append(False)
                two.append(True)
        else:  # pragma: no cover - every schema column kind is handled above
            raise CITestError(f"column {col.name!r}: unsupported column kind")
        blocks.append(tuple(range(start, len(cols))))
    layout = ScoreLayout(tuple(blocks), tuple(cont), tuple(two))
    if route == "pearson":
        return pearson_scores(cols, bounds), layout
    return rank_scores(np.column_stack(cols)), layout


def correlation_from_moments(moments: Floats, layout: ScoreLayout, route: str,
                             floor: float) -> Floats:
    """The projected correlation matrix of a whole (noisy) moment vector (see
    :func:`correlation_of_matrix`). Post-processing of the release only."""
    g = moment_matrix(moments, layout.q, route == "pearson")
    return correlation_of_matrix(g, np.asarray(layout.continuous), route, floor)


def correlation_of_matrix(g: Floats, continuous: NDArray[np.bool_], route: str,
                          floor: float) -> Floats:
    """Correlation matrix (batched over leading axes) of a symmetric (noisy) moment
    matrix ``g`` (Pearson route: ``k + 1`` rows, the first the means; rank route: ``k``):
    variances floored at ``floor``, entries clipped to ``[-1, 1]``, copula map
    ``2 sin(pi r / 6)`` on pairs of columns flagged ``continuous`` (rank route; the
    tester flags them only when all columns of its test are continuous), then projected onto
    the positive-definite matrices (eigenvalues floored at :data:`EIGEN_FLOOR`) with unit
    diagonal."""
    if route == "pearson":
        m = g[..., 0, 1:]
        cov = g[..., 1:, 1:] - m[..., :, None] * m[..., None, :]
    else:
        cov = g
    q = cov.shape[-1]
    d = np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), floor))
    c = np.clip(cov / (d[..., :, None] * d[..., None, :]), -1.0, 1.0)
    if route == "rank":
        both = continuous[..., :, None] & continuous[..., None, :]
        c = np.where(both, 2.0 * np.sin(math.pi * c / 6.0), c)
    idx = np.arange(q)
    c[..., idx, idx] = 1.0
    w, v = np.linalg.eigh(c)
    w = np.maximum(w, EIGEN_FLOOR)
    c = (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)
    s = np.sqrt(np.diagonal(c, axis1=-2, axis2=-1))
    c = c / (s[..., :, None] * s[..., None, :])
    c[..., idx, idx] = 1.0
    out: Floats = c
    return out


def _partials(sub: Floats, kx: int, ky: int) -> tuple[Floats, Floats]:
    """Partial correlations of the first ``kx`` columns with the next ``ky`` given all
    others (batched), and the precision matrix."""
    prec = np.asarray(np.linalg.inv(sub), dtype=np.float64)
    diag = np.sqrt(np.diagonal(prec, axis1=-2, axis2=-1))
    block = prec[..., :kx, kx:kx + ky]
    r = np.asarray(-block / (diag[..., :kx, None] * diag[..., None, kx:kx + ky]),
                   dtype=np.float64)
    out: Floats = prec
    return r.reshape(*r.shape[:-2], kx * ky), out


def _cg_chain(c: Floats, kc: int) -> tuple[Floats, Floats, Floats, Floats]:
    """The conditional-Gaussian chain of a batch of rank-scale correlation matrices
    ``c`` whose first ``kc`` columns are continuous and the rest discrete: the residual
    covariance of the continuous block given the discrete one ``A = C_KK - C_KD W``
    (``W = C_DD^-1 C_DK``), its correlation ``R`` (clipped to ``[-1, 1]``), and the
    copula-scale matrix ``M = 2 sin(pi R / 6)`` projected onto the positive-definite
    matrices (eigenvalues floored at :data:`EIGEN_FLOOR`, unit diagonal). Returns
    ``(M, R, A, W)``."""
    ckd = c[..., :kc, kc:]
    wmat = np.linalg.solve(c[..., kc:, kc:], np.swapaxes(ckd, -1, -2))
    a = c[..., :kc, :kc] - ckd @ wmat
    sd = np.sqrt(np.maximum(np.diagonal(a, axis1=-2, axis2=-1), EIGEN_FLOOR))
    a_out = a.copy()
    ik = np.arange(kc)
    a_out[..., ik, ik] = sd * sd
    rr = np.clip(a / (sd[..., :, None] * sd[..., None, :]), -1.0, 1.0)
    rr[..., ik, ik] = 1.0
    m = 2.0 * np.sin(math.pi * rr / 6.0)
    m[..., ik, ik] = 1.0
    w, v = np.linalg.eigh(m)
    m = (v * np.maximum(w, EIGEN_FLOOR)[..., None, :]) @ np.swapaxes(v, -1, -2)
    d = np.sqrt(np.diagonal(m, axis1=-2, axis2=-1))
    m = m / (d[..., :, None] * d[..., None, :])
    m[..., ik, ik] = 1.0
    f = np.float64
    return (np.asarray(m, dtype=f), np.asarray(rr, dtype=f), np.asarray(a_out, dtype=f),
            np.asarray(wmat, dtype=f))


class NoisyMomentTest:
    """The CI tester of one released moment vector (see the module docstring).

    ``released``: the (noisy) :func:`dpcg.stats.suffstat.moment_vector`; ``sigma``: the
    public standard deviation of the release noise per coordinate (0: exact, the
    analytic chi-square null); ``draws``: null replicates per test; ``rng``: NON-privacy
    randomness for the replicates (e.g. ``Session.auxiliary_generator()``).

    Each test works on the sub-matrix of the moments of X's, Y's and S's score columns:
    the point estimate is the partial correlations of the projected correlation of that
    sub-matrix. Its null law (``sigma > 0``) is simulated: the sub-matrix is moved to the
    nearest null (the ``X x Y`` correlation block replaced by ``C_XZ C_ZZ^-1 C_ZY``, the
    other moments kept), ``draws`` replicates of the public release noise are added and
    the same post-processing is applied, and the Fisher sampling draw is added; the
    p-value is the rank of the observed Wald statistic among the replicates'.
    """

    def __init__(self, released: Floats, layout: ScoreLayout, n: int, route: str,
                 sigma: float, *, alpha: float = 0.05, draws: int = 200,
                 rng: np.random.Generator | None = None,
                 names: tuple[str, ...] | None = None, null: str = "delta") -> None:
        if route not in ROUTES:
            raise CITestError(f"route: choose one of {ROUTES}, got {route!r}")
        if not (isinstance(sigma, int | float) and math.isfinite(sigma) and sigma >= 0):
            raise CITestError(f"sigma: expected a finite number >= 0, got {sigma!r}")
        if isinstance(draws, bool) or not isinstance(draws, int) or draws < (
                2 if sigma > 0 and null in ("simulated", "auto") else 0):
            raise CITestError(f"draws: expected an integer >= 2, got {draws!r}")
        if not 0 < alpha < 1:
            raise CITestError(f"alpha: expected a number in (0, 1), got {alpha!r}")
        if null not in NULLS:
            raise CITestError(f"null: choose one of {NULLS}, got {null!r}")
        self.null = null
        self.layout = layout
        self.n = int(n)
        self.route = route
        self.sigma = float(sigma)
        self.alpha = float(alpha)
        self.draws = draws
        self.names = names
        self.rng = rng if rng is not None else np.random.default_rng()
        vec = np.asarray(released, dtype=np.float64)
        self.moments = moment_matrix(vec, layout.q, route == "pearson")
        # a variance below the release noise is noise: floor it there (public)
        self.floor = max(self.sigma, 1e-9)
        self._cont = np.asarray(layout.continuous)
        self._pad: tuple[Floats, NDArray[np.bool_], int] | None = None
        self.correlation = correlation_of_matrix(self.moments, self._cont, route, self.floor)

    def _cols(self, v: int) -> list[int]:
        return list(self.layout.blocks[v])

    def partial(self, x: int, y: int, S: tuple[int, ...]) -> Floats:
        """The partial correlations of X's with Y's score columns given the rest (from
        the whole projected correlation matrix)."""
        xs, ys = self._cols(x), self._cols(y)
        idx = xs + ys + [c for s in S for c in self._cols(s)]
        r, _ = _partials(self.correlation[np.ix_(idx, idx)], len(xs), len(ys))
        return r

    def _sub(self, idx: list[int]) -> Floats:
        rows = [0, *(1 + i for i in idx)] if self.route == "pearson" else idx
        out: Floats = self.moments[np.ix_(rows, rows)]
        return out

    def _null_moments(self, sub: Floats, c: Floats, kx: int, ky: int,
                      cont: NDArray[np.bool_]) -> Floats:
        """The moments of the nearest null: the projected correlation ``c`` of ``sub``
        with its ``X x Y`` block replaced by ``C_XZ C_ZZ^-1 C_ZY`` (copula map undone),
        at ``sub``'s (floored) variances and means."""
        s = c.shape[0]
        xs, ys, zs = np.arange(kx), np.arange(kx, kx + ky), np.arange(kx + ky, s)
        if zs.size:
            rho0 = c[np.ix_(xs, zs)] @ np.linalg.solve(c[np.ix_(zs, zs)], c[np.ix_(zs, ys)])
        else:
            rho0 = np.zeros((kx, ky))
        c0 = c.copy()
        c0[np.ix_(xs, ys)] = rho0
        c0[np.ix_(ys, xs)] = rho0.T
        if self.route == "rank":
            both = cont[:, None] & cont[None, :]
            c0 = np.where(both, 6.0 / math.pi * np.arcsin(np.clip(c0 / 2.0, -0.5, 0.5)), c0)
        off = 1 if self.route == "pearson" else 0
        if off:
            m = sub[0, 1:]
            var = np.diag(sub)[1:] - m * m
        else:
            m = np.zeros(s)
            var = np.diag(sub).copy()
        d = np.sqrt(np.maximum(var, self.floor))
        g0 = sub.copy()
        inner = c0 * np.outer(d, d) + np.outer(m, m)
        g0[off:, off:] = inner
        return g0

    @staticmethod
    def _null_correlation(c: Floats, kx: int, ky: int) -> Floats:
        """``c`` (batched over leading axes) with its ``X x Y`` block replaced by
        ``C_XZ C_ZZ^-1 C_ZY`` (the nearest correlation matrix under which the partial
        correlations tested are zero)."""
        s = c.shape[-1]
        c0 = c.copy()
        if s > kx + ky:
            czz = c[..., kx + ky:, kx + ky:]
            rho0 = c[..., :kx, kx + ky:] @ np.linalg.solve(czz, c[..., kx + ky:, kx:kx + ky])
        else:
            rho0 = np.zeros((*c.shape[:-2], kx, ky))
        c0[..., :kx, kx:kx + ky] = rho0
        c0[..., kx:kx + ky, :kx] = np.swapaxes(rho0, -1, -2)
        return c0

    def _delta_noise_cov(self, sub: Floats, c: Floats, kx: int, ky: int,
                         cont: NDArray[np.bool_]) -> Floats:
        """Covariance (``k x k``, ``k = kx * ky``; batched over leading axes of ``sub``,
        ``c`` and ``cont``) of the release noise's effect on the partial correlations, to
        first order at the nearest null (the delta method; docs/continuous.md, "The
        tests"). The noise is ``N(0, sigma^2)`` on every released coordinate of ``sub``
        (Pearson: not on the constant ``(0, 0)`` entry); the map from it to the partial
        correlations is moments -> covariance (Pearson: minus the means' products) ->
        correlation -> copula map (all-continuous rank tests) -> partial correlations,
        differentiated in closed form. At the null point every partial correlation
        tested is zero, so ``dr_xy = <sym(p_x p_y^T), dC> / sqrt(P_xx P_yy)`` with ``P``
        the inverse correlation and ``p_x`` its columns."""
        s = c.shape[-1]
        c0 = self._null_correlation(c, kx, ky)
        prec = np.linalg.inv(c0)
        dg = np.sqrt(np.diagonal(prec, axis1=-2, axis2=-1))
        px = prec[..., :, :kx] / dg[..., None, :kx]                      # (.., s, kx)
        py = prec[..., :, kx:kx + ky] / dg[..., None, kx:kx + ky]        # (.., s, ky)
        # S_t = sym(p_x p_y^T) for every tested pair t = (x, y): (.., k, s, s)
        outer = np.einsum("...ax,...by->...xyab", px, py)
        outer = outer.reshape(*outer.shape[:-4], kx * ky, s, s)
        sym = 0.5 * (outer + np.swapaxes(outer, -1, -2))
        # the copula map's derivative (pre-map correlation from the null point)
        if self.route == "rank":
            both = cont[..., :, None] & cont[..., None, :]
        else:
            both = np.zeros((*c.shape[:-2], s, s), dtype=bool)
        pre = np.where(both, 6.0 / math.pi * np.arcsin(np.clip(c0 / 2.0, -0.5, 0.5)), c0)
        phi = np.where(both, math.pi / 3.0 * np.cos(math.pi * pre / 6.0), 1.0)
        w = sym * phi[..., None, :, :]
        idx = np.arange(s)
        w[..., idx, idx] = 0.0
        return self._moment_noise_cov(sub, w, pre)

    def _moment_noise_cov(self, sub: Floats, w: Floats, pre: Floats) -> Floats:
        """The release noise's first-order covariance on ``k`` statistics whose gradient
        with respect to the off-diagonal entries of the (pre-map) correlation matrix
        ``pre`` of ``sub`` is ``w`` (``.., k, s, s``, symmetric, zero diagonal): pushed
        back through correlation -> covariance -> moments (:meth:`_delta_noise_cov`)."""
        s = pre.shape[-1]
        idx = np.arange(s)
        # gradient with respect to the covariance entries (d: the floored sds)
        diag = np.diagonal(sub, axis1=-2, axis2=-1)
        if self.route == "pearson":
            m = sub[..., 0, 1:]
            var = diag[..., 1:] - m * m
        else:
            m = np.zeros(diag.shape)
            var = diag
        d = np.sqrt(np.maximum(var, self.floor))
        dd = d[..., :, None] * d[..., None, :]
        kmat = w / dd[..., None, :, :]
        kmat[..., idx, idx] = (-np.einsum("...tab,...ab->...ta", w, pre)
                               / (d * d)[..., None, :])
        iu = np.triu_indices(s)
        mult = np.where(iu[0] == iu[1], 1.0, 2.0)
        grad = kmat[..., iu[0], iu[1]] * mult                            # (.., k, D)
        if self.route == "pearson":
            mean_grad = -2.0 * np.einsum("...tab,...b->...ta", kmat, m)  # (.., k, s)
            grad = np.concatenate([mean_grad, grad], axis=-1)
        out: Floats = (self.sigma ** 2) * (grad @ np.swapaxes(grad, -1, -2))
        return out

    def _query(self, x: int, y: int, S: tuple[int, ...]) -> tuple[int, int, list[int]]:
        x, y, S = validate_query(x, y, S, len(self.layout.blocks))
        xs, ys = self._cols(x), self._cols(y)
        return len(xs), len(ys), xs + ys + [c for v in S for c in self._cols(v)]

    def _padded(self, extra: int) -> tuple[Floats, NDArray[np.bool_]]:
        """The moment matrix and continuity flags with ``extra`` padding columns: unit
        variance, zero mean, uncorrelated with everything (flagged continuous, so they
        change neither the copula rule nor any partial correlation)."""
        if self._pad is None or self._pad[2] < extra:
            q = self.layout.q
            off = 1 if self.route == "pearson" else 0
            g = np.zeros((q + off + extra, q + off + extra))
            g[:q + off, :q + off] = self.moments
            g[q + off:, q + off:] = np.eye(extra)
            self._pad = (g, np.concatenate([self._cont, np.ones(extra, dtype=bool)]), extra)
        return self._pad[0], self._pad[1]

    def _analytic(self, idx: NDArray[np.intp], kx: int, ky: int,
                  sizes: NDArray[np.intp] | None = None,
                  dof: NDArray[np.intp] | None = None
                  ) -> tuple[Floats, Floats, Floats]:
        """Wald statistics and chi-square p-values of a batch of queries with ``kx`` X
        and ``ky`` Y columns (``idx``: ``B x s`` score columns, X's first, then Y's,
        then S's, padded with columns ``>= q`` of :meth:`_padded`; ``sizes``: each
        query's own number of columns; ``dof``: its own ``kx * ky``): the exact null
        (``sigma = 0``) or the delta-method null. Vectorised over the batch. The third
        output is each query's largest first-order noise variance on one of its partial
        correlations (0 with ``sigma = 0``; swamped above ``NONLINEAR_SD ** 2``)."""
        b, s = idx.shape
        sizes = np.full(b, s) if sizes is None else sizes
        moments, contv = self._padded(int(s - sizes.min()))
        dof = np.full(b, kx * ky) if dof is None else dof
        cont: NDArray[np.bool_] = np.asarray(contv[idx], dtype=bool)
        allc: NDArray[np.bool_] = np.asarray(cont.all(axis=1), dtype=bool)
        # the copula map only when every column of the test is continuous: a discrete
        # column anywhere keeps the whole test on the rank (score) scale, where
        # conditioning on binary / one-hot columns is exact (docs/continuous.md)
        cont = cont & allc[:, None]
        rows = (np.concatenate([np.zeros((b, 1), dtype=np.intp), idx + 1], axis=1)
                if self.route == "pearson" else idx)
        sub = moments[rows[:, :, None], rows[:, None, :]]
        c = correlation_of_matrix(sub, cont, self.route, self.floor)
        r, prec = _partials(c, kx, ky)
        dx = np.sqrt(np.diagonal(prec, axis1=-2, axis2=-1))
        rx = prec[:, :kx, :kx] / (dx[:, :kx, None] * dx[:, None, :kx])
        ry = (prec[:, kx:kx + ky, kx:kx + ky]
              / (dx[:, kx:kx + ky, None] * dx[:, None, kx:kx + ky]))
        k = kx * ky
        kappa2 = np.where(allc & (self.route == "rank"), COPULA_KAPPA, 1.0)
        n_eff = np.maximum(self.n - sizes - 1, 1)
        samp = (np.einsum("bij,bkl->bikjl", rx, ry).reshape(b, k, k)
                * (kappa2 / n_eff)[:, None, None])
        if self.sigma == 0:
            v = samp
            nvar = np.zeros(b)
        else:
            noise = self._delta_noise_cov(sub, c, kx, ky, cont)
            v = samp + noise
            nvar = np.diagonal(noise, axis1=-2, axis2=-1).max(axis=-1)
        stat = np.einsum("bi,bi->b", r, np.linalg.solve(v, r[..., None])[..., 0])
        from scipy.special import chdtrc, erfc

        pvalue = np.where(dof == 1, erfc(np.sqrt(np.maximum(stat, 0.0) / 2.0)),
                          chdtrc(np.maximum(dof, 1), stat)).astype(np.float64)
        return stat, pvalue, np.asarray(nvar, dtype=np.float64)

    def _is_cg(self, kx: int, ky: int, idx: list[int]) -> bool:
        """Whether a query takes the conditional-Gaussian chain (:meth:`_analytic_cg`):
        rank route, analytic null (``sigma = 0`` or ``null="delta"``), X and Y one
        continuous score column each, and both continuous and discrete score columns in
        S. A function of the public layout and options only."""
        if self.route != "rank" or kx != 1 or ky != 1 or (
                self.sigma > 0 and self.null != "delta"):
            return False
        cont = self._cont[idx]
        return bool(cont[0] and cont[1] and cont[2:].any() and not cont[2:].all())

    def _cg_cols(self, parsed: Sequence[tuple[int, int, list[int]]]
                 ) -> tuple[NDArray[np.intp], int, NDArray[np.intp]]:
        """The batch of :meth:`_analytic_cg`: each query's columns as ``X, Y``, its
        continuous S columns padded to the batch's widest, then its discrete S columns
        padded likewise (padding: independent unit columns of :meth:`_padded`); the
        width of the continuous block ``2 + wc`` and each query's real size."""
        q = self.layout.q
        conts = [[c for c in idx[2:] if self._cont[c]] for _, _, idx in parsed]
        discs = [[c for c in idx[2:] if not self._cont[c]] for _, _, idx in parsed]
        wc = max(len(c) for c in conts)
        wd = max(len(d) for d in discs)
        cols = np.empty((len(parsed), 2 + wc + wd), dtype=np.intp)
        for i, ((_, _, idx), zc, zd) in enumerate(zip(parsed, conts, discs, strict=True)):
            pads = iter(range(q, q + wc + wd))
            cols[i] = (idx[:2] + zc + [next(pads) for _ in range(wc - len(zc))]
                       + zd + [next(pads) for _ in range(wd - len(zd))])
        sizes = np.array([len(idx) for _, _, idx in parsed], dtype=np.intp)
        return cols, 2 + wc, sizes

    def _analytic_cg(self, idx: NDArray[np.intp], kc: int, sizes: NDArray[np.intp]
                     ) -> tuple[Floats, Floats, Floats]:
        """Wald statistics, p-values and first-order noise variances of a batch of
        **conditional-Gaussian** queries (:meth:`_is_cg`; ``idx`` from :meth:`_cg_cols`:
        the first ``kc`` columns continuous, X and Y first, the rest discrete). On the
        rank scale, the discrete columns are partialled out first (``A = C_KK - C_KD
        C_DD^-1 C_DK``, a linear adjustment: exact for one binary or nominal column);
        the continuous block's residual correlation ``R`` is then mapped to the copula
        scale ``2 sin(pi R / 6)`` (projected onto the positive-definite matrices) and X
        and Y's partial correlation given the continuous S columns is tested with
        ``kappa = pi^2/9``. (Partialling the discrete columns out on the rank scale and
        leaving the continuous ones there, the previous rule, is biased when a discrete
        column shifts continuous ones: docs/continuous.md.) The noise null is the delta
        method through the whole chain (:meth:`_cg_noise_cov`). Vectorised."""
        b, s = idx.shape
        moments, _ = self._padded(int(s - sizes.min()))
        sub = moments[idx[:, :, None], idx[:, None, :]]
        c = correlation_of_matrix(sub, np.zeros(s, dtype=bool), "rank", self.floor)
        m, _, a, wmat = _cg_chain(c, kc)
        r, _ = _partials(m, 1, 1)
        r = r[:, 0]
        n_eff = np.maximum(self.n - sizes - 1, 1)
        var = COPULA_KAPPA / n_eff
        if self.sigma == 0:
            nvar = np.zeros(b)
        else:
            nvar = self._cg_noise_cov(sub, c, m, a, wmat, kc)
            var = var + nvar
        stat = r * r / var
        from scipy.special import erfc

        pvalue = np.asarray(erfc(np.sqrt(np.maximum(stat, 0.0) / 2.0)), dtype=np.float64)
        return np.asarray(stat, dtype=np.float64), pvalue, np.asarray(nvar, dtype=np.float64)

    def _cg_noise_cov(self, sub: Floats, c: Floats, m: Floats, a: Floats, wmat: Floats,
                      kc: int) -> Floats:
        """First-order variance of the release noise's effect on the conditional-
        Gaussian partial correlation (:meth:`_analytic_cg`) at its nearest null (the
        X-Y entry of the copula-scale matrix ``m`` set to ``m_XZ m_ZZ^-1 m_ZY``): the
        gradient with respect to ``m`` is ``sym(p_x p_y^T) / sqrt(P_xx P_yy)``; it goes
        back through the copula map (``pi/3 cos(pi R/6)``), the normalisation of the
        residual covariance ``A`` (diagonal ``a``), the Schur complement (``W = C_DD^-1
        C_DK``: ``G_C = [[G_A, -G_A W^T], [-W G_A, W G_A W^T]]``) and then correlation
        -> moments as in :meth:`_moment_noise_cov`."""
        b, s = c.shape[0], c.shape[-1]
        m0 = m.copy()
        if kc > 2:
            rho0 = np.einsum("bi,bi->b", m[:, 0, 2:],
                             np.linalg.solve(m[:, 2:, 2:], m[:, 2:, 1:2])[..., 0])
        else:
            rho0 = np.zeros(b)
        m0[:, 0, 1] = rho0
        m0[:, 1, 0] = rho0
        prec = np.linalg.inv(m0)
        dg = np.sqrt(np.diagonal(prec, axis1=-2, axis2=-1))
        px = prec[:, :, 0] / dg[:, None, 0]
        py = prec[:, :, 1] / dg[:, None, 1]
        g_m = 0.5 * (px[:, :, None] * py[:, None, :] + py[:, :, None] * px[:, None, :])
        ik = np.arange(kc)
        r0 = 6.0 / math.pi * np.arcsin(np.clip(m0 / 2.0, -0.5, 0.5))
        r0[:, ik, ik] = 1.0
        g_r = g_m * (math.pi / 3.0 * np.cos(math.pi * r0 / 6.0))
        g_r[:, ik, ik] = 0.0
        ad = np.diagonal(a, axis1=-2, axis2=-1)
        sd = np.sqrt(ad)
        g_a = g_r / (sd[:, :, None] * sd[:, None, :])
        g_a[:, ik, ik] = -np.einsum("bij,bij->bi", g_r, r0) / ad
        g_c = np.zeros((b, s, s))
        g_c[:, :kc, :kc] = g_a
        ga_wt = g_a @ np.swapaxes(wmat, -1, -2)                         # (b, kc, d)
        g_c[:, :kc, kc:] = -ga_wt
        g_c[:, kc:, :kc] = -np.swapaxes(ga_wt, -1, -2)
        g_c[:, kc:, kc:] = wmat @ ga_wt
        ids = np.arange(s)
        g_c[:, ids, ids] = 0.0
        # the rank-scale correlation at the null point: only the X-Y entry moves
        pre = c.copy()
        a0xy = r0[:, 0, 1] * sd[:, 0] * sd[:, 1]
        xy = a0xy + np.einsum("bi,bi->b", c[:, 0, kc:], wmat[:, :, 1])
        pre[:, 0, 1] = xy
        pre[:, 1, 0] = xy
        out: Floats = self._moment_noise_cov(sub, g_c[:, None], pre)[:, 0, 0]
        return out

    def _sampling_draws(self, g0: Floats) -> Floats:
        """``draws`` moment matrices of ``n`` Gaussian rows whose moments are ``g0``
        (Pearson route: ``g0 = [[1, m], [m, Sigma + m m^T]]``; rank route: ``Sigma``):
        ``Sigma* ~ Wishart(n - 1, Sigma) / (n - 1)`` by the Bartlett decomposition and
        ``m* ~ N(m, Sigma / n)`` (independent, as for Gaussian rows). Vectorised."""
        off = 1 if self.route == "pearson" else 0
        m = g0[0, 1:] if off else np.zeros(g0.shape[0])
        sig = g0[off:, off:] - np.outer(m, m)
        sig = 0.5 * (sig + sig.T)
        w, v = np.linalg.eigh(sig)
        root = v * np.sqrt(np.maximum(w, 0.0))  # root @ root.T = Sigma (PSD part)
        p = sig.shape[0]
        df = max(self.n - 1, p + 1)
        b = self.draws
        low = np.tril_indices(p, -1)
        a = np.zeros((b, p, p))
        a[:, low[0], low[1]] = self.rng.standard_normal((b, low[0].size))
        a[:, np.arange(p), np.arange(p)] = np.sqrt(
            self.rng.chisquare(df - np.arange(p), size=(b, p)))
        la = root @ a
        cov = la @ np.swapaxes(la, -1, -2) / df
        if not off:
            out: Floats = cov
            return out
        ms = m + self.rng.standard_normal((b, p)) @ root.T / math.sqrt(self.n)
        g = np.empty((b, p + 1, p + 1))
        g[:, 0, 0] = 1.0
        g[:, 0, 1:] = ms
        g[:, 1:, 0] = ms
        g[:, 1:, 1:] = cov + ms[:, :, None] * ms[:, None, :]
        return g

    def _shrunk(self, sub: Floats, c: Floats) -> Floats:
        """The centre of the sampled null: the projected correlation ``c`` with its
        off-diagonal entries shrunk towards 0 by the share of their spread that the
        release noise explains, ``lambda = min(1, mean(tau_ij^2) / mean(c_ij^2))``
        (``tau_ij = sigma / (d_i d_j)``, the noise sd of one correlation at the floored
        sds ``d``): a moment (James-Stein) estimate of the noise-free correlations, so
        that the replicates do not carry the release noise twice. Post-processing."""
        s = c.shape[0]
        if s < 2:
            return c
        diag = np.diag(sub)
        var = diag[1:] - sub[0, 1:] ** 2 if self.route == "pearson" else diag
        d = np.sqrt(np.maximum(var, self.floor))
        off = ~np.eye(s, dtype=bool)
        tau2 = (self.sigma / np.outer(d, d)) ** 2
        spread = float(np.mean(c[off] ** 2))
        lam = 1.0 if spread <= 0 else min(1.0, float(np.mean(tau2[off])) / spread)
        out: Floats = np.where(off, (1.0 - lam) * c, c)
        return out

    def _sampled(self, kx: int, ky: int, idx: list[int]) -> CIResult:
        """The sampled null of one query (``null="auto"`` when the release noise is
        large): ``draws`` replicates of the whole chain at the test's nearest null --
        the moments of ``n`` Gaussian rows drawn at the null point
        (:meth:`_sampling_draws`), plus the public release noise ``N(0, sigma^2)`` on
        every released coordinate, through the same correlation, clipping, copula map,
        projection and partial correlations as the observed statistic -- and the
        p-value the rank of the observed Wald statistic (with the replicates'
        covariance) among theirs. The sampling variation enters before the nonlinear
        steps, as it does in the data (the delta and simulated nulls add it after them,
        which a bounded, projected partial correlation cannot follow when the noise is
        large). Post-processing: the released vector, public ``n``, ``sigma`` and
        layout, and auxiliary randomness only."""
        cont = self._cont[idx]
        if not cont.all():
            cont = np.zeros_like(cont)
        sub = self._sub(idx)
        c = correlation_of_matrix(sub, cont, self.route, self.floor)
        r, _ = _partials(c, kx, ky)
        g0 = self._null_moments(sub, self._shrunk(sub, c), kx, ky, cont)
        size = g0.shape[0]
        iu = np.triu_indices(size)
        sampled = self._sampling_draws(g0)
        e = self.rng.normal(0.0, self.sigma, size=(self.draws, iu[0].size))
        if self.route == "pearson":
            e[:, 0] = 0.0  # the constant (0, 0) entry is not released
        noise = np.zeros((self.draws, size, size))
        noise[:, iu[0], iu[1]] = e
        noise[:, iu[1], iu[0]] = e
        reps, _ = _partials(correlation_of_matrix(sampled + noise, cont, self.route,
                                                  self.floor), kx, ky)
        k = kx * ky
        v = np.atleast_2d(np.cov(reps, rowvar=False)) + 1e-12 * np.eye(k)
        vinv = np.linalg.inv(v)
        wald = float(r @ vinv @ r)
        null = np.einsum("bi,ij,bj->b", reps, vinv, reps)
        pv = float((1 + np.count_nonzero(null >= wald)) / (self.draws + 1))
        return CIResult(pv > self.alpha, wald, pv)

    def test_many(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]
                  ) -> list[CIResult]:
        """A round of queries (the PC engine's batch mode): with the analytic nulls
        (``sigma = 0`` or ``null="delta"``) the queries of one shape (``kx``, ``ky``,
        number of score columns) are answered together by :meth:`_analytic`, with the
        same numbers as :meth:`test` one by one (up to rounding): the whole round is one
        batch, every query's X, Y and S blocks padded to the round's widest with
        independent unit columns (:meth:`_padded`). A padding column changes no partial
        correlation of the real columns and makes the statistic's covariance block
        diagonal (its own partial correlations are zero), so the Wald statistic and its
        ``chi^2(kx ky)`` reference (real ``kx``, ``ky``) are those of the query alone.
        The conditional-Gaussian queries (:meth:`_is_cg`) form a second batch
        (:meth:`_analytic_cg`); swamped queries then draw their uniform p-values in query
        order. The simulated null answers in order."""
        if self.sigma > 0 and self.null == "simulated":
            return [self.test(x, y, S) for x, y, S in queries]
        parsed = [self._query(x, y, S) for x, y, S in queries]
        stat, pvalue, nvar = self._round(parsed)
        wide = nvar > NONLINEAR_SD ** 2
        out = [CIResult(pv > self.alpha, st_, pv)
               for st_, pv in zip(stat.tolist(), pvalue.tolist(), strict=True)]
        swamped = np.flatnonzero(wide).tolist()
        if self.null == "auto":
            for i in swamped:
                out[i] = self._sampled(*parsed[i])
        elif swamped:
            # in query order: the same draws as test() one by one
            for i, u in zip(swamped, self._swamped_pvalues(len(swamped)), strict=True):
                out[i] = CIResult(u > self.alpha, out[i].statistic, u)
        return out

    def _round(self, parsed: Sequence[tuple[int, int, list[int]]]
               ) -> tuple[Floats, Floats, Floats]:
        """Statistics, analytic p-values and largest first-order noise variances of a
        round of parsed queries: the conditional-Gaussian ones (:meth:`_is_cg`) in one
        batch of :meth:`_analytic_cg`, the others in one padded batch of
        :meth:`_analytic`."""
        b = len(parsed)
        stat, pvalue, nvar = np.zeros(b), np.zeros(b), np.zeros(b)
        flags = [self._is_cg(*p) for p in parsed]
        cgi = [i for i, f in enumerate(flags) if f]
        rest = [i for i, f in enumerate(flags) if not f]
        if cgi:
            cols, kc, sizes = self._cg_cols([parsed[i] for i in cgi])
            st_, pv, nv = self._analytic_cg(cols, kc, sizes)
            stat[cgi], pvalue[cgi], nvar[cgi] = st_, pv, nv
        if rest:
            sel = [parsed[i] for i in rest]
            q = self.layout.q
            kxm = max(kx for kx, _, _ in sel)
            kym = max(ky for _, ky, _ in sel)
            width = max(kxm + kym + len(idx) - kx - ky for kx, ky, idx in sel)
            cols = np.empty((len(sel), width), dtype=np.intp)
            for i, (kx, ky, idx) in enumerate(sel):
                pads = iter(range(q, q + width))
                tail = idx[kx + ky:]
                cols[i] = (idx[:kx] + [next(pads) for _ in range(kxm - kx)]
                           + idx[kx:kx + ky] + [next(pads) for _ in range(kym - ky)] + tail
                           + [next(pads) for _ in range(width - kxm - kym - len(tail))])
            sizes = np.array([len(idx) for _, _, idx in sel], dtype=np.intp)
            dof = np.array([kx * ky for kx, ky, _ in sel], dtype=np.intp)
            st_, pv, nv = self._analytic(cols, kxm, kym, sizes, dof)
            stat[rest], pvalue[rest], nvar[rest] = st_, pv, nv
        return stat, pvalue, nvar

    def _swamped_pvalues(self, count: int) -> list[float]:
        """The p-values of ``count`` swamped tests (``null="delta"``: first-order noise
        sd above :data:`NONLINEAR_SD` on one of their partial correlations): independent
        ``U(0, 1)`` draws from the auxiliary generator (not privacy noise), so that such a
        test rejects with probability exactly ``alpha`` given the release, under the null
        and under any alternative (docs/privacy/algorithm-cov-pc.md, "Swamped tests").
        ``U`` is drawn as ``1 - random()``, in ``(0, 1]``."""
        u: list[float] = (1.0 - self.rng.random(count)).tolist()
        return u

    def noise_sd(self, x: int, y: int, S: tuple[int, ...]) -> float:
        """The largest first-order (delta-method) standard deviation of the release noise
        on one of the test's partial correlations, at its nearest null (0 without
        release noise): the public quantity compared with :data:`NONLINEAR_SD`.
        Post-processing of the release."""
        if self.sigma == 0:
            return 0.0
        _, _, nvar = self._round([self._query(x, y, S)])
        return float(np.sqrt(max(float(nvar[0]), 0.0)))

    def swamped(self, x: int, y: int, S: tuple[int, ...]) -> bool:
        """Whether the release noise swamps the test (:meth:`noise_sd` above
        :data:`NONLINEAR_SD`): with ``null="delta"`` its p-value is then a ``U(0, 1)``
        draw (:meth:`_swamped_pvalues`), with ``null="auto"`` the sampled null."""
        return self.noise_sd(x, y, S) > NONLINEAR_SD

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        kx, ky, idx = self._query(x, y, S)
        if self.sigma == 0 or self.null in ("delta", "auto"):
            return self.test_many([(x, y, S)])[0]
        # the copula map only when every column of the test is continuous: a discrete
        # column anywhere keeps the whole test on the rank (score) scale, where
        # conditioning on binary / one-hot columns is exact (docs/continuous.md)
        cont = self._cont[idx]
        if not cont.all():
            cont = np.zeros_like(cont)
        sub = self._sub(idx)
        c = correlation_of_matrix(sub, cont, self.route, self.floor)
        r, prec = _partials(c, kx, ky)
        dx = np.sqrt(np.diag(prec))
        rx = prec[:kx, :kx] / np.outer(dx[:kx], dx[:kx])
        ry = prec[kx:kx + ky, kx:kx + ky] / np.outer(dx[kx:kx + ky], dx[kx:kx + ky])
        kappa = math.sqrt(COPULA_KAPPA) if self.route == "rank" and cont.all() else 1.0
        scale = np.full(kx * ky, kappa)
        n_eff = max(self.n - len(idx) - 1, 1)
        samp = np.kron(rx, ry) * np.outer(scale, scale) / n_eff
        k = kx * ky
        g0 = self._null_moments(sub, c, kx, ky, cont)
        size = g0.shape[0]
        iu = np.triu_indices(size)
        noise = np.zeros((self.draws, size, size))
        e = self.rng.normal(0.0, self.sigma, size=(self.draws, iu[0].size))
        if self.route == "pearson":
            e[:, 0] = 0.0  # the constant (0, 0) entry is not released
        noise[:, iu[0], iu[1]] = e
        noise[:, iu[1], iu[0]] = e
        reps, _ = _partials(correlation_of_matrix(g0[None] + noise, cont, self.route,
                                                  self.floor), kx, ky)
        v = np.atleast_2d(np.cov(reps, rowvar=False)) + samp
        reps = reps + self.rng.standard_normal((self.draws, k)) @ np.linalg.cholesky(samp).T
        vinv = np.linalg.inv(v)
        wald = float(r @ vinv @ r)
        null = np.einsum("bi,ij,bj->b", reps, vinv, reps)
        pv = float((1 + np.count_nonzero(null >= wald)) / (self.draws + 1))
        return CIResult(pv > self.alpha, wald, pv)


def _build_copula(ctx: TestContext[NoOptions]) -> NoisyMomentTest:
    scores, layout = score_matrix(ctx.dataset, "rank")
    return NoisyMomentTest(moment_vector(scores, False), layout, ctx.dataset.n, "rank", 0.0,
                           alpha=ctx.alpha, draws=0, names=ctx.dataset.names)


register_test(TestSpec(
    name="copula", options=NoOptions, build=_build_copula, data="any",
    description="Gaussian-copula test from the Spearman matrix (midranks; nominal columns "
                "one-hot); any schema (non-private reference of cov-pc --test cov-rank)"))
