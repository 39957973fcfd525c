"""Private conditional Kendall test with a discretised continuous Z (the baseline of
Kalemaj et al., Fig. 1, after Wang et al.'s Priv-PC Kendall test).

Priv-PC's conditional Kendall test needs a discrete conditioning set. For continuous Z,
Z is discretised into strata and the floored conditional Kendall statistic

    z = U / sqrt(9n/4),     U = sum_b 9 S_b / (2 n_b + 5),

(``S_b`` the Kendall concordance sum of x and y inside stratum ``b``, ``n_b`` its size)
is released with the Laplace mechanism at the proven replace-one sensitivity
``9 / sqrt(n)`` (``dpcg.stats.registry`` entry ``conditional-kendall-z``, note
``docs/privacy/statistics-conditional-kendall-z.md``). The test rejects when the noisy
``|z|`` exceeds ``z_{1-alpha/2}`` (noise on the z scale, PRIVACY.md section 7).

Two discretisations:

* ``"grid"`` (**private**): every Z coordinate is cut into ``bins`` equal cells of its
  public bounds. A row's stratum depends on that row only, which is what the
  sensitivity proof assumes, so the release is ``eps``-DP.
* ``"kmeans"`` (**NOT private; benchmark reproduction only**): Lloyd's k-means on the
  rescaled Z of the *private* data, as in Kalemaj et al.'s baseline. The cluster
  assignment of every row depends on every other row, so one replaced row can move many
  rows between strata and the ``9/sqrt(n)`` bound does not hold: the ledger entry's
  eps is then **not** a valid guarantee. It must be enabled with
  ``allow_data_dependent_strata=True``, and its purpose string in the ledger says so.
  (It would be private if the centres came from public data: pass ``centres``.)

Either way the test has no type-I error guarantee for continuous Z: discretising Z
leaves residual dependence through Z inside every stratum, so it rejects true
conditional independences once the strata are coarse relative to the signal (the
failure Kalemaj et al. report and ``docs/benchmarks/continuous.md`` measures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr, ndtri

from dpcg.citests.base import CIResult, validate_query
from dpcg.citests.gcm import ContinuousData, check_alpha, check_epsilon
from dpcg.errors import CITestError

if TYPE_CHECKING:
    from accounting.session import Session

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DISCRETISATIONS = ("grid", "kmeans")


def concordance_by_stratum(
    x: FloatArray, y: FloatArray, strata: IntArray, k: int, chunk: int = 512
) -> IntArray:
    """``S_b = sum_{i<j, same stratum b} sign(x_i - x_j) sign(y_i - y_j)`` for every
    stratum, exact, vectorised over row chunks (``O(n^2)`` work, ``O(chunk n)`` memory)."""
    n = x.shape[0]
    out = np.zeros(k, dtype=np.int64)
    idx = np.arange(n)
    for start in range(0, n, chunk):
        sl = slice(start, min(n, start + chunk))
        sx = np.sign(x[sl, None] - x[None, :]).astype(np.int8)
        sy = np.sign(y[sl, None] - y[None, :]).astype(np.int8)
        keep = (strata[sl, None] == strata[None, :]) & (idx[sl, None] < idx[None, :])
        per_row = np.where(keep, sx * sy, 0).sum(axis=1, dtype=np.int64)
        out += np.bincount(strata[sl], weights=per_row, minlength=k).astype(np.int64)
    return out


def floored_kendall_z(x: FloatArray, y: FloatArray, strata: IntArray, k: int) -> float:
    """``U / sqrt(9n/4)`` over the strata (all strata kept, including constant ones)."""
    n = x.shape[0]
    S = concordance_by_stratum(x, y, strata, k)
    sizes = np.bincount(strata, minlength=k).astype(np.float64)
    U = float(np.sum(9.0 * S / (2.0 * sizes + 5.0)))
    return U / math.sqrt(9.0 * n / 4.0)


def kendall_sensitivity(n: int) -> float:
    """Replace-one sensitivity ``(27/2)/sqrt(9n/4) = 9/sqrt(n)`` of :func:`floored_kendall_z`
    (from the statistics registry when available)."""
    try:
        from dpcg.stats.registry import conditional_kendall_sensitivity
    except ImportError:  # pragma: no cover - the registry ships with dpcg
        return 9.0 / math.sqrt(n)
    return float(conditional_kendall_sensitivity(n, 9.0 * n / 4.0))


def grid_strata(zs: FloatArray, bins: int) -> tuple[IntArray, int]:
    """Strata of a public grid: ``zs`` ``(n, d)`` already rescaled to ``[-1, 1]``."""
    n, d = zs.shape
    if d == 0:
        return np.zeros(n, dtype=np.int64), 1
    cells = np.minimum(((zs + 1.0) / 2.0 * bins).astype(np.int64), bins - 1)
    cells = np.maximum(cells, 0)
    mult = bins ** np.arange(d, dtype=np.int64)
    return cells @ mult, int(bins**d)


def kmeans_strata(zs: FloatArray, k: int, iterations: int = 25) -> tuple[IntArray, int]:
    """Deterministic Lloyd's k-means (farthest-point initialisation from the point
    nearest the mean). Data-dependent: NOT private (see the module docstring)."""
    n, d = zs.shape
    if d == 0 or n <= k:
        return np.zeros(n, dtype=np.int64), 1
    first = int(np.argmin(((zs - zs.mean(axis=0)) ** 2).sum(axis=1)))
    centres = [zs[first]]
    dist = ((zs - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        nxt = int(np.argmax(dist))
        centres.append(zs[nxt])
        dist = np.minimum(dist, ((zs - zs[nxt]) ** 2).sum(axis=1))
    C = np.stack(centres)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        d2 = ((zs[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        new = np.argmin(d2, axis=1).astype(np.int64)
        counts = np.bincount(new, minlength=k).astype(np.float64)
        sums = np.stack([np.bincount(new, weights=zs[:, j], minlength=k) for j in range(d)], 1)
        nonempty = counts > 0
        C[nonempty] = sums[nonempty] / counts[nonempty, None]
        if np.array_equal(new, labels):
            break
        labels = new
    return labels, k


def centre_strata(zs: FloatArray, centres: FloatArray) -> tuple[IntArray, int]:
    """Nearest public centre (rows of ``centres``, on the rescaled scale) for each row."""
    d2 = ((zs[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d2, axis=1).astype(np.int64), int(centres.shape[0])


class PrivateKendallDiscretisedZ:
    """Private conditional Kendall test with Z discretised (see the module docstring).

    ``epsilon`` per test; decision: noisy ``|z| <= z_{1-alpha/2}`` means independent.
    The p-value ``2 (1 - Phi(|z_noisy|))`` is reported for comparison.
    """

    def __init__(
        self,
        values: object,
        bounds: object,
        session: Session,
        epsilon: float,
        *,
        discretisation: str = "grid",
        bins: int = 3,
        clusters: int = 5,
        centres: NDArray[np.floating] | None = None,
        allow_data_dependent_strata: bool = False,
        alpha: float = 0.05,
        names: Sequence[str] | None = None,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.epsilon = check_epsilon(epsilon)
        if discretisation not in DISCRETISATIONS:
            raise CITestError(f"discretisation={discretisation!r}: choose one of {DISCRETISATIONS}")
        if discretisation == "kmeans" and centres is None and not allow_data_dependent_strata:
            raise CITestError(
                "discretisation='kmeans' clusters the private Z, which is NOT differentially "
                "private; pass public centres=..., or allow_data_dependent_strata=True for a "
                "benchmark reproduction whose ledger entry is not a valid guarantee"
            )
        for nm, v in (("bins", bins), ("clusters", clusters)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise CITestError(f"{nm} must be a positive int, got {v!r}")
        self.discretisation = discretisation
        self.bins = bins
        self.clusters = clusters
        self.centres = None if centres is None else np.asarray(centres, dtype=np.float64)
        self.data = ContinuousData.build(values, bounds, names)
        self.session = session
        self.threshold = float(ndtri(1.0 - self.alpha / 2.0))

    @property
    def private(self) -> bool:
        return self.discretisation == "grid" or self.centres is not None

    def strata(self, S: tuple[int, ...]) -> tuple[IntArray, int]:
        zs = self.data.scaled[list(S)].T if S else np.zeros((self.data.n, 0))
        if not S:
            return np.zeros(self.data.n, dtype=np.int64), 1
        if self.discretisation == "grid":
            return grid_strata(zs, self.bins)
        if self.centres is not None:
            C = self.centres
            if C.ndim != 2 or C.shape[1] != len(S):
                raise CITestError(
                    f"centres must have shape (k, {len(S)}) for a conditioning set of size "
                    f"{len(S)}"
                )
            return centre_strata(zs, C)
        return kmeans_strata(zs, self.clusters)

    def statistic(self, x: int, y: int, S: tuple[int, ...]) -> float:
        labels, k = self.strata(S)
        return floored_kendall_z(self.data.values[x], self.data.values[y], labels, k)

    def mechanism(self) -> Any:
        from accounting.mechanisms import Laplace

        return Laplace(sensitivity=kendall_sensitivity(self.data.n), epsilon=self.epsilon)

    def test(self, x: int, y: int, S: tuple[int, ...]) -> CIResult:
        xi, yi, Si = validate_query(x, y, S, self.data.p)
        mech = self.mechanism()
        nm = self.data.names
        tag = "" if self.private else " [NOT PRIVATE: strata from k-means on private Z]"
        purpose = (
            f"Kendall z ({self.discretisation}) {nm[xi]} _||_ {nm[yi]} | "
            f"{{{', '.join(nm[s] for s in Si)}}}{tag}"
        )
        noisy = float(self.session.release(mech, lambda: self.statistic(xi, yi, Si),
                                           purpose=purpose))
        p = float(2.0 * (1.0 - ndtr(abs(noisy))))
        return CIResult(abs(noisy) <= self.threshold, noisy, p)
