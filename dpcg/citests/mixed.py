"""A non-private CI test for mixed discrete/continuous columns: the degenerate-Gaussian
likelihood-ratio test (Andrews, Ramsey and Cooper 2019; Tetrad's ``DG-LRT``).

Every column is embedded in a block of real columns:

* a continuous column -> itself, centred and scaled to unit variance (one column);
* a discrete column with ``c`` categories -> the indicators ``1{V = k}`` of its
  categories, all but one: ``c - 1`` columns. The category left out is the first one
  (in code order) that occurs in the data; categories that do not occur get no column
  (an indicator that is zero in every row is a zero column, which would make every
  covariance singular). A column with one value in every row embeds to nothing and is
  independent of everything (``p = 1``).

The embedded rows are treated as Gaussian. ``X _||_ Y | S`` is tested by the Gaussian
likelihood ratio of the regression of the ``X`` block on ``Y`` and ``S`` against the
regression on ``S`` alone, i.e. Wilks' test of zero partial canonical correlations:

    Lambda = det Sigma_{X|YS} / det Sigma_{X|S} = prod_i (1 - rho_i^2)

where ``rho_i`` are the canonical correlations between the ``X`` and ``Y`` blocks after
both are linearly residualised on the ``S`` block. The statistic is Bartlett's
``-(n - 1 - d_S - (d_X + d_Y + 1) / 2) log Lambda``, referred to ``chi^2`` with
``d_X d_Y`` degrees of freedom (``d_*`` the ranks of the embedded blocks). The test is
symmetric in ``X`` and ``Y``.

It reduces to familiar tests: two continuous columns give ``-n' log(1 - r^2)`` with
``r`` the partial correlation (the likelihood-ratio twin of Fisher-z); a discrete ``X``
with a discrete ``S`` alone is a test on the stratum means, exact for one discrete
conditioning column (its indicators span every function of it).

What it assumes: the test checks zero *linear* partial association of the embedded
blocks. Under ``X _||_ Y | S`` that association is zero whenever ``E[embed(X) | S]`` or
``E[embed(Y) | S]`` is linear in ``embed(S)`` -- always for one discrete ``S`` column and
for linear-Gaussian continuous parts; with several conditioning columns and non-linear
conditional means the level is approximate (as in Tetrad's DG test). It is the
non-private member of the mixed family; nothing here is released.

Cost: one pass over the rows when the test is built (the ``D x D`` covariance of the
embedded table, accumulated over row chunks so the ``n x D`` embedding is never held
whole); each query then costs ``O(D_q^3)`` on the ``D_q <= D`` embedded columns it
touches, independent of ``n``.

Registered as ``--test dg-lrt`` (``data="any"``: discrete, continuous and mixed
schemas).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import chdtrc

from dpcg.citests.base import CIResult, CITest, validate_query
from dpcg.citests.nonprivate import Key, _CachedTest, _check_alpha
from dpcg.citests.registry import NoOptions, TestContext, TestSpec, register_test
from dpcg.data.dataset import Dataset
from dpcg.errors import CITestError

__all__ = ["DegenerateGaussianTest", "EmbeddedCovariance", "WilksResult", "embedded_covariance",
           "wilks_test"]

Floats = NDArray[np.float64]
Index = NDArray[np.intp]

#: Rows embedded at a time when the covariance is accumulated (bounds the memory to
#: ``CHUNK x D`` floats).
CHUNK = 16_384
#: Eigenvalues below ``RANK_TOL`` times the largest are treated as zero (rank of a block).
RANK_TOL = 1e-10
#: Largest embedded width, counted from the declared schema (``c - 1`` per discrete
#: column, 1 per continuous one): the covariance is ``D x D`` floats.
MAX_EMBEDDED = 2048
#: Largest number of floats in one embedded row chunk (``chunk x D``).
MAX_CHUNK_FLOATS = 2**24


@dataclass(frozen=True)
class EmbeddedCovariance:
    """The covariance of the embedded table and where each column's block lies.

    ``cov`` is ``D x D`` (divisor ``n``); ``blocks[j]`` the embedded column indices of
    column ``j`` (empty for a column with one value in every row).
    """

    cov: Floats
    blocks: tuple[Index, ...]
    n: int


def _check_width(dataset: Dataset) -> None:
    """Refuse a schema whose declared embedding is wider than :data:`MAX_EMBEDDED`
    (public information only: the declared cardinalities), naming the widest columns."""
    widths = [(int(c.cardinality) - 1 if c.cardinality is not None else 1, c.name)
              for c in dataset.schema]
    if sum(w for w, _ in widths) > MAX_EMBEDDED:
        widest = [name for _, name in sorted(widths, key=lambda t: -t[0])[:3]]
        raise CITestError(
            f"the dg-lrt test embeds each discrete column as one indicator per declared "
            f"category but one; with columns {widest} the embedding is wider than "
            f"{MAX_EMBEDDED} columns (rule: at most {MAX_EMBEDDED}; drop identifier "
            "columns or merge categories)")


def _column_plan(dataset: Dataset) -> tuple[list[tuple[int, str, Any]], int]:
    """Per column ``(offset, kind, detail)``: ``("cont", (mean, sd))`` or
    ``("disc", kept_codes)``; and the total embedded width."""
    _check_width(dataset)
    plan: list[tuple[int, str, Any]] = []
    width = 0
    for j, col in enumerate(dataset.schema):
        v = dataset.column(j)
        if col.is_discrete:
            card = int(col.cardinality)  # type: ignore[arg-type]
            counts = np.bincount(np.asarray(v, dtype=np.intp), minlength=card)
            present = np.flatnonzero(counts)
            kept = present[1:]  # the first category present is the reference
            plan.append((width, "disc", kept))
            width += int(kept.size)
        else:
            x = np.asarray(v, dtype=np.float64)
            if not np.all(np.isfinite(x)):
                raise CITestError(f"column {col.name!r}: contains NaN or infinite values "
                                  "(rule: continuous values must be finite)")
            mean = float(np.mean(x))
            sd = float(np.std(x))
            if sd > 0.0 and math.isfinite(sd):
                plan.append((width, "cont", (mean, sd)))
                width += 1
            else:
                plan.append((width, "cont", None))
    return plan, width


def _embed_rows(dataset: Dataset, plan: list[tuple[int, str, Any]], width: int,
                lo: int, hi: int) -> Floats:
    out = np.zeros((hi - lo, width), dtype=np.float64)
    for j, (offset, kind, detail) in enumerate(plan):
        if kind == "cont":
            if detail is not None:
                mean, sd = detail
                out[:, offset] = (np.asarray(dataset.column(j)[lo:hi], dtype=np.float64)
                                  - mean) / sd
        elif detail.size:
            codes = np.asarray(dataset.column(j)[lo:hi], dtype=np.intp)
            # one comparison of the chunk against the kept codes: (rows, kept) indicators
            out[:, offset:offset + detail.size] = codes[:, None] == detail[None, :]
    return out


def embedded_covariance(dataset: Dataset, *, chunk: int = CHUNK) -> EmbeddedCovariance:
    """The covariance of ``dataset``'s degenerate-Gaussian embedding (one pass).

    Sums and cross-products are accumulated over row chunks; the indicator columns are
    centred afterwards (``S/n - m m^T``; indicators are in ``[0, 1]`` and the continuous
    columns are already standardised, so there is no catastrophic cancellation).
    """
    if not isinstance(dataset, Dataset):
        raise CITestError(f"the dg-lrt test needs a dpcg Dataset, got {type(dataset).__name__}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise CITestError(f"chunk must be a positive int, got {chunk!r}")
    plan, width = _column_plan(dataset)
    n = dataset.n
    chunk = max(1, min(chunk, MAX_CHUNK_FLOATS // max(width, 1)))
    total = np.zeros(width, dtype=np.float64)
    cross = np.zeros((width, width), dtype=np.float64)
    for lo in range(0, n, chunk):
        block = _embed_rows(dataset, plan, width, lo, min(n, lo + chunk))
        total += block.sum(axis=0)
        cross += block.T @ block
    mean = total / n
    cov = cross / n - np.outer(mean, mean)
    cov = 0.5 * (cov + cov.T)
    blocks: list[Index] = []
    for offset, kind, detail in plan:
        size = (0 if detail is None else 1) if kind == "cont" else int(detail.size)
        blocks.append(np.arange(offset, offset + size, dtype=np.intp))
    return EmbeddedCovariance(cov, tuple(blocks), n)


def _inv_sqrt(m: Floats) -> tuple[Floats, int]:
    """A whitening map ``W`` (``W^T m W = I`` on the range of ``m``) and the rank of ``m``."""
    if m.shape[0] == 0:
        return np.zeros((0, 0)), 0
    w, v = np.linalg.eigh(m)
    top = float(w[-1]) if w.size else 0.0
    if top <= 0.0:
        return np.zeros((m.shape[0], 0)), 0
    keep = w > RANK_TOL * top
    out: Floats = v[:, keep] / np.sqrt(w[keep])[None, :]
    return out, int(np.count_nonzero(keep))


def _pinv_psd(m: Floats) -> tuple[Floats, int]:
    """Pseudo-inverse of a symmetric PSD matrix and its rank (eigenvalue cut-off)."""
    if m.shape[0] == 0:
        return np.zeros((0, 0)), 0
    w, v = np.linalg.eigh(m)
    top = float(w[-1])
    if top <= 0.0:
        return np.zeros_like(m), 0
    keep = w > RANK_TOL * top
    vk = v[:, keep]
    out: Floats = (vk / w[keep][None, :]) @ vk.T
    return out, int(np.count_nonzero(keep))


@dataclass(frozen=True)
class WilksResult:
    """One DG-LRT: Bartlett's statistic, its degrees of freedom and p-value, and the
    squared canonical correlations it came from."""

    statistic: float
    df: int
    pvalue: float
    rho2: Floats


def wilks_test(cov: Floats, ix: Index, iy: Index, iz: Index, n: int) -> WilksResult:
    """Wilks' test of zero partial canonical correlation between the ``ix`` and ``iy``
    blocks of the covariance ``cov`` given the ``iz`` block (``n`` rows; see the
    module docstring). Refuses (``CITestError``) when ``n`` is too small for Bartlett's
    factor to be positive."""
    if ix.size == 0 or iy.size == 0:
        return WilksResult(0.0, 0, 1.0, np.zeros(0))
    a = np.concatenate([ix, iy])
    c_aa = cov[np.ix_(a, a)]
    if iz.size:
        pz, dz = _pinv_psd(cov[np.ix_(iz, iz)])
        c_az = cov[np.ix_(a, iz)]
        c_aa = c_aa - c_az @ pz @ c_az.T
    else:
        dz = 0
    kx = ix.size
    wx, dx = _inv_sqrt(c_aa[:kx, :kx])
    wy, dy = _inv_sqrt(c_aa[kx:, kx:])
    df = dx * dy
    if df == 0:
        return WilksResult(0.0, 0, 1.0, np.zeros(0))
    factor = n - 1.0 - dz - (dx + dy + 1) / 2.0
    if factor <= 0.0:
        raise CITestError(f"n={n} rows is too few for a conditioning set of embedded "
                          f"dimension {dz} (rule: n > 1 + d_S + (d_X + d_Y + 1) / 2)")
    m = wx.T @ c_aa[:kx, kx:] @ wy
    rho = np.linalg.svd(m, compute_uv=False)
    rho2 = np.clip(rho * rho, 0.0, 1.0 - 1e-15)
    stat = float(-factor * np.sum(np.log1p(-rho2)))
    p = float(chdtrc(df, stat))
    return WilksResult(stat, df, p, rho2)


#: Largest number of queries factorised in one batched call (bounds the memory to
#: ``BATCH x d^2`` floats for the largest padded size ``d`` of the round).
BATCH = 1024


def _wilks_fast(cov: Floats, idx: NDArray[np.intp], kz: int, kx: int,
                dims: NDArray[np.intp], n: int) -> tuple[Floats, Floats, NDArray[np.bool_]]:
    """Bartlett's statistic for a batch of queries by one batched Cholesky factorisation
    of each query's ``[S, X, Y]`` covariance.

    ``cov`` is the embedded covariance extended by an identity block (padding columns:
    unit variance, uncorrelated with everything); ``idx`` ``(B, kz + kx + ky)`` indexes
    it, the ``S`` block first (``kz`` wide), then ``X`` (``kx``), then ``Y``, each
    padded with distinct padding columns to the round's widest block. A padding column
    contributes a unit pivot and zeros elsewhere, so it changes no log-determinant below
    (up to the rounding of a differently sized factorisation). ``dims`` ``(B, 3)``: the
    real ``(d_X, d_Y, d_S)`` of each query.

    With ``L L^T`` that covariance, ``B = L[kz:, kz:]`` factors the partial covariance of
    ``(X, Y)`` given ``S``, so ``-log Lambda = logdet Sigma_{X|S} + logdet Sigma_{Y|S} -
    logdet Sigma_{XY|S}`` from the diagonals of ``B``'s leading block, of ``B`` itself,
    and of a Cholesky factor of ``B_Y B_Y^T``. Returns the statistics, the p-values and a
    mask of the queries whose blocks are not of full rank (a pivot below
    :data:`RANK_TOL`); those are recomputed by :func:`wilks_test`.
    """
    count = idx.shape[0]
    m = cov[idx[:, :, None], idx[:, None, :]]
    scale = np.sqrt(np.maximum(np.diagonal(m, axis1=1, axis2=2), 1e-300))
    m = m / (scale[:, :, None] * scale[:, None, :])  # correlation scale: pivots in [0, 1]
    bad = np.zeros(count, dtype=bool)
    try:
        chol = np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        bad[:] = True
        return np.zeros(count), np.ones(count), bad
    diag = np.diagonal(chol, axis1=1, axis2=2)
    bad |= ~np.all(diag * diag > RANK_TOL, axis=1)
    logd = np.log(np.maximum(diag, 1e-300))
    logdet_xy = 2.0 * np.sum(logd[:, kz:], axis=1)
    logdet_x = 2.0 * np.sum(logd[:, kz:kz + kx], axis=1)
    by = chol[:, kz + kx:, kz:]
    try:
        cy = np.linalg.cholesky(by @ np.swapaxes(by, 1, 2))
    except np.linalg.LinAlgError:
        bad[:] = True
        return np.zeros(count), np.ones(count), bad
    logdet_y = 2.0 * np.sum(np.log(np.maximum(np.diagonal(cy, axis1=1, axis2=2), 1e-300)),
                            axis=1)
    neg_log_lambda = np.maximum(logdet_x + logdet_y - logdet_xy, 0.0)
    dx, dy, dz = dims[:, 0], dims[:, 1], dims[:, 2]
    factor = n - 1.0 - dz - (dx + dy + 1) / 2.0
    stat = factor * neg_log_lambda
    p = np.asarray(chdtrc(dx * dy, stat), dtype=np.float64)
    return stat, p, bad


class DegenerateGaussianTest(_CachedTest):
    """The degenerate-Gaussian likelihood-ratio CI test (see the module docstring).

    Built from a :class:`~dpcg.data.Dataset` of any kinds of columns; one pass over the
    rows at construction, then each query reads only the embedded covariance. Answers
    one query (:meth:`test`) or a round of them (:meth:`test_many`, which the PC engine
    uses: the queries of a round share one batched factorisation, their blocks padded
    with independent unit columns, which change no determinant; the statistics equal
    the one-by-one ones up to rounding, relative error about ``1e-10``, and a run is
    deterministic).
    """

    def __init__(self, data: Dataset, alpha: float = 0.05, *, chunk: int = CHUNK) -> None:
        super().__init__()
        self.alpha = _check_alpha(alpha)
        self.embedding = embedded_covariance(data, chunk=chunk)
        self.p = data.p
        self.n = data.n
        self._ext: Floats | None = None

    def _blocks(self, S: tuple[int, ...]) -> Index:
        blocks = self.embedding.blocks
        return (np.concatenate([blocks[s] for s in S]) if S
                else np.zeros(0, dtype=np.intp))

    def wilks(self, x: int, y: int, S: tuple[int, ...] = ()) -> WilksResult:
        """The full result of one query by the eigenvalue route (:func:`wilks_test`)."""
        xi, yi, Si = validate_query(x, y, S, self.p)
        blocks = self.embedding.blocks
        return wilks_test(self.embedding.cov, blocks[xi], blocks[yi], self._blocks(Si),
                          self.n)

    def _compute(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        return self._batch([(x, y, S)])[0]

    def _batch(self, queries: Sequence[Key]) -> list[CIResult]:
        """Answer normalised queries: the blocks of each chunk of :data:`BATCH` queries
        are padded to the chunk's widest and factorised in one batched call;
        rank-deficient ones fall back to the eigenvalue route."""
        blocks = self.embedding.blocks
        cov = self.embedding.cov
        out: list[CIResult | None] = [None] * len(queries)
        todo: list[tuple[int, Index, Index, Index]] = []
        for i, (x, y, S) in enumerate(queries):
            ix, iy, iz = blocks[x], blocks[y], self._blocks(S)
            dx, dy, dz = ix.size, iy.size, iz.size
            if dx == 0 or dy == 0:
                out[i] = CIResult(True, 0.0, 1.0)
            elif self.n - 1.0 - dz - (dx + dy + 1) / 2.0 <= 0.0:
                raise CITestError(
                    f"n={self.n} rows is too few for a conditioning set of embedded "
                    f"dimension {dz} (rule: n > 1 + d_S + (d_X + d_Y + 1) / 2)")
            else:
                todo.append((i, ix, iy, iz))
        for start in range(0, len(todo), BATCH):
            chunk = todo[start:start + BATCH]
            kx = max(m[1].size for m in chunk)
            ky = max(m[2].size for m in chunk)
            kz = max(m[3].size for m in chunk)
            width = kz + kx + ky
            base = cov.shape[0]
            ext = self._extended(width)
            # every padding slot gets its own identity column: base + slot position
            idx = np.empty((len(chunk), width), dtype=np.intp)
            idx[:] = base + np.arange(width, dtype=np.intp)
            dims = np.empty((len(chunk), 3), dtype=np.intp)
            for k, (_, ix, iy, iz) in enumerate(chunk):
                idx[k, :iz.size] = iz
                idx[k, kz:kz + ix.size] = ix
                idx[k, kz + kx:kz + kx + iy.size] = iy
                dims[k] = (ix.size, iy.size, iz.size)
            stat, p, bad = _wilks_fast(ext, idx, kz, kx, dims, self.n)
            for k, (i, ix, iy, iz) in enumerate(chunk):
                if bad[k]:
                    r = wilks_test(cov, ix, iy, iz, self.n)
                    out[i] = CIResult(r.pvalue > self.alpha, r.statistic, r.pvalue)
                else:
                    pk = float(p[k])
                    out[i] = CIResult(pk > self.alpha, float(stat[k]), pk)
        return [r for r in out if r is not None]

    def _extended(self, width: int) -> Floats:
        """The covariance bordered by ``width`` padding columns (identity block)."""
        ext = self._ext
        if ext is None or ext.shape[0] < self.embedding.cov.shape[0] + width:
            d = self.embedding.cov.shape[0]
            grow = max(width, 2 * (0 if ext is None else ext.shape[0] - d), 8)
            ext = np.zeros((d + grow, d + grow))
            ext[:d, :d] = self.embedding.cov
            ext[d:, d:] = np.eye(grow)
            self._ext = ext
        return ext

    def test_many(self, queries: Sequence[tuple[int, int, tuple[int, ...]]]
                  ) -> list[CIResult]:
        """Answer a round of queries (cached ones from the cache)."""
        keys: list[Key] = []
        for x, y, S in queries:
            xi, yi, Si = validate_query(x, y, S, self.p)
            a, b = (xi, yi) if xi < yi else (yi, xi)
            keys.append((a, b, tuple(sorted(Si))))
        todo = [k for k in dict.fromkeys(keys) if k not in self._cache]
        for k, r in zip(todo, self._batch(todo), strict=True):
            self._cache[k] = r
        return [self._cache[k] for k in keys]


# -------------------------------------------------------------- registry hook


def _build(ctx: TestContext[NoOptions]) -> CITest:
    return DegenerateGaussianTest(ctx.dataset, alpha=ctx.alpha)


register_test(TestSpec(
    name="dg-lrt", options=NoOptions, build=_build, data="any",
    description="degenerate-Gaussian likelihood-ratio test for mixed discrete/continuous "
                "columns (one-hot + Gaussian embedding, Wilks/Bartlett; non-private)"))
