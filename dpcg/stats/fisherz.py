"""Fisher-z test of zero partial correlation for continuous data.

``r`` is the sample partial correlation of x and y given S, read off the inverse of
the sample correlation matrix of ``[x, y, S]``; the statistic is
``z = 0.5 ln((1 + r)/(1 - r)) sqrt(n - |S| - 3)`` and the two-sided p-value
``2 (1 - Phi(|z|))``. Non-private use only (no sensitivity is registered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcg.errors import StatisticInputError

#: Partial correlations are clipped to ``[-R_MAX, R_MAX]`` so that ``z`` stays finite.
R_MAX = 1.0 - 1e-12


@dataclass(frozen=True)
class FisherZResult:
    partial_correlation: float
    z: float
    pvalue: float


def partial_correlation(values: NDArray[np.floating], x: int, y: int, S: Sequence[int]) -> float:
    """Sample partial correlation of rows ``x`` and ``y`` of a ``(p, n)`` array given ``S``."""
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.dtype.kind != "f":
        raise StatisticInputError(
            f"values must be a (p, n) float array, got shape {arr.shape} dtype {arr.dtype}"
        )
    idx = [x, y, *S]
    sub = arr[idx]
    if not np.all(np.isfinite(sub)):
        raise StatisticInputError(f"columns {idx} contain NaN or infinite values")
    n = sub.shape[1]
    if n < len(idx) + 2:
        raise StatisticInputError(f"n={n} rows is too few for |S|={len(S)} (need >= {len(S) + 4})")
    constant = np.ptp(sub, axis=1) == 0
    if constant.any():
        col = idx[int(np.argmax(constant))]
        raise StatisticInputError(f"column {col} is constant; correlation is undefined")
    C = np.corrcoef(sub)
    try:
        P = np.linalg.inv(C)
    except np.linalg.LinAlgError:
        P = np.linalg.pinv(C)
    r = -P[0, 1] / math.sqrt(P[0, 0] * P[1, 1])
    return float(min(max(r, -R_MAX), R_MAX))


def fisher_z(values: NDArray[np.floating], x: int, y: int, S: Sequence[int] = ()) -> FisherZResult:
    """Fisher-z statistic and two-sided p-value for ``x _||_ y | S``."""
    r = partial_correlation(values, x, y, S)
    n = int(np.asarray(values).shape[1])
    z = 0.5 * math.log1p(2 * r / (1 - r)) * math.sqrt(n - len(S) - 3)
    p = math.erfc(abs(z) / math.sqrt(2.0))  # = 2 (1 - Phi(|z|))
    return FisherZResult(r, z, p)
